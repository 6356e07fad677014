import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { ADAPTERS } from '@gpualert/providers';
import { newEnvelope, stableId, TOPICS, type ProviderEventData } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { repeat } from '../repeat.ts';
import { diffEvents } from './diff-events.ts';

export type PolledProvider = 'aws-imds' | 'gcp' | 'azure';

export const PROVIDER_COLLECTOR_SOURCE = 'collector-provider/0.1.0';

const DEFAULT_ENDPOINTS: Record<PolledProvider, string> = {
  'aws-imds': 'http://169.254.169.254',
  gcp: 'http://metadata.google.internal',
  azure: 'http://169.254.169.254',
};

/** Reads the provider's documents once; each is a payload for that provider's adapter. */
async function fetchDocuments(provider: PolledProvider, base: string, timeoutMs: number): Promise<unknown[]> {
  const get = async (path: string, headers: Record<string, string>, { missingIs }: { missingIs?: unknown } = {}) => {
    const response = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(timeoutMs) });
    if (response.status === 404 && missingIs !== undefined) return missingIs;
    if (!response.ok) throw new Error(`${path}: HTTP ${response.status}`);
    const text = await response.text();
    try {
      const parsed: unknown = JSON.parse(text);
      return parsed;
    } catch {
      return text.trim();
    }
  };
  switch (provider) {
    case 'aws-imds': {
      // IMDSv2: a session token first.
      const token = await fetch(`${base}/latest/api/token`, {
        method: 'PUT',
        headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '300' },
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!token.ok) throw new Error(`/latest/api/token: HTTP ${token.status}`);
      const headers = { 'X-aws-ec2-metadata-token': await token.text() };
      return Promise.all([
        get('/latest/meta-data/events/maintenance/scheduled', headers, { missingIs: [] }),
        get('/latest/meta-data/spot/instance-action', headers, { missingIs: null }),
        get('/latest/meta-data/events/recommendations/rebalance', headers, { missingIs: null }),
      ]).then((docs) => docs.filter((d) => d !== null));
    }
    case 'gcp': {
      const headers = { 'Metadata-Flavor': 'Google' };
      return Promise.all([
        get('/computeMetadata/v1/instance/upcoming-maintenance', headers, { missingIs: {} }),
        get('/computeMetadata/v1/instance/maintenance-event', headers, { missingIs: 'NONE' }),
      ]);
    }
    case 'azure':
      return [await get('/metadata/scheduledevents?api-version=2020-07-01', { Metadata: 'true' })];
  }
}

export interface MetadataPollerOptions {
  readonly bus: Bus;
  readonly store: StateStore;
  readonly provider: PolledProvider;
  readonly host: string;
  readonly endpoint?: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
  readonly log: Logger;
  readonly labels?: Record<string, string>;
}

/**
 * Polls the instance metadata service, diffs each document against the last and publishes the
 * scheduled / started / completed transitions. A service that is down or slow is retried with
 * backoff and logged, never fatal. What was seen is kept in the state store across restarts.
 */
export function startMetadataPoller(options: MetadataPollerOptions): { stop(): Promise<void> } {
  const base = options.endpoint ?? DEFAULT_ENDPOINTS[options.provider];
  const key = `collector:provider:${options.host}:${options.provider}`;
  let failures = 0;

  const once = async (): Promise<void> => {
    const saved = await options.store.get(key);
    const previous = new Map<string, ProviderEventData>(saved ? (JSON.parse(saved) as [string, ProviderEventData][]) : []);
    const receivedAt = new Date().toISOString();
    const current: ProviderEventData[] = [];
    for (const document of await fetchDocuments(options.provider, base, options.timeoutMs)) {
      const result = ADAPTERS[options.provider](document, { host: options.host, receivedAt });
      if (!result.ok) throw new Error(`unrecognised ${options.provider} document: ${result.error.path} ${result.error.message}`);
      current.push(...result.events);
    }
    const transitions = diffEvents(previous, current);
    if (transitions.length > 0) {
      await options.bus.publish(
        TOPICS.providerEvents,
        transitions.map((data) =>
          envelopeMessage(
            newEnvelope({
              type: 'provider.event',
              id: stableId('provider.event', data.provider, data.event_id, data.status, options.host),
              host: options.host,
              source: PROVIDER_COLLECTOR_SOURCE,
              ts: receivedAt,
              labels: options.labels ?? {},
              data,
            }),
          ),
        ),
      );
      options.log.info({ transitions: transitions.map((t) => `${t.event_id}:${t.status}`) }, 'provider_transitions_published');
    }
    // Saved only after the transitions are durable: a crash in between re-publishes, never skips.
    await options.store.set(key, JSON.stringify(current.map((e) => [e.event_id, e])));
  };

  const poll = () =>
    once()
      .then(() => {
        failures = 0;
      })
      .catch((error: unknown) => {
        failures += 1;
        options.log.warn({ provider: options.provider, endpoint: base, failures, error: String(error) }, 'metadata_poll_failed');
      });
  return repeat(poll, () => (failures === 0 ? options.intervalMs : Math.min(60_000, options.intervalMs * 2 ** Math.min(failures, 6))));
}
