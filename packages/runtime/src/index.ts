export * from './infrastructure.ts';
export * from './service.ts';
export * from './until-signal.ts';
export * from './data-dir.ts';
export * from './serial.ts';
export * from './readiness.ts';
