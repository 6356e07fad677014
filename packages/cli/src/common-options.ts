import type { CommonConfig } from '@gpualert/config';
import { loadSettings } from './settings/command-settings.ts';
import { COMMON_SETTINGS } from './settings/common-settings.ts';
import type { Command } from 'commander';

/** The flags every service command takes; they override the environment and the config file. */
export function withCommonOptions(command: Command): Command {
  return command
    .option('--config <file>', 'a YAML or JSON config file (also GPUALERT_CONFIG)')
    .option('--kafka-brokers <list>', 'Kafka brokers host:port,… (also KAFKA_BROKERS); none: the in-process bus')
    .option('--redis-url <url>', 'Redis URL (also REDIS_URL); none: the in-memory store')
    .option('--topic-prefix <prefix>', 'prefix for every topic name (also GPUALERT_TOPIC_PREFIX)')
    .option('--key-prefix <prefix>', 'prefix for every state key (also GPUALERT_KEY_PREFIX)')
    .option('--partitions <n>', 'partitions of each topic gpualert creates (also GPUALERT_PARTITIONS; default 6)')
    .option('--replication-factor <n>', 'replicas of each topic gpualert creates (also GPUALERT_REPLICATION_FACTOR; default min(3, brokers))')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (also GPUALERT_LOG_LEVEL)')
    .option('--log-format <format>', 'json|pretty (also GPUALERT_LOG_FORMAT; default: pretty on a terminal, else json)');
}

/** The common settings alone, for a command that has none of its own (settings/common-settings.ts). */
export function commonConfig(options: Record<string, unknown>): CommonConfig {
  return loadSettings(COMMON_SETTINGS, options);
}
