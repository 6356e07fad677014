export { ConfigError, loadConfig, type SettingSources } from './load-config.ts';
export { COMMON_SOURCES, CommonConfig } from './common.ts';
