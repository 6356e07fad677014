import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, type Envelope, type EnvelopeOf, type JobEventData } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { Engine } from './engine.ts';
import { emptyEngineState, parseFleetState, parseHostState } from './engine-state.ts';
import { MAX_RANKS_PER_JOB, MAX_TRAINING_JOBS } from './job-runs.ts';
import { loadRuleSet } from './load-rules.ts';
import { StreamClock } from './time-policy.ts';
import { hostName, syntheticFleet } from '@gpualert/test-support';

const rules = loadRuleSet();
if (!rules.ok) throw new Error(rules.errors.map(formatRuleError).join('\n'));
const catalog = loadXidCatalog();
if (!catalog.ok) throw new Error('catalog');
const T0 = Date.parse('2026-06-01T00:00:00Z');
const SEC = 1_000;
const MIN = 60_000;
const JOB = '5150';
const ATTRIBUTION = { job: JOB, job_user: 'alice', job_name: 'pretrain' };

function run(envelopes: Envelope[], until?: number) {
  const engine = new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
  const state = emptyEngineState();
  const clock = new StreamClock(engine);
  const alerts: EnvelopeOf<'alert'>[] = [];
  let last = 0;
  for (const envelope of [...envelopes].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts))) {
    last = Math.max(last, Date.parse(envelope.ts));
    alerts.push(...clock.judge(state, envelope));
  }
  for (let t = last + 10 * SEC; until !== undefined && t <= until; t += 10 * SEC) alerts.push(...clock.tick(state, t));
  return { alerts, state };
}

/** Samples of `hosts` hosts × 2 GPUs, all busy with the job (attributed), until `minutes`; `gpu` changes one reading. */
function samples(hosts: number, minutes: number, gpu: (h: number, index: number, t: number) => { util?: number; job?: boolean; gone?: boolean } = () => ({})) {
  return [
    ...syntheticFleet({
      hosts,
      gpusPerHost: 2,
      start: T0,
      minutes,
      seed: 5,
      fault: (h, g, t) => {
        const o = gpu(h, g.index, t);
        if (o.gone) return null;
        return {
          ...g,
          util_pct: o.util ?? 97,
          processes: 1,
          pcie_gen: 5,
          temp_c: 60,
          power_w: 600,
          throttle: [],
          ...(o.job === false ? {} : { job: ATTRIBUTION }),
        };
      },
    }),
  ];
}

const jobEvent = (h: number, t: number, data: Omit<JobEventData, 'job' | 'message'> & { message?: string }): Envelope =>
  newEnvelope({
    type: 'job.event',
    id: `j-${h}-${t}-${data.kind}-${data.rank ?? ''}`,
    host: hostName(h),
    source: 'test',
    ts: new Date(t).toISOString(),
    data: { job: JOB, message: data.kind, ...data },
  });

/** Rank h×2 of each host reports a step (and its time) every 30 s from `from` to `to`. */
function steps(hosts: number, from: number, to: number, ms: (h: number, t: number) => number = () => 3_000): Envelope[] {
  const out: Envelope[] = [];
  for (let t = from, step = 100; t < to; t += 30 * SEC, step += 10) {
    for (let h = 0; h < hosts; h += 1) out.push(jobEvent(h, t + h, { kind: 'step', rank: h * 2, gpu: 0, step, step_time_ms: ms(h, t) }));
  }
  return out;
}

const checkpoints = (minutes: number[], outcome: 'ok' | 'failed' = 'ok') =>
  minutes.map((m) => jobEvent(0, T0 + m * MIN, { kind: 'checkpoint', checkpoint: outcome, rank: 0, gpu: 0 }));
const xid79 = (h: number, t: number, gpu: number): Envelope =>
  newEnvelope({
    type: 'kernel.event',
    id: `x-${h}-${t}`,
    host: hostName(h),
    source: 'test',
    ts: new Date(t).toISOString(),
    data: {
      kind: 'xid',
      xid: 79,
      gpu,
      severity: 'critical',
      message: 'NVRM: Xid (PCI:0000:29:00): 79, GPU has fallen off the bus.',
      meaning: 'GPU has fallen off the bus',
    },
  });
