import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { Engine, loadRuleSet, replay } from '@gpualert/engine';
import { syntheticFleet } from '@gpualert/test-support';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { startEngineService } from './engine-service.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const log = createLogger({ name: 'test', level: 'silent' });
const T0 = Date.parse('2026-06-01T00:00:00Z');
const MIN = 60_000;
const iso = (t: number) => new Date(t).toISOString();

const TOPIC: Partial<Record<Envelope['type'], string>> = {
  'gpu.sample': TOPICS.gpuSamples,
  'kernel.event': TOPICS.kernelEvents,
  'provider.event': TOPICS.providerEvents,
  'host.inventory': TOPICS.hostInventory,
};

/**
 * A synthetic recording (made here, not captured): four hosts for 45 minutes, in which
 * gpu-node-003 stops reporting at minute 10, gpu-node-001 has a provider maintenance window
 * announced, GPU 0 of gpu-node-002 runs 25 °C above its own normal from minute 15, and GPU 1 of
 * gpu-node-000 logs Xid 31 three times in three minutes.
 */
function recording(): Envelope[] {
  const out: Envelope[] = [];
  for (const e of syntheticFleet({ hosts: 4, gpusPerHost: 2, start: T0, minutes: 45, seed: 11 })) {
    const at = Date.parse(e.ts);
    if (e.type === 'gpu.sample' && e.host === 'gpu-node-003' && at >= T0 + 10 * MIN) continue;
    if (e.type === 'gpu.sample' && e.host === 'gpu-node-002' && at >= T0 + 15 * MIN) {
      out.push({ ...e, data: { ...e.data, gpus: e.data.gpus.map((g) => (g.index === 0 && g.temp_c !== null ? { ...g, temp_c: g.temp_c + 25 } : g)) } });
      continue;
    }
    out.push(e);
  }
  for (const [i, minute] of [6, 7, 8].entries()) {
    out.push(
      newEnvelope({
        type: 'kernel.event',
        id: `xid-${i}`,
        host: 'gpu-node-000',
        source: 'test',
        ts: iso(T0 + minute * MIN + 5_000),
        data: {
          kind: 'xid',
          xid: 31,
          gpu: 1,
          severity: 'warning',
          message: 'NVRM: Xid (PCI:0000:1b:00): 31, pid=1234, name=python, Ch 00000008, MMU Fault',
          meaning: 'GPU memory page fault',
        },
      }),
    );
  }
  for (const [status, minute] of [
    ['scheduled', 4],
    ['completed', 30],
  ] as const) {
    out.push(
      newEnvelope({
        type: 'provider.event',
        id: `maint-${status}`,
        host: 'gpu-node-001',
        source: 'test',
        ts: iso(T0 + minute * MIN + 2_000),
        data: {
          provider: 'aws',
          event_id: 'instance-event-1',
          kind: 'maintenance',
          status,
          hosts: ['gpu-node-001'],
          window_start: iso(T0 + 20 * MIN),
          window_end: iso(T0 + 25 * MIN),
          description: 'system maintenance',
          raw_id: 'instance-event-1',
        },
      }),
    );
  }
  return out.sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
}

const key = (a: EnvelopeOf<'alert'>) => `${a.ts} ${a.host} ${a.data.rule} ${a.data.fingerprint} ${a.data.status} ${a.data.severity}`;

describe('one time policy', () => {
  it('a recording gives the same alerts through `replay` and through the service on the in-process bus (clock: event)', async () => {
    const envelopes = recording();
    const replayed = replay(
      new Engine(rules.value, catalog.value),
      envelopes.map((e) => JSON.stringify(e)),
    )
      .map(key)
      .sort();
    // The recording shows all four: the test would see them go missing.
    for (const rule of ['host-absent', 'provider-maintenance', 'gpu-temp-baseline', 'kernel-event']) {
      expect(
        replayed.filter((k) => k.includes(` ${rule} `) && k.includes(' firing ')),
        rule,
      ).not.toEqual([]);
    }
    expect(replayed.filter((k) => k.includes(' kernel-event ') && k.endsWith(' firing error'))).toHaveLength(1); // the burst escalated

    const bus = new MemoryBus({ partitions: 1 });
    await bus.ensureTopics(Object.values(TOPICS));
    const store = new MemoryStore();
    const alerts: EnvelopeOf<'alert'>[] = [];
    const watch = await bus.consume({
      group: 'watch',
      topics: [TOPICS.alerts],
      handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
    });
    const service = await startEngineService({ bus, store, log, ruleSet: rules.value, catalog: catalog.value, clock: 'event', group: 'engine' });
    // In recording order, each envelope judged before the next is published (the store holds its offset).
    const offsets = new Map<string, number>();
    for (const envelope of envelopes) {
      const topic = TOPIC[envelope.type]!;
      const offset = offsets.get(topic) ?? 0;
      offsets.set(topic, offset + 1);
      await bus.publish(topic, [envelopeMessage(envelope)]);
      const deadline = Date.now() + 5_000;
      for (;;) {
        const saved = await store.get(`engine:host:${envelope.host}`);
        if (saved && (JSON.parse(saved) as { offsets: Record<string, number> }).offsets[`${topic}/0`] === offset) break;
        if (Date.now() > deadline) throw new Error(`the service did not judge ${envelope.type} ${envelope.id}`);
        await new Promise((r) => setTimeout(r, 1));
      }
    }
    await service.stop();
    await watch.stop();
    await bus.close();
    expect(alerts.map(key).sort()).toEqual(replayed);
  }, 60_000);
});
