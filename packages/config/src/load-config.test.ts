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
    expect(attempt).toThrow(
      'invalid config: REDIS_URL (environment): expected a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL (got a value of 14 characters, not shown)',
    );
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
    expect(redis).toMatch(/^invalid config: REDIS_URL \(environment\): expected a redis:\/\/, rediss:\/\/, redis\+sentinel:\/\/ or redis\+cluster:\/\/ URL/);
    expect(redis).not.toContain('REDISPASSWORD');
    const kafka = attempt({ KAFKA_BROKERS: 'sasl://user:KAFKAPASSWORD@broker:9092' });
    expect(kafka).toMatch(/^invalid config: KAFKA_BROKERS \(environment\): expected host:port/);
    expect(kafka).not.toContain('KAFKAPASSWORD');
    // malformed so that no redaction could recognise the password in it
    for (const [name, value] of [
      ['REDIS_URL', 'redis//:s3cretPW@127.0.0.1'],
      ['REDIS_URL', 's3cretPW'],
      ['KAFKA_BROKERS', 's3cretPW'],
    ]) {
      const message = attempt({ [name!]: value! });
      expect(message).toMatch(new RegExp(`^invalid config: ${name} \\(environment\\): .* \\(got a value of \\d+ characters, not shown\\)$`));
      expect(message).not.toContain('s3cretPW');
    }
  });

  it('names the item of a list that is wrong when there are several', () => {
    expect(() => loadConfig(CommonConfig, COMMON_SOURCES, { env: { KAFKA_BROKERS: 'a:9092,b,c:9094' } })).toThrow(
      /^invalid config: KAFKA_BROKERS \(environment\): item 2: expected host:port/,
    );
  });

  it('refuses a REDIS_URL the store could not open, before anything starts, without echoing it', () => {
    const problem = (url: string) => {
      try {
        loadConfig(CommonConfig, COMMON_SOURCES, { env: { REDIS_URL: url } });
        return 'accepted';
      } catch (error) {
        expect((error as Error).message).not.toContain('s3cret');
        return (error as Error).message
          .replace(/^invalid config: REDIS_URL \(environment\): /, '')
          .replace(/ \(got a value of \d+ characters, not shown\)$/, '');
      }
    };
    expect(problem('redis://:s3cret@host:notaport')).toBe('expected redis://[:password@]host[:port][/db] or rediss://…');
    expect(problem('redis://:s3cret@host:6379/abc')).toBe('expected a database number after the host (/0 to /99), or nothing');
    expect(problem('redis+sentinel://:s3cret@h:26379/mymaster/abc')).toBe('expected redis+sentinel://[:password@]host:port[,host:port…]/master-name[/db]');
    expect(problem('redis+sentinel://[::1]:26379/mymaster')).toMatch(/an IPv6 address is not supported/);
    expect(problem('redis+cluster://:s3cret@c1:7000,c2:notaport')).toBe('seed 2: expected a port from 1 to 65535');
    expect(problem('redis+cluster://:s3cret@c1:7000/2')).toBe('expected nothing after the hosts: Redis Cluster has no database numbers or names');
    expect(problem(`redis+cluster://:s3cret@${Array.from({ length: 17 }, (_, i) => `c${i}:7000`).join(',')}`)).toBe('expected at most 16 seed nodes, got 17');
    for (const good of [
      'redis://localhost',
      'redis://:s3cret@redis:6379/2',
      'rediss://user:s3cret@redis.example:6380',
      'redis+sentinel://:s3cret@s1:26379,s2:26379,s3/mymaster/1',
      'redis+sentinel://:s3c@ret@s1:26379/mymaster',
      'redis+cluster://:s3cret@c1:7000,c2:7001,10.0.0.3',
      'redis+cluster://gpualert:s3c@ret@c1:7000/',
    ])
      expect(problem(good)).toBe('accepted');
  });

  it('says which file is unreadable or malformed', () => {
    expect(() => loadConfig(CommonConfig, COMMON_SOURCES, { file: '/nonexistent/gpualert.yaml' })).toThrow(
      'invalid config: cannot read config file /nonexistent/gpualert.yaml: ENOENT',
    );
    expect(() => loadConfig(CommonConfig, COMMON_SOURCES, { file: file('- a\n- b\n') })).toThrow(/must hold a mapping/);
  });
});
