import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COMMON_SOURCES, CommonConfig } from './common.ts';
import { ConfigError, loadConfig } from './load-config.ts';

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gpualert-config-')), 'gpualert.yaml');
  writeFileSync(path, text);
  return path;
}

describe('loadConfig', () => {
  it('takes flags over the environment over the file over defaults', () => {
    const path = file('partitions: 3\ntopicPrefix: fromfile\nkeyPrefix: "file:"\n');
    const config = loadConfig(CommonConfig, COMMON_SOURCES, {
      flags: { partitions: '12' },
      env: { GPUALERT_PARTITIONS: '8', GPUALERT_TOPIC_PREFIX: 'fromenv' },
      file: path,
    });
    expect(config.partitions).toBe(12);
    expect(config.topicPrefix).toBe('fromenv');
    expect(config.keyPrefix).toBe('file:');
    expect(config.logLevel).toBe('info');
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('splits a broker list and leaves the embedded mode when nothing is set', () => {
    expect(loadConfig(CommonConfig, COMMON_SOURCES, { env: { KAFKA_BROKERS: 'a:9092, b:9093' } }).kafkaBrokers).toEqual(['a:9092', 'b:9093']);
    const embedded = loadConfig(CommonConfig, COMMON_SOURCES, { env: {} });
    expect(embedded.kafkaBrokers).toBeUndefined();
    expect(embedded.redisUrl).toBeUndefined();
  });

  it('names the variable and where it came from in one line', () => {
    const attempt = () => loadConfig(CommonConfig, COMMON_SOURCES, { env: { REDIS_URL: 'localhost:6379' } });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow('invalid config: REDIS_URL (environment): expected a redis://, rediss:// or redis+sentinel:// URL (got a value of 14 characters, not shown)');
    expect(() => loadConfig(CommonConfig, COMMON_SOURCES, { flags: { kafkaBrokers: 'nohostport' } })).toThrow(
      /^invalid config: --kafka-brokers \(flag\): expected host:port/,
    );
  });

  it('never echoes a password from REDIS_URL or KAFKA_BROKERS in its error', () => {
    const attempt = (env: Record<string, string>) => {
      try {
        loadConfig(CommonConfig, COMMON_SOURCES, { env });
      } catch (error) {
        return (error as Error).message;
      }
      return 'accepted';
    };
    const redis = attempt({ REDIS_URL: 'default:REDISPASSWORD@redis:6379' });
    expect(redis).toMatch(/^invalid config: REDIS_URL \(environment\): expected a redis:\/\/, rediss:\/\/ or redis\+sentinel:\/\/ URL/);
    expect(redis).not.toContain('REDISPASSWORD');
    const kafka = attempt({ KAFKA_BROKERS: 'sasl://user:KAFKAPASSWORD@broker:9092' });
    expect(kafka).toMatch(/^invalid config: KAFKA_BROKERS \(environment\): expected host:port/);
    expect(kafka).not.toContain('KAFKAPASSWORD');
    // malformed so that no redaction could recognise the password in it
    for (const [name, value] of [['REDIS_URL', 'redis//:s3cretPW@127.0.0.1'], ['REDIS_URL', 's3cretPW'], ['KAFKA_BROKERS', 's3cretPW']]) {
      const message = attempt({ [name!]: value! });
      expect(message).toMatch(new RegExp(`^invalid config: ${name} \\(environment\\): .* \\(got a value of \\d+ characters, not shown\\)$`));
      expect(message).not.toContain('s3cretPW');
    }
  });

  it('names the item of a list that is wrong when there are several', () => {
    expect(() => loadConfig(CommonConfig, COMMON_SOURCES, { env: { KAFKA_BROKERS: 'a:9092,b,c:9094' } })).toThrow(/^invalid config: KAFKA_BROKERS \(environment\): item 2: expected host:port/);
  });

  it('says which file is unreadable or malformed', () => {
    expect(() => loadConfig(CommonConfig, COMMON_SOURCES, { file: '/nonexistent/gpualert.yaml' })).toThrow(
      'invalid config: cannot read config file /nonexistent/gpualert.yaml: ENOENT',
    );
    expect(() => loadConfig(CommonConfig, COMMON_SOURCES, { file: file('- a\n- b\n') })).toThrow(/must hold a mapping/);
  });
});
