import { requestHostForget } from '@gpualert/engine-service';
import { HostName } from '@gpualert/schema';
import { RedisStore } from '@gpualert/state/redis';
import { CliError, EXIT } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';

type Options = Record<string, unknown>;

/**
 * `gpualert host forget HOST`: a decommissioned host's engine state is deleted from the store
 * now, and the running engines drop it from memory at their next tick (every 2 s), resolving
 * what still fires for it; it is no longer loaded nor called absent. Should it report again, it
 * is judged as a new host. Without a command, hosts unheard for `GPUALERT_FORGET_AFTER` (7 days)
 * are forgotten the same way.
 */
export async function hostForget(host: string, options: Options): Promise<number> {
  const checked = HostName.safeParse(host);
  if (!checked.success)
    throw new CliError(
      `gpualert host forget: ${JSON.stringify(String(host).slice(0, 80))} is not a host name (${checked.error.issues[0]?.message ?? 'invalid'})`,
    );
  const config = commonConfig(options);
  if (!config.redisUrl) throw new CliError("gpualert host forget: needs REDIS_URL (the embedded mode's store lives inside gpualert up)");
  const store = new RedisStore({ url: config.redisUrl, prefix: config.keyPrefix });
  try {
    const { hadState } = await requestHostForget(store, checked.data, Date.now());
    process.stdout.write(`${checked.data}: ${hadState ? 'saved state deleted' : 'no saved state'}; the running engines forget it within seconds\n`);
  } finally {
    await store.close();
  }
  return EXIT.ok;
}
