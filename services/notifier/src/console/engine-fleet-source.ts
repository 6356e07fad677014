import { setImmediate as yieldToLoop } from 'node:timers/promises';
import {
  FLEET_NDJSON,
  FLEET_SNAPSHOT_VERSION,
  FleetSnapshot,
  GpuHistory,
  HostView,
  MAX_FLEET_EVENTS,
  MAX_FLEET_HOSTS,
  MAX_FLEET_SOURCES,
  type EventView,
  type FleetSource,
} from '@gpualert/schema';
import { z } from 'zod';
import { engineAddresses, type Lookup } from './engine-addresses.ts';

/** An engine that has not answered in this long is reported unavailable; the others' hosts are drawn. */
export const ENGINE_FETCH_TIMEOUT_MS = 5_000;
/** The most one engine's snapshot may weigh: 10,000 hosts × 8 GPUs is about 40 MB of JSON. */
export const MAX_ENGINE_SNAPSHOT_BYTES = 64 * 1024 * 1024;
/** One GPU's history is 120 points × 4 metrics × 3 series: some 30 KB. */
export const MAX_ENGINE_HISTORY_BYTES = 256 * 1024;
/** Hosts checked between two yields: the notifier's event loop, which pages, waits no longer than that. */
const HOSTS_PER_SLICE = 200;

/** The envelope of an engine's answer, its hosts checked one by one after (a bad one costs one host). */
const SnapshotShell = FleetSnapshot.extend({ hosts: z.array(z.unknown()).max(MAX_FLEET_HOSTS) });

export interface EngineFleetOptions {
  readonly timeoutMs?: number;
  readonly maxBytes?: number;
  /** For tests: the fetch to use. */
  readonly fetch?: typeof fetch;
  /** For tests: how a `dns+` engine's name resolves (default: the system's resolver, /etc/hosts and DNS). */
  readonly lookup?: Lookup;
}

/** A body read up to `max` bytes; past it, the read stops and says so. */
async function boundedText(response: Response, max: number): Promise<string> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > max) throw new Error(`answer of ${declared} bytes is over the ${max}-byte bound`);
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new Error(`answer is over the ${max}-byte bound`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The most one line of an engine's NDJSON answer may weigh: a host of 256 GPUs is well under it. */
export const MAX_ENGINE_LINE_BYTES = 4 * 1024 * 1024;
const NEWLINE = 0x0a;
/** Bytes of lines parsed between two turns of the event loop, whatever their number. */
const BYTES_PER_SLICE = 1024 * 1024;

/**
 * The lines of a body, each decoded and handed to `line` as it is complete (a newline byte is never
 * part of a UTF-8 sequence, so lines split on bytes decode whole), yielding to the event loop every
 * HOSTS_PER_SLICE lines; the whole read up to `max` bytes, each line up to MAX_ENGINE_LINE_BYTES.
 */
async function eachLine(response: Response, max: number, line: (text: string) => void): Promise<void> {
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > max) throw new Error(`answer of ${declared} bytes is over the ${max}-byte bound`);
  const reader = response.body?.getReader();
  if (!reader) return;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let size = 0;
  let lines = 0;
  let sinceYield = 0;
  const fail = async (why: string) => {
    await reader.cancel();
    throw new Error(why);
  };
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) await fail(`answer is over the ${max}-byte bound`);
    const chunk = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE, start); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      const bytes = pendingBytes + end - start;
      if (bytes > MAX_ENGINE_LINE_BYTES) await fail(`a line of the answer is over the ${MAX_ENGINE_LINE_BYTES}-byte bound`);
      const text = Buffer.concat([...pending, chunk.subarray(start, end)]).toString('utf8');
      pending = [];
      pendingBytes = 0;
      start = end + 1;
      if (text.length > 0) {
        try {
          line(text);
        } catch (error) {
          await reader.cancel();
          throw error;
        }
      }
      lines += 1;
      sinceYield += bytes + 1;
      // A turn of the loop every HOSTS_PER_SLICE lines or BYTES_PER_SLICE read, whichever comes first (lines may be long).
      if (lines % HOSTS_PER_SLICE === 0 || sinceYield >= BYTES_PER_SLICE) {
        sinceYield = 0;
        await yieldToLoop();
      }
    }
    if (start < chunk.length) {
      // Copied: the reader may reuse its buffer.
      pending.push(Buffer.from(chunk.subarray(start)));
      pendingBytes += chunk.length - start;
      if (pendingBytes > MAX_ENGINE_LINE_BYTES) await fail(`a line of the answer is over the ${MAX_ENGINE_LINE_BYTES}-byte bound`);
    }
  }
  if (pendingBytes > 0) line(Buffer.concat(pending).toString('utf8'));
}

