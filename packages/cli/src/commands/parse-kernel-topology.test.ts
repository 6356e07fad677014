import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parse } from './parse.ts';

const dirs: string[] = [];
afterEach(() => {
  vi.restoreAllMocks();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function files(entries: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-parse-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(entries)) writeFileSync(join(dir, name), text);
  return dir;
}

async function run(file: string, topology?: string): Promise<unknown[]> {
  const out: string[] = [];
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (out.push(String(chunk)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  await parse('kernel', file, { host: 'h1', ...(topology ? { topology } : {}) });
  return out
    .join('')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
}

describe('gpualert parse kernel --topology', () => {
  // The root port's fatal error is real (test/fixtures/kernel/dmesg-pcie-aer.log); the tree is synthetic, in lspci -tvnn's format.
  const log = '[256236.152634] pcieport 0000:89:02.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)\n';
  const tree = [
    '-+-[0000:89]-+-02.0-[8a-8e]----00.0-[8b-8e]--+-00.0-[8c]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]',
    ` |           |${' '.repeat(31)}\\-01.0-[8d]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]`,
    ' |           \\-03.0-[8f]----00.0  Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]',
    ' \\-[0000:00]-+-00.0  Intel Corporation Device [8086:09a2]',
  ].join('\n');

  it('names the GPUs below the port in the event', async () => {
    const dir = files({ 'kern.log': log, 'tree.txt': tree });
    const [envelope] = await run(join(dir, 'kern.log'), join(dir, 'tree.txt'));
    expect(envelope).toMatchObject({
      type: 'kernel.event',
      host: 'h1',
      data: { kind: 'pcie_aer', severity: 'critical', port: { address: '0000:89:02.0', gpus: ['0000:8c:00', '0000:8d:00'] } },
    });
    expect((envelope as { data: { meaning: string } }).data.meaning).toMatch(/below it: 0000:8c:00, 0000:8d:00$/);
  });

  it("without it, the port's event has no GPUs; a topology that is not one is a clear error", async () => {
    const dir = files({ 'kern.log': log, 'bad.txt': 'not a tree' });
    expect(await run(join(dir, 'kern.log'))).toMatchObject([{ data: { port: { address: '0000:89:02.0' } } }]);
    await expect(run(join(dir, 'kern.log'), join(dir, 'bad.txt'))).rejects.toThrow(/--topology .*bad\.txt: no PCI devices found/);
  });
});
