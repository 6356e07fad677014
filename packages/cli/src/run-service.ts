import { createLogger, defaultLogFormat, type Logger } from '@gpualert/log';
import { openInfrastructure, untilSignal, type Infrastructure } from '@gpualert/runtime';
import { EXIT } from './cli-error.ts';
import { commonConfig } from './common-options.ts';

/**
 * What every long-running command does: config, logger, bus and store, start, wait for Ctrl-C or
 * SIGTERM, stop, close. A start that fails closes what it opened before the error goes up.
 */
export async function runService(
  name: string,
  options: Record<string, unknown>,
  start: (infra: Infrastructure, log: Logger) => Promise<{ stop(): Promise<void> }>,
): Promise<number> {
  const config = commonConfig(options);
  const log = createLogger({ name, level: config.logLevel, format: config.logFormat ?? defaultLogFormat() });
  const infra = await openInfrastructure(config, log);
  let service: { stop(): Promise<void> };
  try {
    service = await start(infra, log);
  } catch (error) {
    await infra.close();
    throw error;
  }
  const signal = await untilSignal();
  log.info({ signal }, `${name.replace(/-/g, '_')}_stopping`);
  await service.stop();
  await infra.close();
  return EXIT.ok;
}