/** A host's JSON checked, or undefined for one that does not parse or check (it costs that host alone). */
function hostOf(value: unknown): HostView | undefined {
  const host = HostView.safeParse(value);
  return host.success ? host.data : undefined;
}

/**
 * One engine's snapshot of the hosts it owns, each host checked (one that does not check is
 * counted as left out). Asked as NDJSON, read and parsed a host at a time with turns of the event
 * loop between (a 10,000-host document parsed in one piece held the notifier's loop, which pages,
 * some 0.4 s); an engine that answers one JSON document (an older one) is still read.
 */
async function fetchSnapshot(base: string, options: EngineFleetOptions): Promise<FleetSnapshot> {
  const response = await (options.fetch ?? fetch)(`${base}/v1/fleet`, {
    headers: { accept: `${FLEET_NDJSON}, application/json;q=0.5` },
    signal: AbortSignal.timeout(options.timeoutMs ?? ENGINE_FETCH_TIMEOUT_MS),
  });
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new Error(`answered ${response.status}`);
  }
  const max = options.maxBytes ?? MAX_ENGINE_SNAPSHOT_BYTES;
  const notSnapshot = (error: z.ZodError) => new Error(`not a fleet snapshot: ${error.issues[0]?.path.join('.') ?? ''} ${error.issues[0]?.message ?? ''}`);
  if (!(response.headers.get('content-type') ?? '').startsWith(FLEET_NDJSON)) {
    const shell = SnapshotShell.safeParse(JSON.parse(await boundedText(response, max)));
    if (!shell.success) throw notSnapshot(shell.error);
    const hosts: HostView[] = [];
    let omitted = shell.data.omitted_hosts;
    for (let i = 0; i < shell.data.hosts.length; i += 1) {
      if (i > 0 && i % HOSTS_PER_SLICE === 0) await yieldToLoop();
      const host = hostOf(shell.data.hosts[i]);
      if (host) hosts.push(host);
      else omitted += 1;
    }
    return { ...shell.data, hosts, omitted_hosts: omitted };
  }
  let shell: FleetSnapshot | undefined;
  const hosts: HostView[] = [];
  let omitted = 0;
  await eachLine(response, max, (text) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    if (shell === undefined) {
      const first = SnapshotShell.safeParse(value);
      if (!first.success) throw notSnapshot(first.error);
      shell = { ...first.data, hosts: [] };
      return;
    }
    const host = hosts.length < MAX_FLEET_HOSTS ? hostOf(value) : undefined;
    if (host) hosts.push(host);
    else omitted += 1;
  });
  if (shell === undefined) throw new Error('not a fleet snapshot: an empty answer');
  const read: FleetSnapshot = shell;
  return { ...read, hosts, omitted_hosts: read.omitted_hosts + omitted };
}

/**
 * Several engines' snapshots as one: every host once (two engines naming one host, as while a
 * partition moves: the one heard from last), sorted by name, the events newest first, each bound
 * kept; the data's clock the latest of theirs; the engines that failed named. Pure.
 */
