import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matchesAll, parseMatchers, type Matcher } from './matchers.ts';
import { dict, type Silence } from './notifier-core.ts';
import { SilenceIndex } from './silence-index.ts';

/** Cases per property: modest in CI; GPUALERT_FUZZ_RUNS=100000 for the long run. */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 300);
const T = Date.parse('2026-06-01T00:00:00Z');

const compile = (texts: readonly string[]) => texts.flatMap((t) => parseMatchers(t) as Matcher[]);

/** What the notifier did before the index: every silence, in the object's order. */
function linearFirst(silences: Record<string, Silence>, labels: Record<string, string>, now: number, receiver: string | undefined): Silence | undefined {
  for (const s of Object.values(silences)) {
    if (s.expiredAt !== undefined || now < s.startsAt || now >= s.endsAt) continue;
    if (receiver !== undefined && s.receivers && !s.receivers.includes(receiver)) continue;
    if (matchesAll(compile(s.matchers), labels)) return s;
  }
  return undefined;
}
/** Every active matching silence for all receivers, or for one of `receivers` (an alert's, as the API asks). */
const linearAll = (silences: Record<string, Silence>, labels: Record<string, string>, now: number, receivers: readonly string[] = []) =>
  Object.values(silences)
    .filter(
      (s) =>
        !(s.expiredAt !== undefined || now < s.startsAt || now >= s.endsAt || (s.receivers && !s.receivers.some((r) => receivers.includes(r)))) &&
        matchesAll(compile(s.matchers), labels),
    )
    .map((s) => s.id);

// A small vocabulary, so that silences and alerts meet often; every operator, literal and real regexes, a missing label.
const label = fc.constantFrom('host', 'alertname', 'category', 'cluster', '__proto__', 'constructor');
const value = fc.constantFrom('', 'h1', 'h2', 'h3', 'xid', 'thermal', 'constructor', '__proto__');
const matcher = fc.oneof(
  fc.tuple(label, value).map(([l, v]) => `${l}="${v}"`),
  fc.tuple(label, value).map(([l, v]) => `${l}!="${v}"`),
  fc.tuple(label, fc.uniqueArray(value, { minLength: 1, maxLength: 3 })).map(([l, vs]) => `${l}=~"${vs.join('|')}"`),
  fc.tuple(label, fc.constantFrom('h.*', '(?i)H1', 'x[a-z]d', '.*')).map(([l, v]) => `${l}=~"${v}"`),
  fc.tuple(label, value).map(([l, v]) => `${l}!~"${v}|h2"`),
);
const id = fc.oneof(fc.constantFrom('0', '7', '12345678', '__proto__', 'constructor', 'a', 'b'), fc.stringMatching(/^[a-z0-9-]{1,8}$/));
const silence = fc
  .record({
    id,
    matchers: fc.array(matcher, { minLength: 1, maxLength: 3 }),
    receivers: fc.option(fc.uniqueArray(fc.constantFrom('pager', 'chat'), { minLength: 1, maxLength: 2 }), { nil: undefined }),
    startsAt: fc.integer({ min: T - 100, max: T + 100 }),
    length: fc.integer({ min: 1, max: 200 }),
    expired: fc.boolean(),
  })
  .map(({ id, matchers, receivers, startsAt, length, expired }): Silence => ({
    id,
    matchers,
    ...(receivers ? { receivers } : {}),
    startsAt,
    endsAt: startsAt + length,
    createdBy: 'p',
    comment: 'c',
    ...(expired ? { expiredAt: startsAt } : {}),
  }));
const labels = fc.array(fc.tuple(label, value), { maxLength: 5 }).map((pairs) => dict(pairs));
const lookup = fc.record({
  labels,
  now: fc.integer({ min: T - 120, max: T + 320 }),
  receiver: fc.option(fc.constantFrom('pager', 'chat', 'record'), { nil: undefined }),
});

