import { readFileSync } from 'node:fs';
import { MemoryBus } from '@gpualert/bus';
import { Engine, loadRuleSet, replay } from '@gpualert/engine';
import { startEngineService } from '@gpualert/engine-service';
import { createLogger } from '@gpualert/log';
import { emptyNotifierState, NotifierCore, RoutesFile, type Decision } from '@gpualert/notify';
import { loadXidCatalog } from '@gpualert/rules';
import { parseEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { DEMO_RECORDINGS, playDemo } from '../packages/cli/src/demo-feeder.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const RULE_SET = rules.value;
const CATALOG = catalog.value;
const log = createLogger({ name: 'test', level: 'silent' });

/**
 * demo/job-incident.jsonl (synthetic, made by tools/make-job-demo.ts): Slurm job 73012 of mchen on
 * four hosts, 16 ranks; GPU 1 of train-node-002 falls off the bus at 03:14:20 (step 1280, the
 * last checkpoint at step 1230 at 03:11:35); two minutes on, the 15 other ranks' watchdogs catch
 * the collective timeout.
 */
const LINES = readFileSync(DEMO_RECORDINGS.job, 'utf8')
  .split('\n')
  .filter((l) => l !== '');
const ENVELOPES = LINES.map((line) => {
  const parsed = parseEnvelope(line);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
});
const OWNER = 'mchen';
const OTHER_HOSTS = ['train-node-000', 'train-node-001', 'train-node-003'];

/** The owner's alerts are one incident, rooted at the failed GPU, naming the job, the step and the work at risk. */
function expectOneJobIncident(alerts: EnvelopeOf<'alert'>[]): void {
  const owners = alerts.filter((a) => a.data.status === 'firing' && a.labels.job_user === OWNER);
  const roots = owners.filter((a) => a.data.rule === 'job-gpu-fault' && a.data.severity === 'error');
  expect(roots).toHaveLength(1);
  const root = roots[0]!;
  expect(root.host).toBe('train-node-002');
  expect(root.data.gpu?.index).toBe(1);
  expect(root.labels.job).toBe('73012');
  expect(root.data.summary).toBe(
    'Job 73012 (mchen) lost GPU 1 on train-node-002 (Xid 79: GPU has fallen off the bus) at step 1280; 3 min of work since its last checkpoint (step 1230) at risk',
  );
  const incident = root.data.incident ?? root.data.fingerprint;
  // Every alert the owner's labels carry belongs to it: the GPU's own and each other host's ranks' timeouts.
  for (const a of owners) expect(a.data.incident ?? a.data.fingerprint, `${a.host} ${a.data.rule}: ${a.data.summary}`).toBe(incident);
  const ranks = owners.filter((a) => OTHER_HOSTS.includes(a.host));
  expect([...new Set(ranks.map((a) => a.host))].sort()).toEqual(OTHER_HOSTS); // the test would see them missing
  for (const a of ranks) expect(a.data).toMatchObject({ severity: 'info', incident, rule: 'job-gpu-fault' });
  for (const a of ranks) expect(a.data.summary).toContain('caused by GPU 1 on train-node-002');
  // Nothing above info that is not the failed GPU's.
  expect(owners.filter((a) => a.data.severity !== 'info' && (a.host !== 'train-node-002' || a.data.gpu?.index !== 1))).toEqual([]);
}

/** What the owner's route tells, through the notifier's own decisions: a route for the job's owner, grouped by job. */
function ownerNotifications(alerts: EnvelopeOf<'alert'>[]): string[][] {
  const config = RoutesFile.parse({
    receivers: [
      { name: 'ops', webhook_configs: [{ url: 'http://127.0.0.1:9/ops' }] },
      { name: 'owner', webhook_configs: [{ url: 'http://127.0.0.1:9/owner' }] },
    ],
    route: {
      receiver: 'ops',
      group_by: ['host'],
      group_wait: '30s',
      group_interval: '5m',
      routes: [{ matchers: [`job_user="${OWNER}"`, 'severity!="info"'], receiver: 'owner', group_by: ['job'] }],
    },
  });
  const core = new NotifierCore(config);
  const state = emptyNotifierState();
  const sent: string[][] = [];
  const note = (decisions: Decision[]) => {
    for (const d of decisions) if ('send' in d && d.send.receiver === 'owner') sent.push(d.send.alerts.map((a) => a.summary));
  };
  const ordered = [...alerts].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
  let clock = Date.parse(ordered[0]!.ts);
  for (const alert of ordered) {
    for (; clock < Date.parse(alert.ts); clock += 10_000) note(core.flush(state, clock));
    note(core.ingest(state, alert, Date.parse(alert.ts)));
  }
  for (let t = clock; t <= clock + 30 * 60_000; t += 10_000) note(core.flush(state, t));
  return sent;
}

async function withService(feed: (bus: MemoryBus, store: MemoryStore) => Promise<void>): Promise<EnvelopeOf<'alert'>[]> {
  const bus = new MemoryBus({ partitions: 1 });
  await bus.ensureTopics(Object.values(TOPICS));
  const store = new MemoryStore();
  const alerts: EnvelopeOf<'alert'>[] = [];
  const watch = await bus.consume({
    group: 'watch',
    topics: [TOPICS.alerts],
    handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
  });
  const service = await startEngineService({ bus, store, log, ruleSet: RULE_SET, catalog: CATALOG, clock: 'event', group: 'engine' });
  try {
    await feed(bus, store);
  } finally {
    await service.stop();
    await watch.stop();
    await bus.close();
  }
  return alerts;
}

/** The highest offset per topic/partition the service has saved as judged, over every host. */
async function judgedUpTo(store: MemoryStore): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const host of ['train-node-000', 'train-node-001', 'train-node-002', 'train-node-003']) {
    const saved = await store.get(`engine:host:${host}`);
    if (!saved) continue;
    for (const [position, offset] of Object.entries((JSON.parse(saved) as { offsets: Record<string, number> }).offsets))
      out[position] = Math.max(out[position] ?? -1, offset);
  }
  return out;
}

describe('the job layer on the demo recording: a 4-host training job loses a GPU', () => {
  it('replay: the owner gets one incident naming the failed GPU, the job, the step and the work at risk', () => {
    const alerts = replay(new Engine(RULE_SET, CATALOG), LINES);
    expectOneJobIncident(alerts);
    // ...and is told once: one notification on a route for the owner grouped by job.
    const told = ownerNotifications(alerts);
    expect(told).toHaveLength(1);
    expect(told[0]![0]).toContain('Job 73012 (mchen) lost GPU 1 on train-node-002');
  });

  it('`up --demo --demo-recording job`: the feeder plays it into the engine service, judged as the same one incident', async () => {
    const count = (type: Envelope['type']) => ENVELOPES.filter((e) => e.type === type).length;
    const alerts = await withService(async (bus, store) => {
      // 600 times faster: the 20 minutes in two seconds.
      expect(await playDemo(bus, CATALOG, 600, () => false, DEMO_RECORDINGS.job)).toBe(ENVELOPES.length);
      const deadline = Date.now() + 30_000; // generous: a loaded machine judges slowly
      for (;;) {
        const judged = await judgedUpTo(store);
        if (judged[`${TOPICS.gpuSamples}/0`] === count('gpu.sample') - 1 && judged[`${TOPICS.jobEvents}/0`] === count('job.event') - 1) break;
        if (Date.now() > deadline) throw new Error('the service did not judge the whole recording');
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    expectOneJobIncident(alerts);
    expect(ownerNotifications(alerts)).toHaveLength(1);
  }, 60_000);
});
