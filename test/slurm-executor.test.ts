import { SlurmExecutor } from '@gpualert/executors';
import { parsePolicy, RemediationCore, type ActionCommand, type CoreOutput } from '@gpualert/remediation';
import { newEnvelope, stableId, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlurmCluster } from './infra/slurm-cluster.ts';

/**
 * The Slurm executor against a real one-machine Slurm (Debian's slurmctld, slurmd and munged,
 * started here, ten fake nodes on loopback, gpu-09 and gpu-10 also in a second partition, small):
 * what `sinfo` reports is what an operator would see.
 */
const NODES = Array.from({ length: 10 }, (_, i) => `gpu-${String(i + 1).padStart(2, '0')}`);
let cluster: SlurmCluster;
let executor: SlurmExecutor;

beforeAll(async () => {
  cluster = await SlurmCluster.start(NODES, 'gpu', new Map([['small', ['gpu-09', 'gpu-10']]]));
  executor = new SlurmExecutor({ scontrol: cluster.bin('scontrol'), sinfo: cluster.bin('sinfo'), env: { ...process.env, ...cluster.env }, timeoutMs: 15_000 });
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

const row = (lines: readonly string[], node: string) => lines.find((l) => l.startsWith(`${node}|`)) ?? '';
const drained = (lines: readonly string[]) => lines.filter((l) => /\|drain(ed|ing)\|/.test(l)).map((l) => l.split('|')[0]);
const cmd = (host: string, kind: ActionCommand['kind'], reason = 'gpualert: GPU fell off the bus (Xid 79)'): ActionCommand => ({
  actionId: `a-${host}-${kind}`,
  host,
  kind,
  reason,
  attempt: 1,
});

async function resumeAll(): Promise<void> {
  for (const node of NODES) await executor.run(cmd(node, 'resume'));
  await cluster.waitFor((lines) => drained(lines).length === 0, 'every node back');
}

function alert(host: string, fingerprint = `fp-${host}`): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: stableId('alert', host, fingerprint),
    ts: '2026-06-01T00:00:00.000Z',
    host,
    labels: { partition: 'gpu' },
    source: 'engine/test',
    data: {
      fingerprint,
      status: 'firing',
      severity: 'critical',
      category: 'fallen_off_bus',
      rule: 'gpu-absent',
      summary: `GPU 3 on ${host} has disappeared (Xid 79: GPU has fallen off the bus)`,
      starts_at: '2026-06-01T00:00:00.000Z',
      evidence: [],
    },
  });
}

/** Runs the core's commands through the real executor and feeds the results back. */
async function execute(core: RemediationCore, out: CoreOutput, now: number): Promise<CoreOutput[]> {
  const results: CoreOutput[] = [];
  for (const c of out.commands) results.push(core.result(c.actionId, await executor.run(c), now));
  return results;
}

