import { readdirSync, readFileSync } from 'node:fs';
import { parseEnvelope, type Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { runCli } from './infra/run-cli.ts';

const FIXTURES = new URL('./fixtures/', import.meta.url).pathname;

function envelopes(stdout: string): Envelope[] {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      const result = parseEnvelope(line);
      if (!result.ok) throw new Error(result.error.message);
      return result.value;
    });
}

describe('gpualert parse', () => {
  it('kernel: every fixture gives valid kernel.event envelopes for the host, the same ids twice', async () => {
    // The files at the top; the folders beside them (wild/, topology/, …) have tests of their own.
    for (const file of readdirSync(`${FIXTURES}kernel`, { withFileTypes: true })
      .filter((f) => f.isFile())
      .map((f) => f.name)) {
      const first = await runCli(['parse', 'kernel', `${FIXTURES}kernel/${file}`, '--host', 'gpu-node-07']);
      expect(first.code, file).toBe(0);
      const events = envelopes(first.stdout);
      // kmsg-raw.log is /dev/kmsg's record shape with nothing wrong in it: its one NVIDIA warning is
      // nvidia-peermem's harmless "invalid context" (issue 23: noise). Every other file holds faults.
      if (file === 'kmsg-raw.log') expect(events, file).toEqual([]);
      else expect(events.length, file).toBeGreaterThan(0);
      for (const e of events) expect([e.type, e.host]).toEqual(['kernel.event', 'gpu-node-07']);
      const again = await runCli(['parse', 'kernel', `${FIXTURES}kernel/${file}`, '--host', 'gpu-node-07']);
      expect(
        envelopes(again.stdout).map((e) => e.id),
        file,
      ).toEqual(events.map((e) => e.id));
    }
  });

  it('kernel from standard input: a lost GPU is one critical event', async () => {
    const input = readFileSync(`${FIXTURES}kernel/dmesg-gpu-fallen-off-bus.log`, 'utf8').split('\n').slice(0, 5).join('\n');
    const result = await runCli(['parse', 'kernel', '-', '--host', 'h1'], { input });
    const [event] = envelopes(result.stdout);
    expect(event).toMatchObject({ type: 'kernel.event', data: { kind: 'xid', xid: 79, severity: 'critical', pci_bus: '0000:91:00' } });
    expect(result.stderr).toMatch(/^5 lines: 1 events/);
  });

  it('nvidia-smi: one gpu.sample per scrape, processes counted from compute apps', async () => {
    const result = await runCli([
      'parse',
      'nvidia-smi',
      `${FIXTURES}nvidia-smi/query-subset.csv`,
      '--host',
      'h1',
      '--apps',
      `${FIXTURES}nvidia-smi/query-compute-apps.csv`,
    ]);
    expect(result.code).toBe(0);
    const samples = envelopes(result.stdout);
    expect(samples).toHaveLength(12);
    const first = samples[0]!;
    if (first.type !== 'gpu.sample') throw new Error('not a sample');
    expect(first.data.gpus[0]).toMatchObject({ temp_c: 41, power_w: 69.85, processes: 3, throttle: ['gpu_idle'] });
  });

  it('nvidia-smi: the lost-GPU message becomes a sample with the error, not a crash', async () => {
    const result = await runCli(['parse', 'nvidia-smi', '-', '--host', 'h1'], {
      input: 'Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n',
    });
    expect(result.code).toBe(0);
    const [sample] = envelopes(result.stdout);
    expect(sample).toMatchObject({ type: 'gpu.sample', data: { gpus: [], error: { code: 'gpu_lost', pci_bus: '0000:3b:00' } } });
  });

  it('nvidia-smi -q -x and a pasted --query-gpu without an index: read by their shape, what is not read said once on stderr', async () => {
    const xml = await runCli(['parse', 'nvidia-smi', `${FIXTURES}nvidia-smi/pastes/q-x-a100-sxm4-v12.telegraf.xml`, '--host', 'h1']);
    expect(xml.code).toBe(0);
    expect(envelopes(xml.stdout).map((e) => (e.type === 'gpu.sample' ? e.data.gpus.map((g) => [g.index, g.pci_bus, g.temp_c]) : []))).toEqual([
      [[0, '0000:01:00', 27]],
    ]);
    expect(xml.stderr.match(/not read: MIG enabled: 4 MIG devices/g)).toHaveLength(1);
    const csv = await runCli(['parse', 'nvidia-smi', '-', '--host', 'h1'], {
      input: readFileSync(`${FIXTURES}nvidia-smi/pastes/no-index-two-runs.bpytop-26.txt`, 'utf8'),
    });
    expect(csv.code).toBe(0);
    expect(envelopes(csv.stdout)).toHaveLength(1);
    expect(csv.stderr).toMatch(/^gpualert parse: -:1: not a data row \(2 times\): ~ \$  time nvidia-smi/);
    expect(csv.stderr).toMatch(/\ngpualert parse: -:2: not read \(2 times\): no index, uuid or pci.bus_id column/);
  });

  it('dcgm: one sample per exporter host', async () => {
    const result = await runCli(['parse', 'dcgm', `${FIXTURES}dcgm/exporter.prom`]);
    expect(
      envelopes(result.stdout)
        .map((e) => e.host)
        .sort(),
    ).toEqual(['424773df46e0', '551bdf382151', 'gpu-node-1', 'unknown']);
  });

  it('provider: every fixture normalises through its adapter', async () => {
    const providerOf: Record<string, string> = {
      'aws-ec2-describe-instance-status-events.json': 'aws',
      'aws-eventbridge-rebalance-recommendation.json': 'aws',
      'aws-eventbridge-spot-interruption-warning.json': 'aws',
      'aws-health-scheduled-change-nth.json': 'aws',
      'aws-health-issue-entities-not-instance-ids.json': 'aws',
      'aws-imds-maintenance-history.json': 'aws-imds',
      'aws-imds-rebalance-recommendation.json': 'aws-imds',
      'aws-imds-scheduled-events.json': 'aws-imds',
      'aws-imds-spot-instance-action.json': 'aws-imds',
      'azure-scheduled-events-ack-request.json': 'azure',
      'azure-scheduled-events-empty.json': 'azure',
      'azure-scheduled-events-freeze-scheduled.json': 'azure',
      'azure-scheduled-events-freeze-started.json': 'azure',
      'gcp-instances-list-upcomingMaintenance.json': 'gcp',
      'gcp-upcoming-maintenance-metadata.json': 'gcp',
      'oci-instance-maintenance-scheduled.json': 'oci',
    };
    expect(Object.keys(providerOf).sort()).toEqual(
      readdirSync(`${FIXTURES}provider`)
        .filter((f) => f.endsWith('.json'))
        .sort(),
    );
    let total = 0;
    for (const [file, provider] of Object.entries(providerOf)) {
      const result = await runCli(['parse', 'provider', `${FIXTURES}provider/${file}`, '--provider', provider, '--host', 'h1']);
      expect(result.code, `${file}: ${result.stderr}`).toBe(0);
      const out = envelopes(result.stdout);
      for (const e of out) expect(e.type).toBe('provider.event');
      total += out.length;
    }
    expect(total).toBe(15); // the empty document and the approval body give none
  });

  it('answers bad input with one line and exit 2', async () => {
    const missing = await runCli(['parse', 'kernel', '/nonexistent.log']);
    expect([missing.code, missing.stderr.trim()]).toEqual([2, 'error[GA-CLI-USAGE]: gpualert parse: cannot read /nonexistent.log: ENOENT']);
    const garbage = await runCli(['parse', 'nvidia-smi', '-'], { input: 'hello\n' });
    expect(garbage.code).toBe(2);
    expect(garbage.stderr).toMatch(
      /no nvidia-smi GPUs in - \(a --query-gpu --format=csv output with its header, or give --fields; nvidia-smi -q; or nvidia-smi -q -x\)/,
    );
    const provider = await runCli(['parse', 'provider', '-', '--provider', 'generic'], { input: '{"event_id":"x","kind":"explode"}' });
    expect([provider.code, provider.stderr.trim()]).toEqual([
      2,
      'error[GA-CLI-USAGE]: gpualert parse provider: -: kind: Invalid option: expected one of "maintenance"|"reboot"|"retirement"|"stop"|"terminate"|"preemption"|"migration"|"rebalance"',
    ]);
    const format = await runCli(['parse', 'syslog', '-']);
    expect(format.code).toBe(2);
    expect(format.stderr.trim()).toBe('error[GA-CLI-USAGE]: gpualert parse: unknown format "syslog" (expected kernel, nvidia-smi, dcgm or provider)');
  });
});
