import { mkdtempSync, readFileSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readIbstat, readInfinibandPorts, readPerfquery, UNNAMED_CA } from '@gpualert/collectors';
import { HostSampleData } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { runCli } from './infra/run-cli.ts';

/** Real ibstat pastes from public threads and pages, verbatim (test/fixtures/network/README.md). */
const DIR = new URL('./fixtures/network/', import.meta.url).pathname;
const paste = (file: string) => readFileSync(join(DIR, file), 'utf8');
const valid = (ports: unknown) => HostSampleData.safeParse({ origin: 'ibstat', ib_ports: ports }).success;

describe('ibstat as operators paste it', () => {
  it('tab-indented, cut after "Physical state" (gpud #99): the port is read, the missing lines said once', () => {
    const { ports, problems } = readIbstat(paste('ibstat-gpud-99-partial-down.txt'));
    expect(ports).toEqual([{ device: 'mlx5_8', port: 1, state: 'down', phys_state: 'disabled', rate_gbps: null, link_layer: 'unknown', counters: {} }]);
    expect(valid(ports)).toBe(true);
    expect(problems.map((p) => p.reason)).toEqual(['no "Rate:" line (a partial paste): not known', 'no "Link layer:" line (a partial paste): not known']);
    expect(problems[0]?.text).toBe('mlx5_8/1');
  });

  it('a paste that starts at "Port 1:" with no CA line (azhpc-diagnostics #76): read, its HCA said to be unnamed', () => {
    const { ports, problems } = readIbstat(paste('ibstat-azhpc-76-port-only.txt'));
    expect(ports).toMatchObject([{ device: UNNAMED_CA, port: 1, state: 'down', phys_state: 'polling' }]);
    expect(problems.filter((p) => p.reason.includes('not named'))).toEqual([
      { line: 2, reason: `a port before any CA '…' line: its HCA is not named, reported as ${UNNAMED_CA}`, text: 'Port 1:' },
    ]);
    // The `...` elisions are a paste's furniture, not something unread.
    expect(problems.some((p) => p.text === '...')).toBe(false);
  });

  it('with "..." placeholders and the ibpanic line of a CA ibstat could not stat (gpud #752)', () => {
    const { ports, problems } = readIbstat(paste('ibstat-gpud-752-partial-ibpanic.txt'));
    expect(ports).toEqual([{ device: 'mlx5_7', port: 1, state: 'active', phys_state: 'link_up', rate_gbps: 200, link_layer: 'infiniband', counters: {} }]);
    expect(problems).toEqual([
      { line: 20, reason: "ibstat's own ibpanic", text: "ibpanic: [1323906] main: stat of IB device 'mlx5_8' failed: No such file or directory" },
    ]);
  });

  it('flattened by a web page (no indentation at all), with its "# ibstat" prompt', () => {
    const { ports, problems } = readIbstat(paste('ibstat-advancedclustering-flat.txt'));
    expect(ports).toEqual([{ device: 'mlx4_0', port: 1, state: 'active', phys_state: 'link_up', rate_gbps: 40, link_layer: 'infiniband', counters: {} }]);
    expect(problems).toEqual([]);
  });

  it('space-indented two-port CAs: InfiniBand polling and a disabled Ethernet port (linux-rdma list; ArchWiki)', () => {
    expect(readIbstat(paste('ibstat-linux-rdma-mlx4-ib-eth.txt'))).toEqual({
      ports: [
        { device: 'mlx4_0', port: 1, state: 'down', phys_state: 'polling', rate_gbps: 10, link_layer: 'infiniband', counters: {} },
        { device: 'mlx4_0', port: 2, state: 'down', phys_state: 'disabled', rate_gbps: 40, link_layer: 'ethernet', counters: {} },
      ],
      problems: [],
    });
    const wiki = readIbstat(paste('ibstat-archwiki-mlx4.txt'));
    expect(wiki.ports.map((p) => [p.port, p.state, p.phys_state, p.rate_gbps])).toEqual([
      [1, 'active', 'link_up', 20],
      [2, 'down', 'polling', 10],
    ]);
    expect(wiki.problems).toEqual([]);
  });

  it('the one-port form (`ibstat mlx4_0 2`: "CA: \'mlx4_0\'", nothing indented)', () => {
    const { ports } = readIbstat(paste('ibstat-one-port-redhat-cip.txt'));
    expect(ports).toMatchObject([{ device: 'mlx4_0', port: 2, state: 'down', phys_state: 'polling', rate_gbps: 10 }]);
  });

  it('the existing whole H100 paste still reads every port with nothing unread', () => {
    const { ports, problems } = readIbstat(paste('ibstat-h100-some-down.txt'));
    expect(ports).toHaveLength(12);
    expect(problems).toEqual([]);
  });
});

