import { requestForgetHost } from '@gpualert/engine-service';
import { MAX_HOST_LENGTH } from '@gpualert/schema';
import { RedisStore } from '@gpualert/state';
import { CliError, EXIT } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';

type Options = Record<string, unknown>;

/**
 * `gpualert host forget HOST`: a decommissioned host leaves the engine's state and its partition's
 * index, so no engine loads it or calls it down after a reassignment; running engines drop it
 * from memory at their next tick.
 */
export async function hostForget(host: string, options: Options): Promise<number> {
  if (host === '' || host.length > MAX_HOST_LENGTH) throw new CliError(`gpualert host forget: a host is 1 to ${MAX_HOST_LENGTH} characters (got ${host.length})`);
  const config = commonConfig(options);
  if (!config.redisUrl) throw new CliError('gpualert host forget: needs REDIS_URL (the embedded mode\'s store lives inside gpualert up)');
  const store = new RedisStore({ url: config.redisUrl, prefix: config.keyPrefix });
  try {
    const outcome = await requestForgetHost(store, host, Date.now());
    if (outcome === 'unknown') throw new CliError(`gpualert host forget: no host "${host}" in the engine's state (key prefix "${config.keyPrefix}")`);
  } finally {
    await store.close();
  }
  process.stdout.write(`forgot ${host}: its state and its place in the partition index are gone; running engines drop it at their next tick\n`);
  return EXIT.ok;
}
