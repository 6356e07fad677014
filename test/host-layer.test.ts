import { once } from 'node:events';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { Engine, loadRuleSet, replay } from '@gpualert/engine';
import { startEngineService } from '@gpualert/engine-service';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { parseEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { DEMO_RECORDINGS, playDemo } from '../packages/cli/src/demo-feeder.ts';
import { cleanEnv, runCli, startCli } from './infra/run-cli.ts';
import { waitFor } from './infra/wait-for.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok) throw new Error('the bundled rules do not load');
if (!catalog.ok) throw new Error('the bundled Xid catalog does not load');
const RULES = rules.value;
const CATALOG = catalog.value;
const log = createLogger({ name: 'test', level: 'silent' });

const TOPIC: Partial<Record<Envelope['type'], string>> = {
  'gpu.sample': TOPICS.gpuSamples,
  'kernel.event': TOPICS.kernelEvents,
  'provider.event': TOPICS.providerEvents,
  'host.inventory': TOPICS.hostInventory,
  'host.sample': TOPICS.hostSamples,
  'bmc.event': TOPICS.bmcEvents,
};

/** demo/cooling.jsonl (synthetic, made by tools/make-cooling-demo.ts): a chassis fan fails at minute 25 and two GPUs warm up. */
const LINES = readFileSync(DEMO_RECORDINGS.cooling, 'utf8')
  .split('\n')
  .filter((l) => l !== '');
const ENVELOPES = LINES.map((line) => {
  const parsed = parseEnvelope(line);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return parsed.value;
});

const key = (a: EnvelopeOf<'alert'>) =>
  `${a.ts} ${a.host} ${a.data.rule} ${a.data.fingerprint} ${a.data.status} ${a.data.severity} ${a.data.incident ?? '-'} ${a.data.root_cause ?? '-'}`;

/** The alerts are one cooling incident: the fan's, every GPU alert joined to it with root cause cooling. */
function expectOneCoolingIncident(alerts: EnvelopeOf<'alert'>[]): void {
  const firing = alerts.filter((a) => a.data.status === 'firing');
  const fan = firing.filter((a) => a.data.rule === 'host-fan');
  expect(fan).toHaveLength(1);
  const incident = fan[0]!.data.fingerprint;
  const gpus = firing.filter((a) => a.data.gpu !== undefined);
  expect(new Set(gpus.map((a) => a.data.gpu!.index))).toEqual(new Set([2, 3])); // the test would see them missing
  for (const a of gpus) expect(a.data, a.data.rule).toMatchObject({ incident, root_cause: 'cooling' });
  expect(firing.filter((a) => a.data.fingerprint !== incident && a.data.incident !== incident)).toEqual([]);
}

async function withService<T>(feed: (bus: MemoryBus, store: MemoryStore) => Promise<T>): Promise<EnvelopeOf<'alert'>[]> {
  const bus = new MemoryBus({ partitions: 1 });
  await bus.ensureTopics(Object.values(TOPICS));
  const store = new MemoryStore();
  const alerts: EnvelopeOf<'alert'>[] = [];
  const watch = await bus.consume({
    group: 'watch',
    topics: [TOPICS.alerts],
    handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
  });
  const service = await startEngineService({ bus, store, log, ruleSet: RULES, catalog: CATALOG, clock: 'event', group: 'engine' });
  try {
    await feed(bus, store);
  } finally {
    await service.stop();
    await watch.stop();
    await bus.close();
  }
  return alerts;
}

describe('the cooling incident through the service', () => {
  it('replay and the service on the in-process bus give the same alerts: one cooling incident', async () => {
    const replayed = replay(new Engine(RULES, CATALOG), LINES);
    expectOneCoolingIncident(replayed);
    const alerts = await withService(async (bus, store) => {
      // In recording order, each envelope judged before the next is published (the store holds its offset).
      const offsets = new Map<string, number>();
      for (const envelope of ENVELOPES) {
        const topic = TOPIC[envelope.type]!;
        const offset = offsets.get(topic) ?? 0;
        offsets.set(topic, offset + 1);
        await bus.publish(topic, [envelopeMessage(envelope)]);
        const deadline = Date.now() + 30_000; // generous: a loaded machine judges slowly
        for (;;) {
          const saved = await store.get(`engine:host:${envelope.host}`);
          if (saved && (JSON.parse(saved) as { offsets: Record<string, number> }).offsets[`${topic}/0`] === offset) break;
          if (Date.now() > deadline) throw new Error(`the service did not judge ${envelope.type} ${envelope.id}`);
          await new Promise((r) => setTimeout(r, 1));
        }
      }
    });
    expect(alerts.map(key).sort()).toEqual(replayed.map(key).sort());
  }, 60_000);

  it('`up --demo --demo-recording cooling`: the feeder plays it into the service, judged as one cooling incident', async () => {
    const alerts = await withService(async (bus, store) => {
      // 600 times faster: the hour in six seconds, five minutes of the recording half a second apart.
      expect(await playDemo(bus, CATALOG, 600, () => false, DEMO_RECORDINGS.cooling)).toBe(ENVELOPES.length);
      const last = (type: Envelope['type']) => ENVELOPES.filter((e) => e.type === type).length - 1;
      const deadline = Date.now() + 30_000; // generous: a loaded machine judges slowly
      for (;;) {
        const judged = await judgedUpTo(store, ['gpu-node-000', 'gpu-node-001']);
        if (judged[`${TOPICS.gpuSamples}/0`] === last('gpu.sample') && judged[`${TOPICS.hostSamples}/0`] === last('host.sample')) break;
        if (Date.now() > deadline) throw new Error('the service did not judge the whole recording');
        await new Promise((r) => setTimeout(r, 20));
      }
    });
    expectOneCoolingIncident(alerts);
  }, 60_000);
});

describe('gpualert up --demo --demo-recording cooling', () => {
  it('prints the fan and the two GPUs warming as one incident, root cause cooling; a recording it does not have is refused', async () => {
    const up = startCli(
      ['up', '--demo', '--demo-recording', 'cooling', '--speed', '600', '--data-dir', mkdtempSync(join(tmpdir(), 'gpualert-cooling-'))],
      cleanEnv({ GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1' }),
    );
    try {
      await waitFor(
        () => (up.output().match(/gpu-node-000 GPU \d {2}\[thermal\] {2}GPU \d on gpu-node-000 has run at/g) ?? []).length >= 2,
        'both GPUs too hot',
        30_000,
      );
    } finally {
      up.kill('SIGINT');
    }
    expect((await once(up, 'exit'))[0]).toBe(0);
    const lines = up
      .output()
      .split('\n')
      .filter((l) => /^\d\d:\d\d:\d\d {2}\w+ +gpu-node-/.test(l) && !l.includes('RESOLVED'));
    // The fan opens the incident (a console that names the incident an opener starts names its own).
    const fanLine =
      /ERROR +gpu-node-000 {2}\[thermal\] {2}gpu-node-000: fan FAN3 failed \(0 rpm, health critical\) {2}\((?:incident (\w+), )?root cause cooling\)$/.exec(
        lines[0]!,
      );
    expect(fanLine, lines[0]).not.toBeNull();
    const gpuLines = lines.filter((l) => / GPU \d /.test(l));
    expect(gpuLines.length).toBeGreaterThanOrEqual(4);
    const incidents = new Set(gpuLines.map((l) => /\(incident (\w+), root cause cooling\)$/.exec(l)?.[1]));
    expect(incidents.size).toBe(1);
    expect([...incidents][0]).toMatch(/^\w+$/);
    if (fanLine![1] !== undefined) expect(fanLine![1]).toBe([...incidents][0]);
    expect(lines.filter((l) => !l.includes('gpu-node-000'))).toEqual([]);

    const refused = await runCli(['up', '--demo', '--demo-recording', 'fire']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--demo-recording must be one of incident, cooling\b.* \(got "fire"\)/);
  }, 60_000);
});

/** The highest offset per topic/partition the service has saved as judged, over `hosts`. */
async function judgedUpTo(store: MemoryStore, hosts: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const host of hosts) {
    const saved = await store.get(`engine:host:${host}`);
    if (!saved) continue;
    for (const [position, offset] of Object.entries((JSON.parse(saved) as { offsets: Record<string, number> }).offsets))
      out[position] = Math.max(out[position] ?? -1, offset);
  }
  return out;
}
