import { z } from 'zod';
import type { SettingSources } from './load-config.ts';
import { parseClusterUrl } from './redis-cluster-url.ts';

const brokerList = z
  .union([z.string(), z.array(z.string())])
  .transform((v) => (Array.isArray(v) ? v : v.split(',')).map((s) => s.trim()).filter((s) => s !== ''))
  .pipe(z.array(z.string().regex(/^[^\s:]+:\d{1,5}$/, 'expected host:port[,host:port…]')).min(1, 'expected at least one host:port'));

const SENTINEL_URL = /^redis\+sentinel:\/\/(?:[^/]*@)?[^,:/@[\]\s]+(?::\d{1,5})?(?:,[^,:/@[\]\s]+(?::\d{1,5})?)*\/[\w.-]+(?:\/\d{1,2})?$/;

/** A Redis URL the store can open, checked before anything starts (a malformed one used to fail later, as an internal error). */
function redisUrlProblem(value: string): string | undefined {
  if (value.startsWith('redis+cluster://')) {
    const cluster = parseClusterUrl(value);
    return cluster.ok ? undefined : cluster.problem;
  }
  if (value.startsWith('redis+sentinel://')) {
    if (value.includes('[')) return 'expected Sentinel host names or IPv4 addresses (an IPv6 address is not supported there)';
    return SENTINEL_URL.test(value) ? undefined : 'expected redis+sentinel://[:password@]host:port[,host:port…]/master-name[/db]';
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'expected redis://[:password@]host[:port][/db] or rediss://…';
  }
  if (url.hostname === '') return 'expected a host after redis:// or rediss://';
  if (!/^\/?(\d{1,2})?$/.test(url.pathname)) return 'expected a database number after the host (/0 to /99), or nothing';
  return undefined;
}

/**
 * Settings every service shares. No Kafka brokers and no Redis URL means the embedded mode:
 * the in-process bus and the in-memory store.
 */
export const CommonConfig = z.object({
  kafkaBrokers: brokerList.optional(),
  redisUrl: z
    .string()
    .regex(/^(rediss?|redis\+sentinel|redis\+cluster):\/\//, 'expected a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL')
    .superRefine((value, context) => {
      const problem = redisUrlProblem(value);
      if (problem) context.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  topicPrefix: z
    .string()
    .regex(/^[A-Za-z0-9._-]*$/, 'expected letters, digits, ".", "_" or "-"')
    .default(''),
  keyPrefix: z.string().default('gpualert:'),
  partitions: z.coerce.number().int().min(1).max(1024).default(6),
  /** Replicas of each topic gpualert creates; absent: 3, or every broker of a smaller cluster. */
  replicationFactor: z.coerce.number().int().min(1).max(32).optional(),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Absent: readable lines on a terminal, JSON lines otherwise. */
  logFormat: z.enum(['json', 'pretty']).optional(),
});
export type CommonConfig = z.infer<typeof CommonConfig>;

export const COMMON_SOURCES: SettingSources<CommonConfig> = {
  kafkaBrokers: { env: 'KAFKA_BROKERS', secret: true },
  redisUrl: { env: 'REDIS_URL', secret: true },
  topicPrefix: { env: 'GPUALERT_TOPIC_PREFIX' },
  keyPrefix: { env: 'GPUALERT_KEY_PREFIX' },
  partitions: { env: 'GPUALERT_PARTITIONS' },
  replicationFactor: { env: 'GPUALERT_REPLICATION_FACTOR' },
  logLevel: { env: 'GPUALERT_LOG_LEVEL' },
  logFormat: { env: 'GPUALERT_LOG_FORMAT' },
};
