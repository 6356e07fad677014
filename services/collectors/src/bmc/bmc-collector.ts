import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, stableId, TOPICS, type HostSampleData } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import type { BmcSource } from './bmc-source.ts';
import { entryKey, LogCursor } from './log-cursor.ts';
import { RedfishError } from './redfish-client.ts';

export const BMC_COLLECTOR_SOURCE = 'collector-bmc/0.1.0';

/** One BMC and the host it manages (the `host` its envelopes carry). */
export interface BmcTarget {
  readonly host: string;
  readonly source: BmcSource;
  readonly labels?: Record<string, string>;
}

export interface BmcCollectorOptions {
  readonly bus: Bus;
  /** Where each BMC's seen log entries are kept, so a restart publishes none twice. */
  readonly store: StateStore;
  readonly targets: readonly BmcTarget[];
  readonly intervalMs: number;
  readonly log: Logger;
  readonly labels?: Record<string, string>;
  /** Polls in flight at once across all BMCs (each BMC is polled by one at a time). */
  readonly concurrency?: number;
  /** On a BMC's very first poll, entries older than this are remembered, not published. */
  readonly firstPollWindowMs?: number;
}

/** One process polling thousands of BMCs keeps this many polls in flight by default. */
export const DEFAULT_BMC_CONCURRENCY = 64;
export const DEFAULT_FIRST_POLL_WINDOW_MS = 3_600_000;

export interface BmcCollectorStats {
  polls: number;
  failures: number;
  events: number;
}

/** A counting semaphore: at most `limit` holders. */
function semaphore(limit: number) {
  let held = 0;
  const waiting: (() => void)[] = [];
  return {
    async acquire(): Promise<void> {
      if (held < limit) {
        held += 1;
        return;
      }
      await new Promise<void>((resolve) => waiting.push(resolve));
    },
    release(): void {
      const next = waiting.shift();
      if (next) next();
      else held -= 1;
    },
  };
}

/**
 * Polls every BMC every `intervalMs` (their first polls spread over the first interval), publishes
 * a `host.sample` per poll, failed or not, and each log entry once as a `bmc.event`. What was seen
 * is saved to the store only after the events are durable: a crash in between re-publishes (same
 * ids, consumers dedupe), never skips.
 */
