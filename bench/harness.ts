import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { serviceEnv } from '../tools/service-env.ts';
import { Redis } from 'ioredis';

/** Runs `fn` several times and reports the median: these machines are shared and noisy. */
export async function measure(name: string, unit: string, runs: number, fn: () => Promise<number> | number): Promise<number> {
  const rates: number[] = [];
  for (let i = 0; i < runs; i += 1) {
    const started = performance.now();
    const count = await fn();
    rates.push(count / ((performance.now() - started) / 1000));
  }
  const value = median(rates);
  console.log(
    `${name.padEnd(58)} ${format(value).padStart(12)} ${unit}  (median of ${runs}; min ${format(Math.min(...rates))}, max ${format(Math.max(...rates))})`,
  );
  return value;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export function format(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString('en-US') : value.toFixed(2);
}

/** A process's resident memory now (`VmRSS`), or the most it has held (`VmHWM`: what a memory limit must clear), in MB, from /proc. */
export function residentMb(pid: number | undefined, field: 'VmRSS' | 'VmHWM' = 'VmRSS'): number {
  if (pid === undefined) return NaN;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024;
}

export interface ServiceMemory {
  readonly rss: number;
  readonly heap_used: number;
  readonly heap_new: number;
  readonly heap_old: number;
  readonly heap_old_used: number;
  readonly heap_other: number;
  readonly external: number;
}

/**
 * Where a service's memory is, from its own `/metrics` (the process metrics, docs/metrics.md): RSS,
 * the V8 heap's young (`new`) and old spaces and the rest of it (code, large objects, maps), and
 * memory outside the heap (array buffers: fetched batches, socket buffers); in MB. The port is the
 * one the service logged (`"metrics_port"` or `"port"`); undefined if it cannot be read.
 */
export async function memoryOf(child: { port: () => string | undefined }, prefix: string): Promise<ServiceMemory | undefined> {
  const port = child.port();
  if (port === undefined) return undefined;
  const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
    (r) => r.text(),
    () => '',
  );
  const value = (name: string) => Number(new RegExp(`^${prefix}${name} ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? NaN) / 1024 / 1024;
  const mb = (n: number) => Math.round(n * 10) / 10;
  const heapTotal = value('nodejs_heap_size_total_bytes');
  const [newSpace, oldSpace] = [value('nodejs_heap_space_size_total_bytes{space="new"}'), value('nodejs_heap_space_size_total_bytes{space="old"}')];
  return {
    rss: mb(value('process_resident_memory_bytes')),
    heap_used: mb(value('nodejs_heap_size_used_bytes')),
    heap_new: mb(newSpace),
    heap_old: mb(oldSpace),
    heap_old_used: mb(value('nodejs_heap_space_size_used_bytes{space="old"}')),
    heap_other: mb(heapTotal - newSpace - oldSpace),
    external: mb(value('nodejs_external_memory_bytes')),
  };
}

/** One line of `memoryOf`'s figures. */
export function memoryLine(m: ServiceMemory | undefined): string {
  if (m === undefined) return 'not read';
  return `RSS ${m.rss}: V8 heap new ${m.heap_new} + old ${m.heap_old} (${m.heap_old_used} in use) + other ${m.heap_other}, outside the heap ${m.external} MB`;
}

/** The settings a service ships with (tools/service-env.ts) over the bench's own NODE_OPTIONS; GPUALERT_E2E_NODE_DEFAULTS=1 runs it on Node's and glibc's defaults. */
export function shippedEnv(service: string | undefined): NodeJS.ProcessEnv {
  if (process.env.GPUALERT_E2E_NODE_DEFAULTS === '1') return {};
  const shipped = serviceEnv(service ?? '');
  return { ...shipped, NODE_OPTIONS: [process.env.NODE_OPTIONS, shipped.NODE_OPTIONS].filter(Boolean).join(' ') };
}

/** A gpualert process a bench started: the tail of its output, and the port it logged for its /metrics. */
export type BenchProcess = ChildProcess & { output: () => string; port: () => string | undefined };

/** Starts `node [nodeArgs] bin args` with `env` over the bench's own, keeping the last 20,000 characters of its output and the first port it logs (`"metrics_port"` or `"port"`). */
export function startProcess(bin: string, nodeArgs: readonly string[], args: readonly string[], env: NodeJS.ProcessEnv): BenchProcess {
  const child = spawn(process.execPath, [...nodeArgs, bin, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let port: string | undefined;
  const take = (c: Buffer) => {
    output = (output + c.toString()).slice(-20_000);
    port ??= /"(?:metrics_)?port":(\d+)/.exec(output)?.[1];
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  return Object.assign(child, { output: () => output, port: () => port });
}

/** Polls `condition` every 20 ms until it holds; throws, naming `what`, after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * What the deployment keeps in Redis, by kind of key: bytes as Redis counts them (`MEMORY USAGE`,
 * every key of the prefix, by SCAN), and the engine's per-host state as stored (its JSON length).
 */
export async function redisFootprint(url: string, prefix: string): Promise<{ kinds: Map<string, { keys: number; bytes: number }>; hostStateChars: number[] }> {
  const client = new Redis(url, { maxRetriesPerRequest: 2 });
  const kinds = new Map<string, { keys: number; bytes: number }>();
  const hostStateChars: number[] = [];
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1_000);
      cursor = next;
      for (const key of keys) {
        const rest = key.slice(prefix.length);
        const family = [
          'engine:host:',
          'engine:partition:',
          'notifier:alive:',
          'notifier:outbox-claim:',
          'notifier:page-resolved:',
          'notifier:page-resolve-taken:',
          'collector:kernel:',
        ].find((f) => rest.startsWith(f));
        const kind = family ? `${family}*` : rest;
        const bytes = Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0')) || 0;
        const entry = kinds.get(kind) ?? { keys: 0, bytes: 0 };
        entry.keys += 1;
        entry.bytes += bytes;
        kinds.set(kind, entry);
        if (kind === 'engine:host:*' && hostStateChars.length < 2_000) hostStateChars.push(await client.strlen(key));
      }
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
  return { kinds, hostStateChars };
}