describe('the Slurm executor on a real slurmctld', () => {
  it('drains a node with gpualert reason as sinfo shows it, does not repeat a drain that holds, and resumes it', async () => {
    expect(await executor.run(cmd('gpu-03', 'drain'))).toEqual({ outcome: 'succeeded' });
    let lines = await cluster.waitFor((l) => /\|drain(ed|ing)\|/.test(row(l, 'gpu-03')), 'gpu-03 drained');
    expect(row(lines, 'gpu-03')).toBe('gpu-03|drained|gpualert: GPU fell off the bus (Xid 79)');
    // Asked again with another reason: the drain holds, so nothing is changed.
    expect(await executor.run(cmd('gpu-03', 'drain', 'gpualert: something else'))).toEqual({ outcome: 'already_held' });
    expect(row(cluster.sinfo(), 'gpu-03')).toBe('gpu-03|drained|gpualert: GPU fell off the bus (Xid 79)');
    expect(await executor.run(cmd('gpu-03', 'resume'))).toEqual({ outcome: 'succeeded' });
    lines = await cluster.waitFor((l) => !/drain/.test(row(l, 'gpu-03')), 'gpu-03 resumed');
    expect(row(lines, 'gpu-03')).toMatch(/^gpu-03\|idle\*?\|none$/);
    expect(await executor.run(cmd('gpu-03', 'resume'))).toEqual({ outcome: 'already_held' });
  });

  it('never lifts a drain someone else set', async () => {
    expect(await executor.run(cmd('gpu-04', 'drain', 'disk replacement by ops'))).toEqual({ outcome: 'succeeded' });
    await cluster.waitFor((l) => /drain/.test(row(l, 'gpu-04')), 'gpu-04 drained');
    expect(row(cluster.sinfo(), 'gpu-04')).toContain('gpualert: disk replacement by ops'); // ours, marked as ours
    // A node drained by a person (no gpualert marker) is left as it is.
    const manual = await import('node:child_process').then(({ spawnSync }) =>
      spawnSync(cluster.bin('scontrol'), ['update', 'NodeName=gpu-05', 'State=DRAIN', 'Reason=ops: bad fan'], { env: { ...process.env, ...cluster.env } }),
    );
    expect(manual.status).toBe(0);
    const refused = await executor.run(cmd('gpu-05', 'resume'));
    expect(refused).toMatchObject({ outcome: 'failed', retriable: false, error: expect.stringContaining('drained by someone else') });
    expect(row(cluster.sinfo(), 'gpu-05')).toMatch(/drain.*ops: bad fan/);
    await import('node:child_process').then(({ spawnSync }) =>
      spawnSync(cluster.bin('scontrol'), ['update', 'NodeName=gpu-05', 'State=RESUME'], { env: { ...process.env, ...cluster.env } }),
    );
    await resumeAll();
  });

  it('refuses a host name Slurm would read as an option, a list, a path or every node, and changes nothing', async () => {
    for (const host of ['-h', '--help', 'gpu-[01-10]', 'gpu-01,gpu-02', 'ALL', '../gpu-01', 'gpu-01 State=DOWN', 'gpu-01=x']) {
      const outcome = await executor.run(cmd(host, 'drain'));
      expect(outcome).toMatchObject({ outcome: 'failed', retriable: false, error: expect.stringContaining('refused') });
    }
    expect(drained(cluster.sinfo())).toEqual([]);
  });

  it('says a node Slurm does not know is a failure no retry will change', async () => {
    expect(await executor.run(cmd('gpu-99', 'drain'))).toMatchObject({ outcome: 'failed', retriable: false });
  });

  it('reads the partition sizes the breaker needs', async () => {
    const inventory = await executor.inventory();
    expect(inventory.partitions.get('gpu')).toBe(10);
    expect(inventory.partitions.get('small')).toBe(2);
    expect(inventory.hostPartitions.get('gpu-07')).toEqual(['gpu']);
    // sinfo lists a node's partitions in no stated order: both are there, each charged.
    expect([...(inventory.hostPartitions.get('gpu-10') ?? [])].sort()).toEqual(['gpu', 'small']);
  });

  it('with the core: a node in two partitions is charged to both, so the small one stops the next drain', async () => {
    const policy = parsePolicy(
      't.yaml',
      'breaker: { max_share: 0.3, window: 1h }\ndefaults: { approval: { required: false } }\nrules:\n  - { name: bus, match: [\'category="fallen_off_bus"\'], action: drain }\n',
    );
    if (!policy.ok) throw new Error(JSON.stringify(policy.errors));
    const core = new RemediationCore(policy.value, { source: 'test', executor: 'slurm' });
    const inventory = await executor.inventory();
    core.setInventory(inventory.partitions, inventory.hostPartitions);
    const now = Date.parse('2026-06-01T00:00:00Z');
    const phases: string[] = [];
    for (const host of ['gpu-09', 'gpu-10']) {
      const out = core.alert(alert(host), now);
      for (const e of out.envelopes) if (e.type === 'action') phases.push(`${e.host}:${e.data.phase}:${e.data.reason}`);
      await execute(core, out, now);
    }
    expect(phases[0]).toMatch(/^gpu-09:proposed:/);
    expect(phases[1]).toMatch(/^gpu-10:refused:circuit breaker: 1 of 2 hosts of partition "small" already out/);
    const lines = await cluster.waitFor((l) => drained(l).length === 1, 'one node drained');
    expect(drained(lines)).toEqual(['gpu-09']);
    await resumeAll();
  });

  it('with the core: the breaker stops the 4th drain of the 10-node partition at 30 %, and a replay drains nothing twice', async () => {
    const policy = parsePolicy(
      't.yaml',
      'breaker: { max_share: 0.3, window: 1h }\ndefaults: { approval: { required: false } }\nrules:\n  - { name: bus, match: [\'category="fallen_off_bus"\'], action: drain }\n',
    );
    if (!policy.ok) throw new Error(JSON.stringify(policy.errors));
    const core = new RemediationCore(policy.value, { source: 'test', executor: 'slurm' });
    const inventory = await executor.inventory();
    core.setInventory(inventory.partitions, inventory.hostPartitions);
    const now = Date.parse('2026-06-01T00:00:00Z');
    const recording = NODES.slice(0, 5).map((h) => alert(h));
    const phases: string[] = [];
    for (let pass = 0; pass < 2; pass += 1)
      for (const a of recording) {
        const out = core.alert(a, now);
        for (const e of out.envelopes) if (e.type === 'action') phases.push(`${e.host}:${e.data.phase}${e.data.breaker_tripped === true ? ':tripped' : ''}`);
        await execute(core, out, now);
      }
    expect(phases).toEqual(['gpu-01:proposed', 'gpu-02:proposed', 'gpu-03:proposed', 'gpu-04:refused:tripped', 'gpu-05:refused']);
    const lines = await cluster.waitFor((l) => drained(l).length === 3, 'three nodes drained');
    expect(drained(lines)).toEqual(['gpu-01', 'gpu-02', 'gpu-03']);
    await resumeAll();
  });

  it('a controller that is down is retried with backoff and reported, and the drain lands once it is back', async () => {
    const policy = parsePolicy(
      't.yaml',
      'partitions: { gpu: 10 }\nbreaker: { max_share: 0.3, window: 1h }\ndefaults: { approval: { required: false } }\nrules:\n  - { name: bus, match: [\'category="fallen_off_bus"\'], action: drain }\n',
    );
    if (!policy.ok) throw new Error(JSON.stringify(policy.errors));
    const core = new RemediationCore(policy.value, { source: 'test', executor: 'slurm' });
    const t0 = Date.parse('2026-06-01T00:00:00Z');
    await cluster.stopController();
    try {
      const first = core.alert(alert('gpu-08'), t0);
      const [failed] = await execute(core, first, t0);
      const report = failed?.envelopes[0];
      expect(report?.type === 'action.result' && report.data.outcome).toBe('retrying');
      expect(report?.type === 'action.result' && report.data.error).toMatch(/Unable to contact slurm controller|timed out|Socket timed out/i);
      expect(report?.type === 'action.result' && report.data.next_attempt_at).toBe(new Date(t0 + 1_000).toISOString());
    } finally {
      cluster.startController();
    }
    await cluster.waitFor((l) => l.length === NODES.length, 'the controller answering again');
    const retry = core.tick(Date.parse('2026-06-01T00:00:01Z'));
    expect(retry.commands.map((c) => [c.host, c.attempt])).toEqual([['gpu-08', 2]]);
    const [landed] = await execute(core, retry, t0 + 1_000);
    const result = landed?.envelopes[0];
    expect(result?.type === 'action.result' && result.data.outcome).toBe('succeeded');
    const lines = await cluster.waitFor((l) => /drain/.test(row(l, 'gpu-08')), 'gpu-08 drained');
    expect(row(lines, 'gpu-08')).toContain('Xid 79');
    await resumeAll();
  });
});
