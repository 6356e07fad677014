import { createLogger, defaultLogFormat, type Logger } from '@gpualert/log';
import { exitAfterStop, listenForStop, openInfrastructure, stopWithin, type Infrastructure } from '@gpualert/runtime';
import { EXIT } from './cli-error.ts';
import type { CommonConfig } from '@gpualert/config';

/** How long a service command gives itself to stop after Ctrl-C or SIGTERM. */
export const SERVICE_STOP_LIMIT_MS = 20_000;

/**
 * What every long-running command does, on its settings loaded once (settings/): logger, bus and store, start, wait for Ctrl-C or
 * SIGTERM, stop, close. A start that fails closes what it opened before the error goes up.
 */
export async function runService(
  name: string,
  config: CommonConfig,
  start: (infra: Infrastructure, log: Logger) => Promise<{ stop(): Promise<void> }>,
  infraOptions: { createTopics?: boolean } = {},
): Promise<number> {
  const log = createLogger({ name, level: config.logLevel, format: config.logFormat ?? defaultLogFormat() });
  // Listened for before the service says it is ready (its start logs that), not after; a stop
  // asked for while it starts is not held back by a start that takes long (a collector waiting
  // on its device, Kafka away): the limit runs from the signal, whatever the start is doing.
  const stop = listenForStop();
  let infra: Infrastructure;
  try {
    infra = await openInfrastructure(config, log, infraOptions);
  } catch (error) {
    stop.release();
    throw error;
  }
  const starting = start(infra, log);
  const first = await Promise.race([
    starting.then(
      (service) => ({ service }),
      (error: unknown) => ({ error }),
    ),
    stop.signalled.then((signal) => ({ signal })),
  ]);
  if ('error' in first) {
    stop.release();
    await infra.close();
    throw first.error;
  }
  const signal = 'signal' in first ? first.signal : await stop.signalled;
  const event = name.replace(/-/g, '_');
  log.info({ signal, limit_ms: SERVICE_STOP_LIMIT_MS, ...('signal' in first ? { while: 'starting' } : {}) }, `${event}_stopping`);
  const stopped = await stopWithin(SERVICE_STOP_LIMIT_MS, async () => {
    const service = await starting.catch(() => undefined);
    await service?.stop();
    await infra.close();
  });
  if (!stopped) log.error({ deadline_ms: SERVICE_STOP_LIMIT_MS }, `${event}_stop_timed_out`);
  const code = stopped ? EXIT.ok : EXIT.failed;
  exitAfterStop(code);
  return code;
}
