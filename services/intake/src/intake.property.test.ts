import { readdirSync, readFileSync } from 'node:fs';
import { MemoryBus } from '@gpualert/bus';
import { PROVIDERS, parseEnvelope, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { handleDelivery, type IntakeDeps } from './handle-delivery.ts';
import { sign } from './standard-webhooks.ts';

/** Cases per property: modest in CI; GPUALERT_FUZZ_RUNS asks for more (run once by hand, see the issue note). */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 300);
const SECRET = `whsec_${Buffer.from('a property test secret, 32 bytes').toString('base64')}`;
const FIXTURES = new URL('../../../test/fixtures/provider/', import.meta.url);
const fixtures = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('.json'))
  .map((f) => ({
    provider: f.startsWith('aws-imds') ? 'aws-imds' : f.split('-')[0]!,
    payload: JSON.parse(readFileSync(new URL(f, FIXTURES), 'utf8')) as unknown,
  }));

/** What a hostile or careless sender puts where a host, an id or a time belongs. */
const hostile = fc.oneof(
  fc.constantFrom('constructor', '__proto__', 'toString', 'hasOwnProperty', 'prototype', 'valueOf', '', ' ', '\u0000', '../../etc', 'i-0123456789abcdef0'),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ minLength: 250, maxLength: 400 }),
  fc.constantFrom(0, -1, 1e308, -1e308, Number.MAX_SAFE_INTEGER, 0.5, true, false, null),
  fc.constantFrom('1970-01-01T00:00:00Z', '9999-12-31T23:59:59Z', '0000-00-00', 'yesterday', '21 Jan 2019 09:00:43 GMT', '2026-13-45T99:99:99Z'),
  fc.constantFrom([], {}, ['constructor'], { __proto__: 'x' }, { constructor: { prototype: 1 } }),
);

type Json = unknown;

/** The fixture with the values at some of its paths replaced by hostile ones. */
function mutate(value: Json, picks: readonly { at: number; with: unknown }[], counter = { n: 0 }): Json {
  const here = counter.n;
  counter.n += 1;
  const replaced = picks.find((p) => p.at === here);
  if (replaced) return replaced.with;
  if (Array.isArray(value)) return value.map((v) => mutate(v, picks, counter));
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      Object.defineProperty(out, k, { value: mutate(v, picks, counter), enumerable: true, writable: true, configurable: true });
    return out;
  }
  return value;
}

const mutatedFixture = fc
  .record({
    fixture: fc.constantFrom(...fixtures),
    picks: fc.array(fc.record({ at: fc.nat({ max: 60 }), with: hostile }), { maxLength: 4 }),
  })
  .map(({ fixture, picks }) => ({ provider: fixture.provider, body: JSON.stringify(mutate(fixture.payload, picks)) }));

/** A generic event with hostile hosts and fields: the shape the generic adapter takes. */
const genericEvent = fc
  .record(
    {
      event_id: fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), hostile),
      kind: fc.constantFrom('maintenance', 'reboot', 'explode', '__proto__'),
      status: fc.constantFrom('scheduled', 'started', 'constructor'),
      hosts: fc.array(hostile, { maxLength: 6 }),
      window_start: fc.option(hostile, { nil: undefined }),
      duration_seconds: fc.option(fc.oneof(fc.double(), fc.constantFrom(1e308, -5, 0)), { nil: undefined }),
      description: fc.option(hostile, { nil: undefined }),
    },
    { requiredKeys: [] },
  )
  .map((event) => ({ provider: 'generic', body: JSON.stringify(event) }));

const anyJson = fc.record({
  provider: fc.constantFrom(...PROVIDERS, 'ibm', 'constructor', '__proto__'),
  body: fc.oneof(fc.json({ maxDepth: 6 }), fc.string({ maxLength: 200 }), fc.constant('['.repeat(5_000))),
});

function deps(): IntakeDeps & { bus: MemoryBus } {
  return {
    bus: new MemoryBus({ partitions: 2 }),
    store: new MemoryStore(),
    now: () => Date.parse('2026-06-01T00:00:00Z'),
    seenTtlMs: 60_000,
    publishTimeoutMs: 5_000,
    auth: { secrets: [SECRET], tokenHeader: 'authorization' },
  };
}

const STATUSES = new Set([200, 202, 400, 404, 422]);

describe('provider payloads into the intake (property)', () => {
  it('never throws past handleDelivery: a status with a JSON body, only valid envelopes published, Object.prototype untouched', async () => {
    const d = deps();
    const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort();
    let n = 0;
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(mutatedFixture, genericEvent, anyJson), async ({ provider, body }) => {
        n += 1;
        const id = `msg_${n}`;
        const at = Math.floor(d.now() / 1000);
        const headers = {
          'content-type': 'application/json',
          'webhook-id': id,
          'webhook-timestamp': String(at),
          'webhook-signature': sign(SECRET, id, at, body),
        };
        const answer = await handleDelivery({ provider, headers, body: Buffer.from(body) }, d);
        seen.set(answer.status, (seen.get(answer.status) ?? 0) + 1);
        expect(STATUSES.has(answer.status), `status ${answer.status}: ${JSON.stringify(answer.body)}`).toBe(true);
        expect(typeof JSON.parse(JSON.stringify(answer.body))).toBe('object');
        if (answer.status >= 400) expect(typeof answer.body.message).toBe('string');
        expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeKeys);
        expect(({} as Record<string, unknown>).x).toBeUndefined();
      }),
      { numRuns: RUNS },
    );
    // The cases reach every answer, acceptance included, not only the first refusal.
    expect(
      [202, 400, 422].every((status) => (seen.get(status) ?? 0) > 0),
      JSON.stringify([...seen]),
    ).toBe(true);
    // Whatever was accepted is what the engine will accept.
    for (const message of await d.bus.read(TOPICS.providerEvents)) expect(parseEnvelope(message.value).ok).toBe(true);
    console.log(`[fuzz] intake: ${RUNS} payloads, answers ${JSON.stringify(Object.fromEntries(seen))}`);
  }, 120_000);
});