const timeouts = (hosts: number[], t: number) =>
  hosts.map((h) =>
    jobEvent(h, t + h, { kind: 'collective_timeout', rank: h * 2, gpu: 0, message: `[Rank ${h * 2}] Watchdog caught collective operation timeout` }),
  );

const firing = (alerts: EnvelopeOf<'alert'>[], rule?: string) =>
  alerts.filter((a) => a.data.status === 'firing' && (rule === undefined || a.data.rule === rule));
const resolved = (alerts: EnvelopeOf<'alert'>[], rule: string) => alerts.filter((a) => a.data.status === 'resolved' && a.data.rule === rule);

describe('the job layer', () => {
  it('a healthy training job stays silent for an hour: steps, checkpoints every 5 minutes, its GPUs attributed', () => {
    const { alerts, state } = run([
      ...samples(4, 60),
      ...steps(4, T0, T0 + 60 * MIN, (h, t) => 2_950 + ((t / 1000 + h) % 7) * 15),
      ...checkpoints([5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55]),
    ]);
    expect(firing(alerts)).toEqual([]);
    // and it followed the job: its owner from the samples, its step, its checkpoint interval
    const job = Object.values(state.fleet.training!).find((r) => r.labels.job === JOB);
    expect(Object.keys(state.fleet.training!)).toHaveLength(1); // one job, keyed by its id and owner
    expect(job?.labels).toMatchObject({ job: JOB, job_user: 'alice' });
    expect(job?.step).toBe(100 + 119 * 10);
    expect(Math.round(job!.checkpoint!.every! / MIN)).toBe(5);
  });

  it("a GPU fault judged after its ranks' timeouts (the topics come in any order) is still one incident: they wait `grace` for it", () => {
    const fault = T0 + 20 * MIN;
    const { alerts } = run(
      [
        ...samples(3, 30, (h, g, t) => ({ gone: h === 1 && g === 1 && t >= fault })),
        ...steps(3, T0, fault),
        ...checkpoints([5, 10, 15]),
        ...timeouts([0, 2], fault - 30 * SEC),
        xid79(1, fault, 1),
      ],
      T0 + 30 * MIN,
    );
    const root = firing(alerts, 'job-gpu-fault').filter((a) => a.data.severity === 'error');
    expect(root).toHaveLength(1);
    expect(root[0]!.data.summary).toMatch(
      /^Job 5150 \(alice\) lost GPU 1 on gpu-node-001 \(Xid 79: GPU has fallen off the bus\) at step \d+; 5 min of work since its last checkpoint/,
    );
    const incident = root[0]!.data.incident ?? root[0]!.data.fingerprint;
    const ranks = firing(alerts, 'job-gpu-fault').filter((a) => a.host !== 'gpu-node-001');
    expect(ranks.map((a) => a.host).sort()).toEqual(['gpu-node-000', 'gpu-node-002']);
    for (const a of ranks) expect(a.data).toMatchObject({ severity: 'info', incident });
    for (const a of ranks) expect(a.labels).toMatchObject({ job: JOB, job_user: 'alice' });
    for (const a of ranks) expect(a.data.evidence.length).toBeGreaterThan(0); // the timeouts it waited with
  });

  it("collective timeouts with no GPU fault fire on their own after `grace`, as the job's problem", () => {
    const at = T0 + 20 * MIN;
    const { alerts } = run([...samples(3, 30), ...steps(3, T0, at), ...timeouts([0, 1, 2], at)], T0 + 30 * MIN);
    const own = firing(alerts, 'job-gpu-fault');
    expect(own.map((a) => a.host).sort()).toEqual(['gpu-node-000', 'gpu-node-001', 'gpu-node-002']);
    for (const a of own) {
      expect(a.data.severity).toBe('error');
      expect(a.data.summary).toContain('no GPU fault found');
      expect(Date.parse(a.ts) - at).toBeGreaterThanOrEqual(2 * MIN);
    }
  });

  it('a failed checkpoint fires until the next one is written; a job past 3 times its own interval without one is overdue', () => {
    const { alerts } = run(
      [...samples(2, 60), ...steps(2, T0, T0 + 60 * MIN), ...checkpoints([5, 10, 15]), ...checkpoints([20], 'failed'), ...checkpoints([40])],
      T0 + 60 * MIN,
    );
    const failed = firing(alerts, 'job-checkpoint').filter((a) => a.data.summary.includes('failed to write'));
    expect(failed).toHaveLength(1);
    expect(Date.parse(failed[0]!.ts)).toBe(T0 + 20 * MIN);
    const overdue = firing(alerts, 'job-checkpoint').filter((a) => a.data.summary.includes('no checkpoint for'));
    expect(overdue).toHaveLength(1);
    expect(Date.parse(overdue[0]!.ts) - (T0 + 15 * MIN)).toBeGreaterThan(15 * MIN); // 3 × 5 min after the last good one
    expect(Date.parse(overdue[0]!.ts) - (T0 + 15 * MIN)).toBeLessThanOrEqual(15 * MIN + 20 * SEC);
    expect(overdue[0]!.labels.job_user).toBe('alice');
    expect(
      resolved(alerts, 'job-checkpoint')
        .map((a) => a.ts)
        .sort(),
    ).toEqual([new Date(T0 + 40 * MIN).toISOString(), new Date(T0 + 40 * MIN).toISOString()]);
  });

  it('a job whose steps take 1.7 times its own baseline is slower than it used to be; a straggler rank is named on its own host and GPU', () => {
    const slow = T0 + 20 * MIN;
    const whole = run([...samples(4, 50), ...steps(4, T0, T0 + 50 * MIN, (_, t) => (t >= slow ? 5_100 : 3_000))], T0 + 50 * MIN);
    const regressed = firing(whole.alerts, 'job-step-time');
    expect(regressed).toHaveLength(1);
    expect(regressed[0]!.data.summary).toContain('against its own 3000 ms');
    expect(firing(whole.alerts, 'job-straggler-rank')).toEqual([]); // all ranks slowed together: no straggler

    const one = run([...samples(4, 50), ...steps(4, T0, T0 + 50 * MIN, (h, t) => (h === 3 && t >= slow ? 4_500 : 3_000))], T0 + 50 * MIN);
    const straggler = firing(one.alerts, 'job-straggler-rank');
    expect(straggler).toHaveLength(1);
    expect(straggler[0]).toMatchObject({ host: 'gpu-node-003', data: { gpu: { index: 0 } } });
    expect(straggler[0]!.data.summary).toContain("rank 6 takes 4500 ms a step against its peers' 3000 ms");
  });

  it('a job stalled while its processes live is one job alert, not a stuck-job alert per idle GPU; a GPU whose job reports nothing keeps stuck-job', () => {
    const stall = T0 + 10 * MIN;
    const { alerts } = run(
      [...samples(2, 40, (h, g, t) => ({ util: t >= stall ? 0 : 97, job: !(h === 1 && g === 1) })), ...steps(2, T0, stall)],
      T0 + 40 * MIN,
    );
    const stalled = firing(alerts, 'job-stalled');
    expect(stalled).toHaveLength(1);
    expect(stalled[0]).toMatchObject({ host: 'gpu-node-000', labels: { job: JOB, job_user: 'alice' } });
    expect(Date.parse(stalled[0]!.ts) - stall).toBeGreaterThanOrEqual(15 * MIN - 30 * SEC); // 15 minutes after its last step
    // stuck-job: only the GPU no job is attributed to (it would fire for every idle GPU otherwise)
    expect(firing(alerts, 'stuck-job').map((a) => `${a.host}/${a.data.gpu?.index}`)).toEqual(['gpu-node-001/1']);
  });

  it("a job, user or rank named like an object's member is only data: `__proto__`, `constructor`, `toString`", () => {
    const names = ['__proto__', 'constructor', 'toString'];
    const envelopes: Envelope[] = [];
    for (const [i, job] of names.entries()) {
      for (const kind of ['step', 'collective_timeout'] as const) {
        envelopes.push(
          newEnvelope({
            type: 'job.event',
            id: `h-${i}-${kind}`,
            host: hostName(0),
            source: 'test',
            ts: new Date(T0 + i * SEC).toISOString(),
            data: { job, kind, rank: 1_048_575, step: 7, message: kind },
          }),
        );
      }
    }
    const { state, alerts } = run(envelopes, T0 + 10 * MIN);
    expect(Object.keys(state.fleet.training!).sort()).toEqual([...names].sort());
    expect(state.fleet.training!.__proto__!.ranks['1048575']).toMatchObject({ step: 7 });
    expect(({} as Record<string, unknown>).step).toBeUndefined();
    // each job's unexplained timeout is its own alert, and names it
    expect(
      firing(alerts, 'job-gpu-fault')
        .map((a) => a.labels.job)
        .sort(),
    ).toEqual([...names].sort());
  });

  it('an engine restarted between the fault and the timeouts (state saved as JSON and loaded) links them as one that never stopped', () => {
    const fault = T0 + 20 * MIN;
    const envelopes = [
      ...samples(3, 30, (h, g, t) => ({ gone: h === 1 && g === 1 && t >= fault })),
      ...steps(3, T0, fault),
      ...checkpoints([5, 10, 15]),
      xid79(1, fault, 1),
      ...timeouts([0, 2], fault + 2 * MIN),
    ].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
    const engine = new Engine(rules.ok ? rules.value : (undefined as never), catalog.ok ? catalog.value : (undefined as never));
    const judge = (restartAt: number | undefined) => {
      let state = emptyEngineState();
      let clock = new StreamClock(engine);
      const alerts: EnvelopeOf<'alert'>[] = [];
      for (const envelope of envelopes) {
        if (restartAt !== undefined && Date.parse(envelope.ts) >= restartAt) {
          const hosts = Object.fromEntries(Object.entries(state.hosts).map(([name, host]) => [name, parseHostState(JSON.stringify(host))!]));
          state = { hosts, fleet: parseFleetState(JSON.stringify(state.fleet)) };
          clock = new StreamClock(engine, 'event', undefined, clock.now);
          restartAt = undefined;
        }
        alerts.push(...clock.judge(state, envelope));
      }
      return alerts.map((a) => `${a.ts} ${a.host} ${a.data.rule} ${a.data.status} ${a.data.severity} ${a.data.incident ?? '-'} ${a.labels.job_user ?? '-'}`);
    };
    const straight = judge(undefined);
    expect(straight.filter((k) => k.includes(' job-gpu-fault firing info '))).toHaveLength(2); // the test would see them missing
    expect(judge(fault + MIN)).toEqual(straight);
  });

  it('the job state is bounded and persisted with a schema: jobs past the bound are forgotten, a bad entry is dropped on load', () => {
    const envelopes: Envelope[] = [];
    for (let j = 0; j < MAX_TRAINING_JOBS + 10; j += 1) {
      envelopes.push(
        newEnvelope({
          type: 'job.event',
          id: `b-${j}`,
          host: hostName(0),
          source: 'test',
          ts: new Date(T0 + j * SEC).toISOString(),
          data: { job: `j${j}`, kind: 'step', step: 1, message: 'step' },
        }),
      );
    }
    const { state } = run(envelopes);
    const jobs = Object.keys(state.fleet.training!);
    expect(jobs.length).toBeLessThanOrEqual(MAX_TRAINING_JOBS);
    expect(jobs.length).toBeGreaterThan(MAX_TRAINING_JOBS * 0.8); // the stalest tenth goes at once when full
    expect(jobs).not.toContain('j0'); // the least recently heard went
    expect(jobs).toContain(`j${MAX_TRAINING_JOBS + 9}`);
    expect(state.hosts[hostName(0)]!.jobs!.length).toBeLessThanOrEqual(64);
    const saved = JSON.parse(JSON.stringify(state.fleet)) as { training: Record<string, unknown> };
    saved.training.j5 = { labels: {}, heard: 'yesterday' };
    const notes: string[] = [];
    const loaded = parseFleetState(JSON.stringify(saved), (n) => notes.push(n));
    expect(Object.keys(loaded.training!)).toHaveLength(jobs.length);
    expect(loaded.training!.j5).toBeUndefined();
    expect(loaded.training!.j500).toMatchObject({ step: 1, home: hostName(0) });
    expect(notes).toEqual(['training."j5" does not check: dropped']);
  });
});

