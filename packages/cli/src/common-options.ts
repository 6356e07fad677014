import { COMMON_SOURCES, CommonConfig, loadConfig } from '@gpualert/config';
import type { Command } from 'commander';

/** The flags every service command takes; they override the environment and the config file. */
export function withCommonOptions(command: Command): Command {
  return command
    .option('--config <file>', 'a YAML or JSON config file (also GPUALERT_CONFIG)')
    .option('--kafka-brokers <list>', 'Kafka brokers host:port,… (also KAFKA_BROKERS); none: the in-process bus')
    .option('--redis-url <url>', 'Redis URL (also REDIS_URL); none: the in-memory store')
    .option('--topic-prefix <prefix>', 'prefix for every topic name (also GPUALERT_TOPIC_PREFIX)')
    .option('--key-prefix <prefix>', 'prefix for every state key (also GPUALERT_KEY_PREFIX)')
    .option('--log-level <level>', 'fatal|error|warn|info|debug|trace|silent (also GPUALERT_LOG_LEVEL)')
    .option('--log-format <format>', 'json|pretty (also GPUALERT_LOG_FORMAT; default: pretty on a terminal, else json)');
}

export function commonConfig(options: Record<string, unknown>): CommonConfig {
  const file = (options.config as string | undefined) ?? process.env.GPUALERT_CONFIG;
  return loadConfig(CommonConfig, COMMON_SOURCES, { flags: options, env: process.env, file });
}