export function startBmcCollector(options: BmcCollectorOptions): { stop(): Promise<void>; stats: BmcCollectorStats } {
  const stats: BmcCollectorStats = { polls: 0, failures: 0, events: 0 };
  const gate = semaphore(options.concurrency ?? DEFAULT_BMC_CONCURRENCY);
  const cursors = new Map<string, LogCursor>();
  const window = options.firstPollWindowMs ?? DEFAULT_FIRST_POLL_WINDOW_MS;
  const timers = new Set<NodeJS.Timeout>();
  const running = new Set<Promise<void>>();
  let stopped = false;

  const cursorFor = async (host: string): Promise<LogCursor> => {
    const known = cursors.get(host);
    if (known) return known;
    const saved = await options.store.get(`collector:bmc:${host}`);
    let cursor = new LogCursor();
    if (saved) {
      try {
        const parsed = JSON.parse(saved) as { seen?: unknown };
        if (Array.isArray(parsed.seen)) cursor = new LogCursor({ seen: parsed.seen.filter((s): s is string => typeof s === 'string') });
      } catch {
        options.log.warn({ host }, 'bmc_cursor_unreadable');
      }
    }
    cursors.set(host, cursor);
    return cursor;
  };

  /** The BMCs whose last poll read nothing: warned once, until one reads again. */
  const readingNothing = new Set<string>();
  const pollOnce = async (target: BmcTarget): Promise<void> => {
    const at = new Date();
    const labels = { ...options.labels, ...target.labels };
    let sample: HostSampleData;
    let entries: Parameters<LogCursor['fresh']>[0] = [];
    try {
      const reading = await target.source.poll();
      sample = reading.sample;
      entries = reading.entries;
      if (reading.incomplete && reading.incomplete.length > 0) {
        options.log.warn({ host: target.host, bmc: target.source.where, incomplete: reading.incomplete.slice(0, 5) }, 'bmc_poll_incomplete');
      }
      const nothing = reading.problems.length > 0 && readNothing(sample);
      if (!nothing && readingNothing.delete(target.host)) options.log.info({ host: target.host, bmc: target.source.where }, 'bmc_poll_reads_again');
      if (nothing && !readingNothing.has(target.host)) {
        // Every link refused or off-host: the BMC answers, yet nothing of it is watched. Said at the
        // default level, once until it reads again (not at every poll of every BMC).
        readingNothing.add(target.host);
        options.log.warn(
          { host: target.host, bmc: target.source.where, problems: reading.problems.slice(0, 5), count: reading.problems.length },
          'bmc_poll_read_nothing',
        );
      } else if (reading.problems.length > 0 && !nothing) {
        options.log.debug({ host: target.host, problems: reading.problems.slice(0, 5), count: reading.problems.length }, 'bmc_poll_partial');
      }
    } catch (error) {
      stats.failures += 1;
      const code = error instanceof RedfishError ? error.kind : 'command_failed';
      const message = error instanceof Error ? error.message : String(error);
      options.log.warn({ host: target.host, bmc: target.source.where, code, error: message }, 'bmc_poll_failed');
      sample = { origin: target.source.origin, error: { code, message: message.slice(0, 1_000) } };
    }
    stats.polls += 1;
    const cursor = await cursorFor(target.host);
    const fresh = cursor.fresh(entries, at.getTime(), window);
    const ts = at.toISOString();
    try {
      await options.bus.publish(TOPICS.hostSamples, [
        envelopeMessage(newEnvelope({ type: 'host.sample', host: target.host, source: BMC_COLLECTOR_SOURCE, ts, labels, data: sample })),
      ]);
      if (fresh.length > 0) {
        await options.bus.publish(
          TOPICS.bmcEvents,
          fresh.map((data) =>
            envelopeMessage(
              newEnvelope({
                type: 'bmc.event',
                id: stableId('bmc.event', target.host, entryKey(data)),
                host: target.host,
                source: BMC_COLLECTOR_SOURCE,
                ts: data.created ?? ts,
                labels,
                data,
              }),
            ),
          ),
        );
        stats.events += fresh.length;
        options.log.info({ host: target.host, events: fresh.length }, 'bmc_events_published');
      }
      if (fresh.length > 0 || entries.length > 0) await options.store.set(`collector:bmc:${target.host}`, JSON.stringify(cursor.snapshot()));
    } catch (error) {
      // Forget what this poll saw: the next one reads the cursor back from the store and tries again.
      cursors.delete(target.host);
      options.log.error({ host: target.host, error: String(error) }, 'bmc_publish_failed');
    }
  };

  const schedule = (target: BmcTarget, delayMs: number) => {
    if (stopped) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      const started = Date.now();
      const run = (async () => {
        await gate.acquire();
        try {
          if (!stopped) await pollOnce(target);
        } catch (error) {
          options.log.error({ host: target.host, error: String(error) }, 'bmc_poll_crashed');
        } finally {
          gate.release();
        }
      })();
      running.add(run);
      void run.finally(() => {
        running.delete(run);
        schedule(target, Math.max(0, options.intervalMs - (Date.now() - started)));
      });
    }, delayMs);
    timers.add(timer);
  };

  const n = options.targets.length;
  options.targets.forEach((target, i) => schedule(target, n > 1 ? Math.floor((i * options.intervalMs) / n) : 0));

  return {
    stats,
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      await Promise.allSettled([...running]);
      await Promise.allSettled(options.targets.map((t) => t.source.close()));
    },
  };
}

/** A poll that gave no fan, temperature, PSU, redundancy group or health: nothing of the BMC is watched. */
export function readNothing(sample: HostSampleData): boolean {
  return (
    !sample.fans?.length &&
    !sample.temperatures?.length &&
    !sample.psus?.length &&
    !sample.fan_redundancy?.length &&
    !sample.psu_redundancy?.length &&
    sample.system_health === undefined
  );
}
