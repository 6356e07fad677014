import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { kernelCursorKey, startKernelCollector } from './kernel-collector.ts';
import type { LineSource, SourceLine } from './line-source.ts';
import { waitFor } from '@gpualert/test-support';

const CURSOR_V0 = readFileSync(new URL('./fixtures/state-v0/kernel-cursor.txt', import.meta.url), 'utf8');
const catalog = (() => {
  const loaded = loadXidCatalog();
  if (!loaded.ok) throw new Error('the bundled Xid catalog does not load');
  return loaded.value;
})();

/** A source that hands out the given lines once and remembers where it was opened. */
class ScriptedSource implements LineSource {
  readonly id = 'scripted';
  openedAt: number | undefined | 'never' = 'never';
  constructor(private lines: SourceLine[]) {}
  open(from: number | undefined): void {
    this.openedAt = from;
  }
  async read(): Promise<SourceLine[]> {
    const out = this.lines;
    this.lines = [];
    return out;
  }
  async close(): Promise<void> {}
}

/** Starts a collector on a store holding `saved` as the cursor, feeds one line, stops; what it resumed from, saved and logged. */
async function run(saved: string | undefined) {
  const store = new MemoryStore();
  const key = kernelCursorKey('gpu-node-3', 'scripted');
  if (saved !== undefined) await store.set(key, saved);
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    name: 'collector',
    level: 'info',
    destination: new Writable({
      write(c, _e, done) {
        lines.push(JSON.parse(String(c)) as Record<string, unknown>);
        done();
      },
    }),
  });
  const source = new ScriptedSource([{ text: '[ 12.5] eth0: link up', position: 50_000, next: 50_022 }]);
  const bus = new MemoryBus();
  const collector = await startKernelCollector({ bus, store, source, host: 'gpu-node-3', catalog, log, pollMs: 5 });
  await waitFor(() => collector.stats().lines >= 1, 'the collector to read the line', 10_000);
  await collector.stop();
  await bus.close();
  return { resumedFrom: source.openedAt, savedAfter: await store.get(key), warnings: lines.filter((l) => l.msg === 'state_rebuilt') };
}

describe("the kernel collector's cursor", () => {
  it('resumes from a cursor saved before versions (a bare number), and saves it back versioned', async () => {
    expect(CURSOR_V0).toBe('41237');
    const { resumedFrom, savedAfter, warnings } = await run(CURSOR_V0);
    expect(resumedFrom).toBe(41237);
    expect(JSON.parse(savedAfter!)).toEqual({ version: 1, value: 50_022 });
    expect(warnings).toEqual([]);
    // and reads its own save back
    expect((await run(savedAfter!)).resumedFrom).toBe(50_022);
  });

  it('starts as on a first run, with one warning line, from a cursor it cannot read', async () => {
    expect((await run(undefined)).resumedFrom).toBeUndefined();
    for (const bad of [
      'NaN',
      '-5',
      '{"version":1,"value":-5}',
      '{"version":1,"value":"12"}',
      '1e400',
      '{"__proto__":{"value":3},"version":1}',
      '{"version":2,"value":7}',
      `[${'1,'.repeat(10_000)}1]`,
    ]) {
      const { resumedFrom, warnings, savedAfter } = await run(bad);
      expect(resumedFrom, bad).toBeUndefined();
      expect(warnings, bad).toHaveLength(1);
      expect(warnings[0]!.key).toBe('collector:kernel:gpu-node-3:scripted');
      expect(JSON.parse(savedAfter!)).toEqual({ version: 1, value: 50_022 });
    }
    expect(({} as Record<string, unknown>).value).toBeUndefined();
  });
});
