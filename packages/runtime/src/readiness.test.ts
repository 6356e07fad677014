import { KafkaBus, MemoryBus } from '@gpualert/bus';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { busReady, readiness, storeReady } from './readiness.ts';

describe('readiness', () => {
  it('is ready only when every check is, and gives each its reason: one that fails, throws or does not answer in time', async () => {
    const ok = { name: 'ok', check: async () => undefined };
    expect(await readiness([ok])).toEqual({ ready: true, checks: { ok: 'ok' } });
    const state = await readiness([
      ok,
      { name: 'said', check: async () => 'the disk is full' },
      { name: 'threw', check: async () => { throw new Error('ECONNREFUSED 127.0.0.1:6379'); } },
      { name: 'hung', check: () => new Promise<undefined>(() => {}) },
    ], 50);
    expect(state).toEqual({ ready: false, checks: { ok: 'ok', said: 'the disk is full', threw: 'ECONNREFUSED 127.0.0.1:6379', hung: 'no answer within 50 ms' } });
  });

  it('the store and the bus as checks: the embedded ones answer; a closed bus and a Kafka nobody listens on do not', async () => {
    const bus = new MemoryBus();
    expect(await readiness([busReady(bus), storeReady(new MemoryStore())])).toEqual({ ready: true, checks: { bus: 'ok', store: 'ok' } });
    await bus.close();
    expect((await readiness([busReady(bus)])).checks.bus).toBe('the bus is closed');
    const kafka = new KafkaBus({ brokers: ['127.0.0.1:9'] });
    const away = await readiness([busReady(kafka)], 1_500);
    expect(away.ready).toBe(false);
    expect(away.checks.bus).toMatch(/Kafka not reachable|no answer within 1500 ms/);
    await kafka.close();
  });
});
