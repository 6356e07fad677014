import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { loadRuleSet } from '@gpualert/engine';
import { hostileEnvelope, SENTINEL_HOST } from '@gpualert/test-support';
import { createLogger } from '@gpualert/log';
import { loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { startEngineService } from './engine-service.ts';

const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
const log = createLogger({ name: 'test', level: 'silent' });
/** Batches per run in CI; GPUALERT_FUZZ_RUNS asks for more (each batch waits for its page). */
const RUNS = Math.max(10, Math.floor(Number(process.env.GPUALERT_FUZZ_RUNS ?? 300) / 10));
const INPUTS = [TOPICS.gpuSamples, TOPICS.kernelEvents, TOPICS.providerEvents, TOPICS.hostInventory];

describe('engine service: property over hostile batches', () => {
  it('no batch of hostile messages stalls the partition: the host after them on it is still paged, and Object.prototype is untouched', async () => {
    // One partition: every hostile message shares it with the sentinel's page.
    const bus = new MemoryBus({ partitions: 1 });
    await bus.ensureTopics(Object.values(TOPICS));
    const alerts: EnvelopeOf<'alert'>[] = [];
    const watch = await bus.consume({
      group: 'watch',
      topics: [TOPICS.alerts],
      handler: async (b) => void alerts.push(...b.items.flatMap((i) => (i.envelope.type === 'alert' ? [i.envelope] : []))),
    });
    const service = await startEngineService({
      bus,
      store: new MemoryStore(),
      log,
      ruleSet: rules.value,
      catalog: catalog.value,
      clock: 'wall',
      group: 'engine',
      tickMs: 50,
    });
    const before = Object.getOwnPropertyNames(Object.prototype).sort().join();
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(fc.constantFrom(...INPUTS), hostileEnvelope), { minLength: 1, maxLength: 6 }), async (messages) => {
          run += 1;
          for (const [topic, value] of messages) await bus.publish(topic, [{ key: 'k', value: value as string }]);
          const sentinel = `${SENTINEL_HOST}-${run}`;
          await bus.publish(TOPICS.kernelEvents, [
            envelopeMessage(
              newEnvelope({
                type: 'kernel.event',
                host: sentinel,
                source: 'test',
                data: {
                  kind: 'xid',
                  xid: 79,
                  pci_bus: '0000:3b:00',
                  message: 'NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.',
                  severity: 'critical',
                },
              }),
            ),
          ]);
          const deadline = Date.now() + 5_000;
          while (!alerts.some((a) => a.host === sentinel && a.data.severity === 'critical')) {
            if (Date.now() > deadline) throw new Error(`no page for ${sentinel} after ${JSON.stringify(messages).slice(0, 300)}`);
            await new Promise((r) => setTimeout(r, 10));
          }
          expect(Object.getOwnPropertyNames(Object.prototype).sort().join()).toBe(before);
          for (const key in {}) throw new Error(`Object.prototype has an enumerable ${key}`);
        }),
        { numRuns: RUNS },
      );
    } finally {
      await Promise.all([service.stop(), watch.stop()]);
      await bus.close();
    }
  }, 120_000);
});