/**
 * Every string infiniband-diags' ibstat.c prints for a port (`port_state_str`, `port_phy_state_str`,
 * `???` past them), as `port_dump` lays it out: these blocks are built here from those tables, not
 * pasted (labelled synthetic in the README).
 */
describe('every state and physical state ibstat.c prints', () => {
  const block = (state: string, phys: string) =>
    `CA 'mlx5_0'\n\tPort 1:\n\t\tState: ${state}\n\t\tPhysical state: ${phys}\n\t\tRate: 400\n\t\tLink layer: InfiniBand\n`;
  const states: [string, string][] = [
    ['Down', 'down'],
    ['Initializing', 'init'],
    ['Armed', 'armed'],
    ['Active', 'active'],
  ];
  const phys: [string, string][] = [
    ['No state change', 'unknown'],
    ['Sleep', 'sleep'],
    ['Polling', 'polling'],
    ['Disabled', 'disabled'],
    ['PortConfigurationTraining', 'training'],
    ['LinkUp', 'link_up'],
    ['LinkErrorRecovery', 'link_error_recovery'],
    ['PhyTest', 'phy_test'],
  ];
  it.each(states)('State: %s → %s, nothing unread', (text, want) => {
    const { ports, problems } = readIbstat(block(text, 'LinkUp'));
    expect(ports[0]?.state).toBe(want);
    expect(problems).toEqual([]);
  });
  it.each(phys)('Physical state: %s → %s, nothing unread', (text, want) => {
    const { ports, problems } = readIbstat(block('Down', text));
    expect(ports[0]?.phys_state).toBe(want);
    expect(problems).toEqual([]);
    expect(valid(ports)).toBe(true);
  });
  it('"???" (a state above Active, ActiveDefer among them) is unknown, said once for all the ports that print it', () => {
    const { ports, problems } = readIbstat(block('???', 'LinkUp') + block('???', '???').replace('mlx5_0', 'mlx5_1'));
    expect(ports.map((p) => [p.state, p.phys_state])).toEqual([
      ['unknown', 'link_up'],
      ['unknown', 'unknown'],
    ]);
    expect(problems.map((p) => p.text)).toEqual(['state: ???', 'physical state: ???']);
    expect(problems[0]?.reason).toMatch(/prints \?\?\? for a state it has no name for/);
  });
  it('a word no tool prints is unknown and quoted, not guessed', () => {
    const { ports, problems } = readIbstat(block('Sleeping', 'Link Up'));
    expect(ports[0]).toMatchObject({ state: 'unknown', phys_state: 'link_up' });
    expect(problems).toEqual([{ line: 3, reason: 'a state ibstat does not print: read as unknown', text: 'state: Sleeping' }]);
  });
  it('the schema keeps every value it had and takes the new ones', () => {
    const port = (state: string, phys_state: string) => ({
      device: 'mlx5_0',
      port: 1,
      state,
      phys_state,
      rate_gbps: 400,
      link_layer: 'infiniband',
      counters: {},
    });
    for (const state of ['active', 'down', 'init', 'armed', 'unknown', 'active_defer']) expect(valid([port(state, 'link_up')])).toBe(true);
    for (const phys of ['link_up', 'polling', 'disabled', 'sleep', 'training', 'link_error_recovery', 'unknown', 'phy_test'])
      expect(valid([port('down', phys)])).toBe(true);
    expect(valid([port('initializing', 'link_up')])).toBe(false);
  });
});

