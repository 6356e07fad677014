import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, TOPICS, type GpuSampleData, type TelemetrySource, type TelemetryState } from '@gpualert/schema';
import type { GpuSource } from '../gpu/gpu-source.ts';

/** How often the agent says how its telemetry sources are, when nothing changes. */
export const TELEMETRY_HEARTBEAT_MS = 30_000;
/** A GPU scrape still running after this is stalled (nvidia-smi is killed at its own timeout first; this catches what hangs around it). */
export const GPU_STALL_MS = 30_000;
/** DCGM's values unchanged this long: the exporter serves a cache, DCGM has stopped reading the GPUs. */
export const DCGM_STALE_MS = 120_000;

/** One telemetry source's state, as a watch sees it now. */
export interface SourceCheck {
  readonly state: TelemetryState;
  /** Since the source last gave fresh data; absent for a source whose silence is normal (a quiet kernel log). */
  readonly quietMs?: number;
  readonly message?: string;
}

export interface SourceWatch {
  readonly source: string;
  check(now: number): SourceCheck;
}

/**
 * The GPU source wrapped so its runs are watched: a scrape killed at its timeout, or one still
 * running after `stallMs`, is `stalled`; DCGM answering the same values for `staleMs` is `stale`
 * (nvidia-smi reads the GPUs each run, so only DCGM's exporter can serve old values).
 */
export function watchGpuSource(
  inner: GpuSource,
  options: { stallMs?: number; staleMs?: number; now?: () => number } = {},
): { source: GpuSource; watch: SourceWatch } {
  const now = options.now ?? Date.now;
  const stallMs = options.stallMs ?? GPU_STALL_MS;
  const staleMs = options.staleMs ?? DCGM_STALE_MS;
  const started = now();
  let running: number | undefined;
  let timedOut: string | undefined;
  let fresh: number | undefined;
  let values: { text: string; since: number } | undefined;
  const source: GpuSource = {
    name: inner.name,
    async scrape(): Promise<GpuSampleData> {
      running = now();
      let data: GpuSampleData;
      try {
        data = await inner.scrape();
      } finally {
        running = undefined;
      }
      const at = now();
      timedOut = data.error?.code === 'timeout' ? data.error.message : undefined;
      if (data.error === undefined && data.gpus.length > 0) {
        const text = JSON.stringify(data.gpus);
        if (values?.text !== text) {
          values = { text, since: at };
          fresh = at;
        } else if (inner.name !== 'dcgm') {
          fresh = at; // nvidia-smi asked the GPUs just now: the same values are fresh ones
        }
      }
      return data;
    },
  };
  const watch: SourceWatch = {
    source: inner.name,
    check(at) {
      const quietMs = at - (fresh ?? started);
      if (running !== undefined && at - running > stallMs) {
        return {
          state: 'stalled',
          quietMs,
          message: `a scrape has been running for ${Math.round((at - running) / 1000)} s (stated limit ${Math.round(stallMs / 1000)} s)`,
        };
      }
      if (timedOut !== undefined) return { state: 'stalled', quietMs, message: timedOut };
      if (inner.name === 'dcgm' && values !== undefined && at - values.since >= staleMs) {
        return { state: 'stale', quietMs, message: `every value unchanged for ${Math.round((at - values.since) / 1000)} s: the exporter serves old readings` };
      }
      return { state: 'ok', quietMs };
    },
  };
  return { source, watch };
}

/**
 * Publishes a `telemetry.health` on `gpualert.host.samples` every `intervalMs`, and at once when a
 * source's state changes (checked every `checkMs`), with one log line per change.
 */
export function startTelemetryHeartbeat(options: {
  readonly bus: Bus;
  readonly host: string;
  readonly labels: Record<string, string>;
  readonly log: Logger;
  readonly watches: readonly SourceWatch[];
  readonly intervalMs?: number;
  readonly checkMs?: number;
  readonly now?: () => number;
}): { stop(): Promise<void>; sources(): TelemetrySource[] } {
  const now = options.now ?? Date.now;
  const intervalMs = options.intervalMs ?? TELEMETRY_HEARTBEAT_MS;
  const checkMs = options.checkMs ?? 1_000;
  const last = new Map<string, TelemetryState>();
  let lastSent = -Infinity;
  let sending: Promise<void> = Promise.resolve();
  const sources = (): TelemetrySource[] =>
    options.watches.map((watch) => {
      const check = watch.check(now());
      return {
        source: watch.source,
        state: check.state,
        ...(check.quietMs !== undefined ? { quiet_s: Math.max(0, Math.round(check.quietMs / 1000)) } : {}),
        ...(check.message !== undefined ? { message: clean(check.message) } : {}),
      };
    });
  const beat = async (): Promise<void> => {
    const at = now();
    const current = sources();
    let changed = false;
    for (const s of current) {
      const before = last.get(s.source);
      if (before === s.state) continue;
      changed = true;
      last.set(s.source, s.state);
      if (s.state !== 'ok') options.log.warn({ source: s.source, state: s.state, message: s.message }, 'telemetry_quiet');
      else if (before !== undefined) options.log.info({ source: s.source }, 'telemetry_back');
    }
    if (!changed && at - lastSent < intervalMs) return;
    lastSent = at;
    const envelope = newEnvelope({
      type: 'telemetry.health',
      host: options.host,
      source: 'agent-telemetry/0.1.0',
      ts: new Date(at).toISOString(),
      labels: options.labels,
      data: { interval_s: intervalMs / 1000, sources: current },
    });
    try {
      await options.bus.publish(TOPICS.hostSamples, [envelopeMessage(envelope)]);
    } catch (error) {
      lastSent = -Infinity; // told again at the next check
      options.log.error({ error: String(error) }, 'telemetry_health_publish_failed');
    }
  };
  let stopped = false;
  const timer = setInterval(() => {
    if (stopped) return;
    sending = sending.then(beat);
  }, checkMs);
  sending = sending.then(beat);
  return {
    sources,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await sending;
    },
  };
}

/** A message for the heartbeat: control characters blanked (a command's stderr), cut at the schema's bound. */
function clean(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ').slice(0, 512);
}
