import { DEADLETTER_HEADERS, envelopeMessage, MemoryBus } from '@gpualert/bus';
import { loadRuleSet } from '@gpualert/engine';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { syntheticFleet } from '@gpualert/test-support';
import { describe, expect, it } from 'vitest';
import { startEngineService } from './engine-service.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const ruleSet = rules.value;
const xids = catalog.value;
const log = createLogger({ name: 'test', level: 'silent' });
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;

/** Runs gpu.samples through the service on the event clock; the alerts and dead letters it published. */
async function throughService(envelopes: Envelope[]): Promise<{ alerts: EnvelopeOf<'alert'>[]; reasons: string[] }> {
  const bus = new MemoryBus({ partitions: 1 });
  await bus.ensureTopics(Object.values(TOPICS));
  const store = new MemoryStore();
  const alerts: EnvelopeOf<'alert'>[] = [];
  const reasons: string[] = [];
  const watch = await bus.consume({
    group: 'watch',
    topics: [TOPICS.alerts, TOPICS.deadletter],
    handler: async (b) => {
      for (const item of b.items) {
        if (b.topic === TOPICS.deadletter) reasons.push(item.message.headers?.[DEADLETTER_HEADERS.reason] ?? '');
        else if (item.envelope.type === 'alert') alerts.push(item.envelope);
      }
    },
  });
  const service = await startEngineService({ bus, store, log, ruleSet, catalog: xids, clock: 'event', group: 'engine' });
  await bus.publish(TOPICS.gpuSamples, envelopes.map(envelopeMessage));
  // One partition, in order: the last envelope's host saved at its offset means all were judged.
  const last = envelopes.at(-1)!;
  const deadline = Date.now() + 20_000;
  for (;;) {
    const saved = await store.get(`engine:host:${last.host}`);
    if (saved && (JSON.parse(saved) as { offsets: Record<string, number> }).offsets[`${TOPICS.gpuSamples}/0`] === envelopes.length - 1) break;
    if (Date.now() > deadline) throw new Error('the service did not judge the recording');
    await new Promise((r) => setTimeout(r, 5));
  }
  await service.stop();
  await watch.stop();
  await bus.close();
  return { alerts, reasons };
}

describe('the service on the event clock and a sample dated 9999', () => {
  it('dead-letters it with its reason and calls no host absent; a host that does go silent is still seen', async () => {
    const samples = [...syntheticFleet({ hosts: 3, gpusPerHost: 1, start: T0, minutes: 12, seed: 5 })].filter(
      (e): e is EnvelopeOf<'gpu.sample'> => e.type === 'gpu.sample',
    );
    const middle = samples.findIndex((e) => Date.parse(e.ts) >= T0 + 6 * MIN);
    const wild = newEnvelope({ ...samples[middle]!, id: 'wild', ts: '9999-12-31T23:59:59Z' });
    const { alerts, reasons } = await throughService([...samples.slice(0, middle), wild, ...samples.slice(middle)]);
    expect(reasons).toEqual([expect.stringMatching(/^ts: expected at most 15 min after the stream's event clock .*got 9999-12-31T23:59:59Z/)]);
    expect(alerts.filter((a) => a.data.rule === 'host-absent')).toEqual([]);

    // The same service sees a host that really stops: the check above could fail.
    const quiet = samples.filter((e) => e.host !== 'gpu-node-002' || Date.parse(e.ts) < T0 + 4 * MIN);
    const seen = await throughService(quiet);
    expect([...new Set(seen.alerts.filter((a) => a.data.rule === 'host-absent' && a.data.status === 'firing').map((a) => a.host))]).toEqual(['gpu-node-002']);
  }, 60_000);
});
