import { hostname } from 'node:os';
import { startMetadataPoller, type PolledProvider } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { openInfrastructure, untilSignal } from '@gpualert/runtime';
import { CliError, EXIT } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';
import { parseDuration } from '../duration.ts';

const POLLED: readonly PolledProvider[] = ['aws-imds', 'gcp', 'azure'];

/** `gpualert collect provider --provider aws-imds|gcp|azure [--endpoint URL]`. */
export async function collectProvider(options: Record<string, unknown>): Promise<number> {
  const provider = options.provider as PolledProvider | undefined;
  if (!provider || !POLLED.includes(provider)) {
    throw new CliError(`gpualert collect provider: --provider must be one of ${POLLED.join(', ')}${provider ? ` (got "${provider}")` : ''}`);
  }
  const intervalMs = parseDuration('interval', String(options.interval));
  const timeoutMs = parseDuration('timeout', String(options.timeout));
  const config = commonConfig(options);
  const log = createLogger({ name: 'collector-provider', level: config.logLevel });
  const infra = await openInfrastructure(config, log);
  const poller = startMetadataPoller({
    bus: infra.bus, store: infra.store, provider, host: (options.host as string | undefined) ?? hostname(), intervalMs, timeoutMs, log,
    ...(options.endpoint ? { endpoint: String(options.endpoint) } : {}),
  });
  const signal = await untilSignal();
  log.info({ signal }, 'collector_stopping');
  await poller.stop();
  await infra.close();
  return EXIT.ok;
}