describe('the job layer: what the second attack found', () => {
  const ALICE = { job: JOB, job_user: 'alice', job_name: 'pretrain' };
  const BOB = { job: JOB, job_user: 'bob', job_name: 'other', namespace: 'team-b' };
  /** Hosts × 2 GPUs busy with a job, each host attributed to `owner(h)`; `gone` drops a GPU. */
  const owned = (hosts: number, minutes: number, owner: (h: number) => object, gone: (h: number, g: number, t: number) => boolean = () => false) => [
    ...syntheticFleet({
      hosts,
      gpusPerHost: 2,
      start: T0,
      minutes,
      seed: 5,
      fault: (h, g, t) =>
        gone(h, g.index, t) ? null : { ...g, util_pct: 97, processes: 1, pcie_gen: 5, temp_c: 60, power_w: 600, throttle: [], job: owner(h) as never },
    }),
  ];
  /** Each of `hosts` reports rank h×2's step every 30 s over [from, to), from `step` on. */
  const stepsFrom = (hosts: number[], from: number, to: number, step: number) => {
    const out: Envelope[] = [];
    for (let t = from; t < to; t += 30 * SEC, step += 10)
      for (const h of hosts) out.push(jobEvent(h, t + h, { kind: 'step', rank: h * 2, gpu: 0, step, step_time_ms: 3_000 }));
    return out;
  };

  it("one job id in two owners' hands (alice; bob in team-b) is two jobs: alice's dead GPU neither names bob nor explains bob's own timeout", () => {
    const fault = T0 + 20 * MIN;
    const { alerts, state } = run(
      [
        ...owned(
          4,
          40,
          (h) => (h < 2 ? ALICE : BOB),
          (h, g, t) => h === 0 && g === 1 && t >= fault,
        ),
        ...stepsFrom([3, 2, 1, 0], T0, fault, 100),
        xid79(0, fault, 1),
        jobEvent(2, fault + 10 * MIN, { kind: 'collective_timeout', rank: 4, gpu: 0, message: '[Rank 4] Watchdog caught collective operation timeout' }),
      ],
      T0 + 40 * MIN,
    );
    const root = firing(alerts, 'job-gpu-fault').filter((a) => a.host === 'gpu-node-000');
    expect(root).toHaveLength(1);
    expect(root[0]!.labels).toMatchObject({ job: JOB, job_user: 'alice' });
    expect(root[0]!.labels.namespace).toBeUndefined();
    const bobs = firing(alerts, 'job-gpu-fault').filter((a) => a.host === 'gpu-node-002');
    expect(bobs).toHaveLength(1);
    expect(bobs[0]).toMatchObject({ labels: { job_user: 'bob', namespace: 'team-b' }, data: { severity: 'error' } });
    expect(bobs[0]!.data.summary).toContain('no GPU fault found');
    expect(
      Object.values(state.fleet.training!)
        .map((r) => r.labels.job_user)
        .sort(),
    ).toEqual(['alice', 'bob']);
  });

  it("the same job id of the same user in two clusters is two jobs: one cluster's dead GPU does not explain the other's timeout", () => {
    const fault = T0 + 20 * MIN;
    const other = (e: Envelope): Envelope => ({ ...e, host: `b-${e.host}`, ...(e.labels ? { labels: { ...e.labels, cluster: 'b' } } : {}) }) as Envelope;
    const { alerts, state } = run(
      [
        ...owned(
          2,
          40,
          () => ALICE,
          (h, g, t) => h === 0 && g === 1 && t >= fault,
        ),
        ...stepsFrom([0, 1], T0, fault, 100),
        xid79(0, fault, 1),
        ...[
          ...syntheticFleet({
            hosts: 2,
            gpusPerHost: 2,
            start: T0,
            minutes: 40,
            seed: 5,
            cluster: 'b',
            fault: (_h, g) => ({ ...g, util_pct: 97, processes: 1, job: ALICE }),
          }),
        ].map(other),
        ...stepsFrom([0, 1], T0, fault, 100).map(other),
        other(jobEvent(1, fault + 10 * MIN, { kind: 'collective_timeout', rank: 2, gpu: 0, message: '[Rank 2] Watchdog caught collective operation timeout' })),
      ],
      T0 + 40 * MIN,
    );
    expect(
      Object.values(state.fleet.training!)
        .map((r) => r.labels.cluster)
        .sort(),
    ).toEqual(['b', 'lab']);
    const theirs = firing(alerts, 'job-gpu-fault').filter((a) => a.host === 'b-gpu-node-001');
    expect(theirs).toHaveLength(1);
    expect(theirs[0]!.data).toMatchObject({ severity: 'error' });
    expect(theirs[0]!.data.summary).toContain('no GPU fault found');
  });

  it("a restart ends the fault's window: a collective timeout 30 minutes after the job restarted is its own problem, not the old GPU's", () => {
    const fault = T0 + 20 * MIN;
    const { alerts } = run(
      [
        ...owned(
          4,
          70,
          () => ALICE,
          (h, g, t) => h === 0 && g === 1 && t >= fault,
        ),
        ...stepsFrom([0, 1, 2, 3], T0, fault, 100),
        xid79(0, fault, 1),
        jobEvent(2, fault + 5 * MIN, { kind: 'restart', rank: 0 }),
        ...stepsFrom([2, 3], fault + 6 * MIN, T0 + 70 * MIN, 100),
        jobEvent(3, T0 + 55 * MIN, { kind: 'collective_timeout', rank: 6, gpu: 0, message: '[Rank 6] Watchdog caught collective operation timeout' }),
      ],
      T0 + 70 * MIN,
    );
    const late = firing(alerts, 'job-gpu-fault').filter((a) => Date.parse(a.ts) >= T0 + 55 * MIN);
    expect(late).toHaveLength(1);
    expect(late[0]!.data).toMatchObject({ severity: 'error' });
    expect(late[0]!.data.summary).toContain('no GPU fault found');
  });

  it("a job restarted from its checkpoint (its steps go back 20 minutes' worth) is making progress, not stalled", () => {
    const { alerts } = run(
      [
        ...owned(2, 90, () => ALICE),
        ...stepsFrom([0, 1], T0, T0 + 40 * MIN, 0),
        jobEvent(0, T0 + 40 * MIN + 10 * SEC, { kind: 'restart', rank: 0, message: 'resuming from checkpoint' }),
        ...stepsFrom([0, 1], T0 + 41 * MIN, T0 + 90 * MIN, 400),
      ],
      T0 + 90 * MIN,
    );
    expect(firing(alerts, 'job-stalled')).toEqual([]);
    // with no restart event, the step going back is the restart
    const quiet = run(
      [...owned(2, 90, () => ALICE), ...stepsFrom([0, 1], T0, T0 + 40 * MIN, 0), ...stepsFrom([0, 1], T0 + 41 * MIN, T0 + 90 * MIN, 400)],
      T0 + 90 * MIN,
    );
    expect(firing(quiet.alerts, 'job-stalled')).toEqual([]);
    // (and a job that really stops after going back does page: the test would see it)
    const stopped = run(
      [...owned(2, 90, () => ALICE), ...stepsFrom([0, 1], T0, T0 + 40 * MIN, 0), ...stepsFrom([0, 1], T0 + 41 * MIN, T0 + 50 * MIN, 400)],
      T0 + 90 * MIN,
    );
    expect(firing(stopped.alerts, 'job-stalled')).toHaveLength(1);
  });

  it('one checkpoint its 4 ranks report 12 s apart is one checkpoint: a job saving every 10 minutes is not overdue', () => {
    const events = [...owned(4, 60, () => ALICE), ...stepsFrom([0, 1, 2, 3], T0, T0 + 60 * MIN, 0)];
    for (let m = 10; m < 60; m += 10)
      for (let h = 0; h < 4; h += 1) events.push(jobEvent(h, T0 + m * MIN + h * 12 * SEC, { kind: 'checkpoint', checkpoint: 'ok', rank: h * 2 }));
    const { alerts, state } = run(events, T0 + 60 * MIN);
    expect(firing(alerts, 'job-checkpoint')).toEqual([]);
    const [only] = Object.values(state.fleet.training!);
    expect(Math.round(only!.checkpoint!.every! / MIN)).toBe(10);
    // and it is overdue 3 intervals after the last one (the test would see the alert)
    const late = run(
      events.filter((e) => Date.parse(e.ts) < T0 + 30 * MIN || e.type !== 'job.event' || (e.data as JobEventData).kind !== 'checkpoint'),
      T0 + 70 * MIN,
    );
    expect(firing(late.alerts, 'job-checkpoint').filter((a) => a.data.summary.includes('no checkpoint for'))).toHaveLength(1);
  });

  it("a job's events before a sample names its owner, and after its processes are gone, are still that one job", () => {
    const early = stepsFrom([0, 1], T0 - 2 * MIN, T0, 0); // before any sample attributes the GPUs
    const gone = T0 + 20 * MIN;
    const { state } = run(
      [
        ...early,
        ...owned(2, 30, () => ALICE).filter((e) => Date.parse(e.ts) < gone),
        ...stepsFrom([0, 1], T0, gone, 40),
        ...samples(2, 30, () => ({ job: false })).filter((e) => Date.parse(e.ts) >= gone), // the processes have exited: no attribution
        jobEvent(0, gone + MIN, { kind: 'exit', rank: 0, exit_code: 1 }),
      ],
      T0 + 30 * MIN,
    );
    const runs = Object.values(state.fleet.training!);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.labels).toMatchObject({ job: JOB, job_user: 'alice' });
    expect(runs[0]!.exited).toBe(gone + MIN);
  });

  it('a job of 100,000 ranks keeps at most MAX_RANKS_PER_JOB of them, the most recently heard', () => {
    const events: Envelope[] = [];
    const n = MAX_RANKS_PER_JOB * 3;
    for (let r = 0; r < n; r += 1)
      events.push(
        newEnvelope({
          type: 'job.event',
          id: `r-${r}`,
          host: hostName(0),
          source: 'test',
          ts: new Date(T0 + r).toISOString(),
          data: { job: JOB, kind: 'step', rank: r, step: 1, step_time_ms: 1_000, message: 'step' },
        }),
      );
    const { state } = run(events);
    const ranks = Object.keys(Object.values(state.fleet.training!)[0]!.ranks);
    expect(ranks.length).toBeLessThanOrEqual(MAX_RANKS_PER_JOB);
    expect(ranks.length).toBeGreaterThan(MAX_RANKS_PER_JOB / 2);
    expect(ranks).toContain(String(n - 1));
    expect(ranks).not.toContain('0');
  });
});
