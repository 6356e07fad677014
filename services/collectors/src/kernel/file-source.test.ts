import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileLineSource } from './file-source.ts';

const XID = "[ 100.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
const sources: FileLineSource[] = [];
afterEach(async () => {
  for (const source of sources.splice(0)) await source.close();
});

/** Whether a wait for lines ends by itself within `ms` (woken by the file) or is still waiting. */
async function endsWithin(wait: Promise<void>, ms: number): Promise<'woke' | 'still waiting'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still waiting'>((resolve) => (timer = setTimeout(() => resolve('still waiting'), ms)));
  try {
    return await Promise.race([wait.then(() => 'woke' as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** An empty log followed from its start, read once, its watcher set up and read again: what a collector's first turns do. */
async function watched(): Promise<{ source: FileLineSource; path: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-file-source-'));
  const path = join(dir, 'kern.log');
  writeFileSync(path, '');
  // The fallback poll a minute away: what wakes a wait here is the watcher.
  const source = new FileLineSource(path, 60_000);
  sources.push(source);
  source.open(0);
  expect(await source.read()).toEqual([]);
  // The first wait sets the watcher up, and returns: a line written before it was watched is read now.
  expect(await endsWithin(source.waitForLines(60_000), 5_000)).toBe('woke');
  expect(await source.read()).toEqual([]);
  return { source, path };
}

describe('following a kernel log file', () => {
  it('a line appended while nobody waited (between a read and the next wait) is read at once, not after the fallback poll', async () => {
    const { source, path } = await watched();
    // Nothing changed since that read: the wait waits (it does not spin).
    const quiet = source.waitForLines(60_000);
    expect(await endsWithin(quiet, 300)).toBe('still waiting');
    appendFileSync(path, `${XID}\n`);
    expect(await endsWithin(quiet, 5_000)).toBe('woke');
    expect((await source.read()).map((l) => l.text)).toEqual([XID]);

    // The line of the bench's Xid 79 that paged a second late: appended after a read, its change told
    // while no wait was pending. The next wait returns at once (it used to sleep until the poll, here a minute).
    appendFileSync(path, `${XID}\n`);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await endsWithin(source.waitForLines(60_000), 5_000)).toBe('woke');
    expect((await source.read()).map((l) => l.text)).toEqual([XID]);
  });

  it('a short wait (a burst still open) ends on time with a watcher too: the Xid closes after its gap, not at the next poll', async () => {
    const { source } = await watched();
    expect(await endsWithin(source.waitForLines(50), 2_000)).toBe('woke');
    expect(await endsWithin(source.waitForLines(60_000), 300)).toBe('still waiting');
  });
});
