import { hostname } from 'node:os';
import { startMetadataPoller, type PolledProvider } from '@gpualert/collectors';
import { CliError } from '../cli-error.ts';
import { parseDuration } from '../duration.ts';
import { runService } from '../run-service.ts';
import { commonConfig } from '../common-options.ts';
import { oneOf, stringOption } from '../option-values.ts';

const POLLED: readonly PolledProvider[] = ['aws-imds', 'gcp', 'azure'];

/** `gpualert collect provider --provider aws-imds|gcp|azure [--endpoint URL]`. */
export async function collectProvider(options: Record<string, unknown>): Promise<number> {
  const provider = stringOption(options, 'provider');
  if (!provider || !oneOf(POLLED, provider)) {
    throw new CliError(`gpualert collect provider: --provider must be one of ${POLLED.join(', ')}${provider ? ` (got "${provider}")` : ''}`);
  }
  const intervalMs = parseDuration('interval', String(options.interval));
  const timeoutMs = parseDuration('timeout', String(options.timeout));
  return runService('collector-provider', commonConfig(options), async ({ bus, store }, log) =>
    startMetadataPoller({
      bus,
      store,
      provider,
      host: stringOption(options, 'host') ?? hostname(),
      intervalMs,
      timeoutMs,
      log,
      ...(options.endpoint ? { endpoint: String(options.endpoint) } : {}),
    }),
  );
}
