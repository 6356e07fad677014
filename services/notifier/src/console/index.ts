export * from './latest-samples.ts';
export { alertsFleetSource } from './alerts-fleet-source.ts';
export { consoleRoute, gridOf, serveConsole, SNAPSHOT_REUSE_MS, type ConsoleDeps } from './console-http.ts';