describe('the silence index answers as the linear scan did', () => {
  it('finds the same first silence and the same set, built at once', () => {
    fc.assert(
      fc.property(fc.array(silence, { maxLength: 30 }), fc.array(lookup, { minLength: 1, maxLength: 20 }), (list, lookups) => {
        const silences = dict(list.map((s) => [s.id, s] as const));
        const index = new SilenceIndex(silences, compile);
        for (const { labels: l, now, receiver } of lookups) {
          expect(index.first(l, now, receiver)?.id).toBe(linearFirst(silences, l, now, receiver)?.id);
          expect(
            index
              .all(l, now)
              .map((s) => s.id)
              .sort(),
          ).toEqual(linearAll(silences, l, now).sort());
          const theirs = receiver ? [receiver] : [];
          expect(
            index
              .all(l, now, theirs)
              .map((s) => s.id)
              .sort(),
          ).toEqual(linearAll(silences, l, now, theirs).sort());
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('stays the same through additions, deletions, re-additions and expiry', () => {
    const step = fc.oneof(
      silence.map((s) => ({ kind: 'add' as const, s })),
      fc.nat(40).map((n) => ({ kind: 'delete' as const, n })),
      fc.nat(40).map((n) => ({ kind: 'expire' as const, n })),
      lookup.map((q) => ({ kind: 'look' as const, q })),
    );
    fc.assert(
      fc.property(fc.array(silence, { maxLength: 10 }), fc.array(step, { minLength: 1, maxLength: 60 }), (initial, steps) => {
        const silences = dict(initial.map((s) => [s.id, s] as const));
        let index = new SilenceIndex(silences, compile);
        for (const st of steps) {
          const ids = Object.keys(silences);
          if (st.kind === 'add') {
            silences[st.s.id] = st.s;
            if (!index.add(st.s)) index = new SilenceIndex(silences, compile); // as the core does: rebuilt
          } else if (st.kind === 'delete' && ids.length > 0) {
            const victim = ids[st.n % ids.length]!;
            delete silences[victim];
            index.remove(victim);
          } else if (st.kind === 'expire' && ids.length > 0) {
            const s = silences[ids[st.n % ids.length]!]!;
            s.expiredAt = T;
            s.endsAt = Math.min(s.endsAt, T);
          } else if (st.kind === 'look') {
            const { labels: l, now, receiver } = st.q;
            expect(index.first(l, now, receiver)?.id).toBe(linearFirst(silences, l, now, receiver)?.id);
            expect(
              index
                .all(l, now)
                .map((s) => s.id)
                .sort(),
            ).toEqual(linearAll(silences, l, now).sort());
          }
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('the properties see silences match: the vocabulary meets often enough to test something', () => {
    // Without matches the comparisons above would agree trivially; this shows they happen.
    const silences = dict<Silence>();
    let matched = 0;
    fc.assert(
      fc.property(silence, lookup, ({ expiredAt: _, ...s }, { labels: l }) => {
        silences[s.id] = { ...s, startsAt: T, endsAt: T + 10 };
        if (linearFirst(silences, l, T, undefined)) matched += 1;
      }),
      { numRuns: 200, seed: 1 },
    );
    expect(matched).toBeGreaterThan(20);
  });

  it('a silence whose id sorts first (an array index) is still found first, as the object orders it', () => {
    const silences = dict<Silence>();
    const mk = (id: string): Silence => ({ id, matchers: ['host="h1"'], startsAt: T, endsAt: T + 10, createdBy: 'p', comment: 'c' });
    silences.b = mk('b');
    const index = new SilenceIndex(silences, compile);
    silences['7'] = mk('7');
    expect(index.add(silences['7'])).toBe(false); // it cannot be appended: the core rebuilds
    expect(new SilenceIndex(silences, compile).first(dict([['host', 'h1']]), T, undefined)?.id).toBe('7');
    expect(linearFirst(silences, dict([['host', 'h1']]), T, undefined)?.id).toBe('7');
  });
});
