export { ConfigError, loadConfig, resolveConfig, type ConfigInputs, type EffectiveSetting, type SettingSource, type SettingSources } from './load-config.ts';
export { COMMON_SOURCES, CommonConfig } from './common.ts';
export { listenSetting, listSetting, MIN_TOKEN_CHARS, portSetting, tokenSetting } from './setting-types.ts';
export { parseClusterUrl } from './redis-cluster-url.ts';