function mergeFleetSnapshots(parts: readonly FleetSnapshot[], unavailable: readonly string[], now: number): FleetSnapshot {
  const hosts = new Map<string, HostView>();
  let omitted = 0;
  const events: EventView[] = [];
  let dataAt: number | undefined;
  for (const part of parts) {
    omitted += part.omitted_hosts;
    events.push(...part.events);
    if (typeof part.data_at === 'number') dataAt = Math.max(dataAt ?? 0, part.data_at);
    for (const host of part.hosts) {
      const other = hosts.get(host.host);
      if (!other || (host.last_seen ?? -1) > (other.last_seen ?? -1)) hosts.set(host.host, host);
    }
  }
  const sorted = [...hosts.values()].sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  events.sort((a, b) => b.at - a.at);
  const merged: FleetSnapshot = {
    version: FLEET_SNAPSHOT_VERSION,
    at: now,
    source: 'engine',
    hosts: sorted.slice(0, MAX_FLEET_HOSTS),
    omitted_hosts: omitted + Math.max(0, sorted.length - MAX_FLEET_HOSTS),
    events: events.slice(0, MAX_FLEET_EVENTS),
  };
  return {
    ...merged,
    ...(dataAt !== undefined ? { data_at: dataAt } : {}),
    ...(unavailable.length > 0 ? { unavailable: unavailable.slice(0, MAX_FLEET_SOURCES) } : {}),
  };
}

/** An engine as the page names it: scheme, host and port (never a user or password a URL may carry). */
function nameOf(base: string): string {
  try {
    const url = new URL(base);
    return `${url.protocol}//${url.host}`;
  } catch {
    return 'an engine';
  }
}

/**
 * The console's fleet in a split deployment: asked of each engine's `/v1/fleet` (on its port,
 * 9470, beside `/metrics`) when the console asks, and merged; each engine serves the hosts it owns.
 * Nothing here reads the samples topic: the cost is one request per engine per console refresh
 * (the console server reuses a snapshot for 1 s), whatever the sample rate. A GPU's history is
 * asked of the engine that last served its host.
 */
export function engineFleetSource(urls: readonly string[], options: EngineFleetOptions = {}): FleetSource {
  const bases = urls.slice(0, MAX_FLEET_SOURCES).map((u) => u.replace(/\/+$/, ''));
  let owners = new Map<string, string>();
  return {
    async snapshot(now) {
      // `dns+` engines are resolved at each ask: the replicas there now.
      const { urls: asked, failed } = await engineAddresses(bases, options.lookup);
      const answers = await Promise.allSettled(asked.map((base) => fetchSnapshot(base, options)));
      const parts: FleetSnapshot[] = [];
      const unavailable: string[] = [...failed];
      const seen = new Map<string, string>();
      answers.forEach((answer, i) => {
        const base = asked[i] ?? '';
        if (answer.status === 'rejected') {
          const reason: unknown = answer.reason;
          // The engine's URL in an error (fetch quotes it) is named as the page names it: no user or password.
          const why = (reason instanceof Error ? reason.message : String(reason)).split(base).join(nameOf(base));
          unavailable.push(`${nameOf(base)}: ${why}`.slice(0, 300));
          return;
        }
        parts.push(answer.value);
        for (const host of answer.value.hosts) seen.set(host.host, base);
      });
      owners = seen;
      return mergeFleetSnapshots(parts, unavailable, now);
    },
    async history(host, gpu) {
      const base = owners.get(host);
      if (base === undefined) return null;
      const response = await (options.fetch ?? fetch)(`${base}/v1/fleet/${encodeURIComponent(host)}/${gpu}/history`, {
        signal: AbortSignal.timeout(options.timeoutMs ?? ENGINE_FETCH_TIMEOUT_MS),
      });
      if (response.status !== 200) {
        await response.body?.cancel();
        return null;
      }
      const parsed = GpuHistory.safeParse(JSON.parse(await boundedText(response, MAX_ENGINE_HISTORY_BYTES)));
      return parsed.success ? parsed.data : null;
    },
  };
}