describe('sysfs state files as the kernel writes them', () => {
  it('5: ACTIVE_DEFER, 2: INIT, 7: Phy Test and 4: PortConfigurationTraining are read; a word the kernel never writes is said', async () => {
    const root = mkdtempSync(join(tmpdir(), 'ib-states-'));
    cpSync(join(DIR, 'sys-class-infiniband-h100.0'), root, { recursive: true });
    const file = (device: string, name: string) => join(root, device, 'ports', '1', name);
    writeFileSync(file('mlx5_0', 'state'), '5: ACTIVE_DEFER\n');
    writeFileSync(file('mlx5_0', 'phys_state'), '6: LinkErrorRecovery\n');
    writeFileSync(file('mlx5_1', 'state'), '2: INIT\n');
    writeFileSync(file('mlx5_1', 'phys_state'), '4: PortConfigurationTraining\n');
    writeFileSync(file('mlx5_4', 'phys_state'), '7: Phy Test\n');
    writeFileSync(file('mlx5_5', 'state'), '9: WEIRD\n');
    const { ports, problems } = await readInfinibandPorts(root);
    const of = (d: string) => ports.find((p) => p.device === d);
    expect(of('mlx5_0')).toMatchObject({ state: 'active_defer', phys_state: 'link_error_recovery' });
    expect(of('mlx5_1')).toMatchObject({ state: 'init', phys_state: 'training' });
    expect(of('mlx5_4')?.phys_state).toBe('phy_test');
    expect(of('mlx5_5')?.state).toBe('unknown');
    expect(problems).toEqual(['mlx5_5 port 1: state "9: WEIRD" is none the kernel writes']);
    expect(HostSampleData.safeParse({ origin: 'sysfs', ib_ports: ports }).success).toBe(true);
  });
});

describe('perfquery pasted', () => {
  it('indented, with a counter that is not a count and a second port: each said, the first port read', () => {
    const real = paste('perfquery-x-rhel75.txt');
    const indented = real
      .split('\n')
      .map((l) => (l === '' ? l : `    ${l}`))
      .join('\n');
    expect(readPerfquery(indented)).toEqual({ ...readPerfquery(real), problems: [] });
    expect(readPerfquery(real).counters.symbol_error).toBe(0);
    // Synthetic: a second block and an unreadable value appended to the real output.
    const two = `${real.replace('SymbolErrorCounter:..............0', 'SymbolErrorCounter:..............N/A')}# Port counters: Lid 11 port 1\nSymbolErrorCounter:..............9\n`;
    const parsed = readPerfquery(two);
    expect(parsed).toMatchObject({ lid: 10, port: 1 });
    expect(parsed.counters.symbol_error).toBeUndefined();
    expect(parsed.problems.map((p) => p.reason)).toEqual(['SymbolErrorCounter is not a count', "a second port's counters: only the first block is read"]);
  });
});

describe('gpualert parse ibstat', () => {
  it('a partial paste gives its sample and says on stderr what it could not read', async () => {
    const result = await runCli(['parse', 'ibstat', join(DIR, 'ibstat-azhpc-76-port-only.txt'), '--host', 'h7']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout.trim()).data.ib_ports).toEqual([
      { device: UNNAMED_CA, port: 1, state: 'down', phys_state: 'polling', rate_gbps: null, link_layer: 'unknown', counters: {} },
    ]);
    expect(result.stderr).toContain('ibstat-azhpc-76-port-only.txt:2: a port before any CA');
    expect(result.stderr).toContain('no "Rate:" line');
  });
});
