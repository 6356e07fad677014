export * from './rule-set.ts';
export * from './load-rules.ts';
export * from './engine-state.ts';
export * from './conditions.ts';
export * from './engine.ts';
export * from './replay.ts';
export * from './synthetic-fleet.ts';
