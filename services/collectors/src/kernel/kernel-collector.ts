import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import { KernelLogParser, PciTopology, type ParsedKernelEvent } from '@gpualert/kernel-log';
import type { Logger } from '@gpualert/log';
import type { XidCatalog } from '@gpualert/rules';
import { decodeVersioned, encodeVersionedValue, newEnvelope, stableId, TOPICS, type VersionedState } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';
import type { LineSource, SourceHealth } from './line-source.ts';
import { readPciTree, type PciTreeOptions } from '../inventory/pci-tree.ts';

export interface KernelCollectorOptions {
  readonly bus: Bus;
  readonly store: StateStore;
  readonly source: LineSource;
  readonly host: string;
  readonly labels?: Record<string, string>;
  readonly catalog: XidCatalog;
  readonly gpuIndexByPci?: ReadonlyMap<string, number>;
  readonly bootTimeMs?: number;
  readonly pollMs?: number;
  readonly burstGapMs?: number;
  /** The host's PCI tree (`collect kernel --topology`, or what the agent's inventory reads): a port's AER error names the GPUs below it. */
  readonly topology?: PciTopology;
  readonly log: Logger;
}

export const KERNEL_COLLECTOR_SOURCE = 'collector-kernel/0.1.0';

/** A reader whose loop has not come round for this long is stalled (it comes round at least every second). */
export const KERNEL_STALL_MS = 30_000;
/** A reader that ended, cannot read, or whose file is gone, for this long, is stopped (a rotation takes milliseconds). */
export const KERNEL_STOPPED_MS = 10_000;

/** How the kernel collector's reading goes, for the agent's telemetry heartbeat. */
export interface KernelReaderHealth {
  /** When the read loop last came round (ms since the epoch). */
  readonly cycledAt: number;
  /** The source's own word, or the last read's failure. */
  readonly source: SourceHealth;
}

/** Where a source resumes: kept in the state store, per host and source. */
export function kernelCursorKey(host: string, sourceId: string): string {
  return `collector:kernel:${host}:${sourceId}`;
}

/**
 * A source's resume position as saved: `{"version":1,"value":N}`, N a line or byte position (a
 * whole number from 0 to 2^53-1). Version 0 (before versioned state) saved the bare number.
 */
export const KERNEL_CURSOR: VersionedState<number> = {
  name: 'kernel cursor',
  version: 1,
  schema: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  migrate: (raw, from) => (from === 0 && typeof raw === 'number' ? raw : undefined),
  maxChars: 200,
};

/** Where a source resumes, read back; undefined (start as on a first run) when there is none or it does not read, with one warning line. */
export function loadKernelCursor(text: string | null, log: Logger, key: string): number | undefined {
  if (text === null) return undefined;
  const loaded = decodeVersioned(KERNEL_CURSOR, text, (versioned) => versioned.value);
  if (loaded.ok) return loaded.value;
  log.warn({ key, reason: loaded.reason }, 'state_rebuilt');
  return undefined;
}

/**
 * Follows the kernel log and publishes `kernel.event`s. The resume position is saved only
 * after the events before it are durable on the bus, and it points at the oldest line of any
 * burst still open, so a restart neither skips nor re-publishes; ids are stable per position.
 */
export async function startKernelCollector(
  options: KernelCollectorOptions,
): Promise<{ stop(): Promise<void>; stats(): KernelLogParser['stats']; health(): KernelReaderHealth }> {
  const key = kernelCursorKey(options.host, options.source.id);
  const from = loadKernelCursor(await options.store.get(key), options.log, key);
  options.source.open(from);
  options.log.info({ source: options.source.id, resume_from: from ?? 'start' }, 'kernel_collector_started');
  const parser = new KernelLogParser({
    catalog: options.catalog,
    ...(options.gpuIndexByPci ? { gpuIndexByPci: options.gpuIndexByPci } : {}),
    ...(options.bootTimeMs !== undefined ? { bootTimeMs: options.bootTimeMs } : {}),
    ...(options.burstGapMs !== undefined ? { burstGapMs: options.burstGapMs } : {}),
    ...(options.topology ? { topology: options.topology } : {}),
  });
  let next = from;
  let stopped = false;
  let cycledAt = Date.now();
  let failed: SourceHealth | undefined;

  const publish = async (events: ParsedKernelEvent[]): Promise<void> => {
    if (events.length === 0) return;
    const messages = events.map((event) =>
      envelopeMessage(
        newEnvelope({
          type: 'kernel.event',
          id: stableId(options.host, options.source.id, event.position),
          host: options.host,
          source: KERNEL_COLLECTOR_SOURCE,
          ts: event.ts,
          labels: options.labels ?? {},
          data: event.data,
        }),
      ),
    );
    // Events are never dropped: a bus that is down is retried until it takes them.
    for (let attempt = 1; ; attempt += 1) {
      try {
        await options.bus.publish(TOPICS.kernelEvents, messages);
        return;
      } catch (error) {
        options.log.error({ attempt, error: String(error) }, 'kernel_events_publish_failed');
        if (stopped && attempt >= 3) throw error;
        await new Promise((r) => setTimeout(r, Math.min(5_000, 100 * 2 ** attempt)));
      }
    }
  };
  const saveCursor = async (): Promise<void> => {
    const position = parser.resumePosition() ?? next;
    if (position !== undefined) await options.store.set(key, encodeVersionedValue(KERNEL_CURSOR, position));
  };

  const loop = (async () => {
    while (!stopped) {
      cycledAt = Date.now();
      let lines: Awaited<ReturnType<LineSource['read']>>;
      try {
        lines = await options.source.read();
        failed = undefined;
      } catch (error) {
        // A reader that cannot read (kmsg gone, a permission taken away) is said, and tried again each second.
        if (!failed) options.log.error({ source: options.source.id, error: String(error) }, 'kernel_source_failed');
        failed = { ok: false, message: `${options.source.id}: ${error instanceof Error ? error.message : String(error)}`, since: failed?.since ?? Date.now() };
        await new Promise((r) => setTimeout(r, 1_000));
        continue;
      }
      const events: ParsedKernelEvent[] = [];
      const now = Date.now();
      for (const line of lines) {
        events.push(...parser.push(line.text, now, line.position));
        next = line.next;
      }
      events.push(...parser.tick(now));
      await publish(events);
      if (lines.length > 0 || events.length > 0) await saveCursor();
      if (lines.length === 0) {
        const pollMs = options.pollMs ?? 50;
        // An open burst must close on time even if no line comes: wake for it.
        const waitMs = parser.resumePosition() !== undefined ? pollMs : pollMs * 20;
        if (options.source.waitForLines) await options.source.waitForLines(waitMs);
        else await new Promise((r) => setTimeout(r, pollMs));
      }
    }
  })();

  return {
    stats: () => parser.stats,
    health: () => ({ cycledAt, source: failed ?? options.source.health?.() ?? { ok: true } }),
    async stop() {
      stopped = true;
      await loop;
      // What is still open is complete as far as this run knows: emit it, then save the cursor.
      await publish(parser.flush());
      await saveCursor();
      await options.source.close();
      options.log.info({ ...parser.stats }, 'kernel_collector_stopped');
    },
  };
}

/**
 * The host's PCI tree as the inventory collector reads it (sysfs, else `lspci -tvnn`), for the
 * kernel collector; undefined when neither answers (a container without /sys and lspci).
 */
export async function hostTopology(options: PciTreeOptions): Promise<PciTopology | undefined> {
  try {
    const data = await readPciTree(options);
    return data ? new PciTopology(data) : undefined;
  } catch {
    return undefined;
  }
}
