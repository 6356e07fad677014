import { cpSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '@gpualert/bus';
import { parseIbstat, parsePerfquery, readInfinibandPorts, startAgent, startNetworkCollector } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { HostSampleData, parseEnvelope, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from './infra/run-cli.ts';
import { waitFor } from './infra/wait-for.ts';

/** A real H100 node's /sys/class/infiniband and real ibstat / perfquery outputs (test/fixtures/network/README.md). */
const DIR = new URL('./fixtures/network/', import.meta.url).pathname;
const TREE = join(DIR, 'sys-class-infiniband-h100.0');
const value = (device: string, file: string) => readFileSync(join(TREE, device, 'ports', '1', file), 'utf8').trim();

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('InfiniBand / RoCE ports from sysfs', () => {
  it('reads every port of the H100 tree: state, rate, link layer and the error counters as the files hold them', async () => {
    const { ports, problems } = await readInfinibandPorts(TREE);
    expect(problems).toEqual([]);
    expect(HostSampleData.safeParse({ origin: 'sysfs', ib_ports: ports }).success).toBe(true);
    expect(ports.map((p) => p.device)).toEqual(readdirSync(TREE).sort());
    const mlx51 = ports.find((p) => p.device === 'mlx5_1')!;
    expect(mlx51).toMatchObject({ port: 1, state: 'active', phys_state: 'link_up', rate_gbps: 400, link_layer: 'infiniband' });
    expect(mlx51.counters.link_downed).toBe(Number(value('mlx5_1', 'counters/link_downed')));
    expect(mlx51.counters.port_rcv_errors).toBe(Number(value('mlx5_1', 'counters/port_rcv_errors')));
    expect(mlx51.counters.out_of_sequence).toBe(Number(value('mlx5_1', 'hw_counters/out_of_sequence')));
    // sysfs spells it VL15_dropped.
    expect(mlx51.counters.vl15_dropped).toBe(Number(value('mlx5_1', 'counters/VL15_dropped')));
    // The RoCE bond: Ethernet, 2X NDR.
    expect(ports.find((p) => p.device === 'mlx5_bond_0')).toMatchObject({ link_layer: 'ethernet', rate_gbps: 200 });
  });

  it('a port going down, a rate below its siblings and rising error counters show in the next read', async () => {
    const root = mkdtempSync(join(tmpdir(), 'gpualert-ib-'));
    cpSync(TREE, root, { recursive: true });
    const port = (device: string, file: string) => join(root, device, 'ports', '1', file);
    const before = await readInfinibandPorts(root);
    expect(before.ports.find((p) => p.device === 'mlx5_4')).toMatchObject({ state: 'active', phys_state: 'link_up' });
    // Faults as the kernel writes them: a link down, a link retrained at HDR, symbol errors rising.
    writeFileSync(port('mlx5_4', 'state'), '1: DOWN\n');
    writeFileSync(port('mlx5_4', 'phys_state'), '3: Disabled\n');
    writeFileSync(port('mlx5_5', 'rate'), '200 Gb/sec (4X HDR)\n');
    writeFileSync(port('mlx5_6', 'counters/symbol_error'), '1542\n');
    writeFileSync(port('mlx5_6', 'counters/link_error_recovery'), '3\n');
    const after = await readInfinibandPorts(root);
    expect(after.ports.find((p) => p.device === 'mlx5_4')).toMatchObject({ state: 'down', phys_state: 'disabled' });
    expect(after.ports.find((p) => p.device === 'mlx5_5')?.rate_gbps).toBe(200);
    expect(after.ports.find((p) => p.device === 'mlx5_6')?.counters).toMatchObject({ symbol_error: 1542, link_error_recovery: 3 });
    expect(before.ports.find((p) => p.device === 'mlx5_6')?.counters.symbol_error).toBe(0);
  });

  it('a host without InfiniBand reads no ports and no problem', async () => {
    expect(await readInfinibandPorts(join(tmpdir(), 'no-such-infiniband-root'))).toEqual({ ports: [], problems: [] });
  });

  it('collect network publishes the ports as a host.sample for the host', async () => {
    const bus = new MemoryBus();
    await bus.ensureTopics(Object.values(TOPICS));
    const collector = startNetworkCollector({ bus, host: 'gpu-node-7', intervalMs: 60_000, log: createLogger({ name: 't', level: 'silent' }), root: TREE });
    cleanups.push(() => collector.stop());
    let messages = await bus.read(TOPICS.hostSamples);
    await waitFor(async () => (messages = await bus.read(TOPICS.hostSamples)).length > 0, 'the host.sample', 30_000);
    const envelope = parseEnvelope(messages[0]!.value);
    expect(envelope).toMatchObject({ ok: true, value: { type: 'host.sample', host: 'gpu-node-7', data: { origin: 'sysfs' } } });
    expect(envelope.ok && envelope.value.type === 'host.sample' ? envelope.value.data.ib_ports?.length : 0).toBe(readdirSync(TREE).length);
  });
});

describe('the agent', () => {
  it('runs the network collector with its others, and /healthz names it', async () => {
    const bus = new MemoryBus();
    await bus.ensureTopics(Object.values(TOPICS));
    const agent = await startAgent(
      { host: 'gpu-node-7', labels: {}, network: { root: TREE, intervalMs: 60_000 } },
      { bus, store: new MemoryStore(), log: createLogger({ name: 't', level: 'silent' }) },
    );
    cleanups.push(() => agent.stop());
    expect(agent.collectors).toEqual(['network']);
    // The agent notes a publish once the bus has answered, a moment after the sample is readable: wait for both.
    await waitFor(
      async () => (await bus.read(TOPICS.hostSamples)).length > 0 && agent.health().last_publish_age_s.network !== null,
      'the published host.sample',
      30_000,
    );
    expect(await bus.read(TOPICS.hostSamples)).toHaveLength(1);
    expect(agent.health().last_publish_age_s.network).not.toBeNull();
  });
});

describe('ibstat and perfquery outputs', () => {
  it('ibstat from an H100 node with some ports down: every CA, the down Ethernet ports at 40', () => {
    const text = readFileSync(join(DIR, 'ibstat-h100-some-down.txt'), 'utf8');
    const ports = parseIbstat(text);
    expect(ports).toHaveLength((text.match(/^CA '/gm) ?? []).length);
    const down = ports.filter((p) => p.state === 'down');
    expect(down.map((p) => p.device)).toEqual(['mlx5_2', 'mlx5_7', 'mlx5_8']);
    for (const p of down) expect(p).toMatchObject({ phys_state: 'disabled', rate_gbps: 40, link_layer: 'ethernet' });
    expect(ports.find((p) => p.device === 'mlx5_0')).toMatchObject({ state: 'active', phys_state: 'link_up', rate_gbps: 400, link_layer: 'infiniband' });
  });

  it('perfquery -x: the port it names and its error counters', () => {
    const parsed = parsePerfquery(readFileSync(join(DIR, 'perfquery-x-rhel75.txt'), 'utf8'));
    expect(parsed).toMatchObject({ lid: 10, port: 1 });
    expect(parsed.counters).toMatchObject({ symbol_error: 0, link_downed: 0, port_rcv_errors: 0, port_xmit_discards: 0, port_xmit_wait: 0 });
    // Synthetic (no real perfquery with rising errors was found): the short form with non-zero counters.
    const rising = parsePerfquery('# Port counters: Lid 3 port 2\nSymbolErrorCounter:..............77\nLinkDownedCounter:...............2\n');
    expect(rising).toEqual({ lid: 3, port: 2, counters: { symbol_error: 77, link_downed: 2 } });
  });

  it('gpualert parse ibstat gives one host.sample with every port', async () => {
    const result = await runCli(['parse', 'ibstat', join(DIR, 'ibstat-h100-some-down.txt'), '--host', 'h7']);
    expect(result.code).toBe(0);
    const envelope = parseEnvelope(result.stdout.trim());
    expect(envelope.ok && envelope.value.type === 'host.sample' ? envelope.value.data.ib_ports?.length : 0).toBe(12);
  });
});
