export * from './load-yaml.ts';
export * from './xid-catalog.ts';
export * from './bundled-path.ts';
