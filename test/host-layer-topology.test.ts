import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '@gpualert/bus';
import { hostTopology, startKernelCollector, type LineSource, type SourceLine } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { kernelTopology } from '../packages/cli/src/commands/collect.ts';
import { waitFor } from './infra/wait-for.ts';

const loaded = loadXidCatalog();
if (!loaded.ok) throw new Error('the bundled Xid catalog does not load');
const catalog = loaded.value;
const log = createLogger({ name: 'test', level: 'silent' });
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

// The root port's fatal error is real (test/fixtures/kernel/dmesg-pcie-aer.log); the tree is synthetic, in lspci -tvnn's format.
const AER = '[256236.152634] pcieport 0000:89:02.0: AER: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Receiver ID)';
const TREE = [
  '-+-[0000:89]-+-02.0-[8a-8e]----00.0-[8b-8e]--+-00.0-[8c]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]',
  ` |           |${' '.repeat(31)}\\-01.0-[8d]----00.0  NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330]`,
  ' |           \\-03.0-[8f]----00.0  Mellanox Technologies MT2910 Family [ConnectX-7] [15b3:1021]',
  ' \\-[0000:00]-+-00.0  Intel Corporation Device [8086:09a2]',
].join('\n');

function file(name: string, text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-topology-'));
  dirs.push(dir);
  writeFileSync(join(dir, name), text);
  return join(dir, name);
}

class OneLine implements LineSource {
  readonly id = 'one-line';
  private lines: SourceLine[] = [{ text: AER, position: 0, next: AER.length + 1 }];
  open(): void {}
  async read(): Promise<SourceLine[]> {
    const out = this.lines;
    this.lines = [];
    return out;
  }
  async close(): Promise<void> {}
}

/** The kernel.event the collector publishes for the port's AER line, with or without a topology. */
async function collected(topology?: ReturnType<typeof kernelTopology>): Promise<EnvelopeOf<'kernel.event'>['data'][]> {
  const bus = new MemoryBus();
  await bus.ensureTopics(Object.values(TOPICS));
  const events: EnvelopeOf<'kernel.event'>['data'][] = [];
  const watch = await bus.consume({
    group: 'watch',
    topics: [TOPICS.kernelEvents],
    handler: async (b) => void events.push(...b.items.flatMap((i) => (i.envelope.type === 'kernel.event' ? [i.envelope.data] : []))),
  });
  const collector = await startKernelCollector({
    bus,
    store: new MemoryStore(),
    source: new OneLine(),
    host: 'h1',
    catalog,
    log,
    pollMs: 5,
    ...(topology ? { topology } : {}),
  });
  await waitFor(() => collector.stats().lines >= 1, 'the collector to read the line', 10_000);
  // Stopping closes the open burst and publishes it.
  await collector.stop();
  await waitFor(() => events.length > 0, 'the kernel.event', 10_000);
  await watch.stop();
  await bus.close();
  return events;
}

describe('collect kernel --topology', () => {
  it("the port's fatal AER error names the GPUs below it; without the tree it names none", async () => {
    const without = await collected();
    expect(without).toMatchObject([{ kind: 'pcie_aer', port: { address: '0000:89:02.0' } }]);
    expect(without[0]!.port!.gpus).toBeUndefined();
    const withTree = await collected(kernelTopology(file('tree.txt', TREE)));
    expect(withTree).toMatchObject([{ kind: 'pcie_aer', severity: 'critical', port: { address: '0000:89:02.0', gpus: ['0000:8c:00', '0000:8d:00'] } }]);
  });

  it('a file that is not a tree, or not there, is one clear error naming it', () => {
    expect(() => kernelTopology(file('bad.txt', 'not a tree'))).toThrow(/--topology .*bad\.txt: no PCI devices found/);
    expect(() => kernelTopology('/nonexistent/tree.txt')).toThrow(/--topology \/nonexistent\/tree\.txt: ENOENT/);
  });

  it("the agent's kernel collector reads the tree as the inventory does (sysfs, else lspci); nothing when neither answers", async () => {
    const lspci = file('lspci', `#!/bin/sh\ncat <<'TREE'\n${TREE}\nTREE\n`);
    chmodSync(lspci, 0o755);
    const tree = await hostTopology({ sysfsDir: '/nonexistent/sys/bus/pci/devices', lspci, timeoutMs: 5_000 });
    expect(tree?.below('0000:89:02.0').gpus).toEqual(['0000:8c:00.0', '0000:8d:00.0']);
    expect(await hostTopology({ sysfsDir: '/nonexistent/sys/bus/pci/devices', lspci: '/nonexistent/lspci', timeoutMs: 2_000 })).toBeUndefined();
  });
});
