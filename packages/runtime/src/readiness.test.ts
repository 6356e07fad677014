import { MemoryBus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { busReady, readiness, sharedReadiness, storeReady } from './readiness.ts';

describe('readiness', () => {
  it('is ready only when every check is, and gives each its reason: one that fails, throws or does not answer in time', async () => {
    const ok = { name: 'ok', check: async () => undefined };
    expect(await readiness([ok])).toEqual({ ready: true, checks: { ok: 'ok' } });
    const state = await readiness(
      [
        ok,
        { name: 'said', check: async () => 'the disk is full' },
        {
          name: 'threw',
          check: async () => {
            throw new Error('ECONNREFUSED 127.0.0.1:6379');
          },
        },
        { name: 'hung', check: () => new Promise<undefined>(() => {}) },
      ],
      50,
    );
    expect(state).toEqual({
      ready: false,
      checks: { ok: 'ok', said: 'the disk is full', threw: 'ECONNREFUSED 127.0.0.1:6379', hung: 'no answer within 50 ms' },
    });
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

  it('probes that arrive while a check runs share it: a storm of probes against a store that hangs costs one check in flight', async () => {
    let started = 0;
    let release: () => void = () => {};
    const slow = {
      name: 'store',
      check: () => {
        started += 1;
        return new Promise<undefined>((resolve) => {
          release = () => resolve(undefined);
        });
      },
    };
    // Asked one by one, each probe starts its own check: what sharing saves.
    const unshared = Array.from({ length: 50 }, () => readiness([slow], 10));
    expect(started).toBe(50);
    expect((await Promise.all(unshared)).every((a) => !a.ready)).toBe(true);
    started = 0;
    const probe = sharedReadiness(() => [slow], 5_000);
    const answers = Array.from({ length: 50 }, () => probe());
    expect(started).toBe(1);
    release();
    expect(new Set((await Promise.all(answers)).map((a) => JSON.stringify(a)))).toEqual(new Set([JSON.stringify({ ready: true, checks: { store: 'ok' } })]));
    // Once answered, the next probe asks again: an answer is never older than its check.
    const next = probe();
    expect(started).toBe(2);
    release();
    expect((await next).ready).toBe(true);
  });
});
