import { parseYamlText } from '@gpualert/rules';
import { newEnvelope, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import fc from 'fast-check';
import { RE2JS } from 're2js';
import { stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { matches, parseMatcher } from './matchers.ts';
import { emptyNotifierState, NotifierCore, restoreNotifierState } from './notifier-core.ts';
import { RoutesFile } from './route-config.ts';
import { checkSilence, MAX_SILENCE_MS } from './silence-check.ts';

/** Cases per property: modest in CI; GPUALERT_FUZZ_RUNS=100000 for the long run. */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 300);
const PROTO_KEYS = ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'prototype', '__defineGetter__', 'isPrototypeOf'];

const oddString = fc.oneof(
  fc.constantFrom(...PROTO_KEYS, '', ' ', '"', '\\', '.*', '(.*){20}!', '(a+)+$', '(?i)X', '[[:digit:]]', '(a)\\1', '(?=a)', 'x)|(.*'),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.integer({ min: 1_000, max: 20_000 }).map((n) => 'x'.repeat(n)),
);
const labelName = fc.oneof(fc.constantFrom(...PROTO_KEYS, 'host', 'severity', 'cluster'), fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,12}$/));
const op = fc.constantFrom('=', '!=', '=~', '!~');
const matcherText = fc.oneof(
  fc.tuple(labelName, op, oddString).map(([l, o, v]) => `${l}${o}"${v}"`),
  fc.tuple(labelName, op, oddString).map(([l, o, v]) => `${l}${o}${v}`),
  oddString,
);
/** Labels as they arrive from JSON: `__proto__` an own key, any name, any value. */
const labels = fc.array(fc.tuple(labelName, oddString), { maxLength: 6 }).map(
  (pairs) =>
    JSON.parse(
      JSON.stringify(Object.fromEntries(pairs.filter(([k]) => k !== '__proto__')))
        .replace(/^\{/, pairs.some(([k]) => k === '__proto__') ? '{"__proto__":"x",' : '{')
        .replace(/,\}$/, '}'),
    ) as Record<string, string>,
);

function prototypeUntouched(): void {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PRISTINE);
  expect(({} as Record<string, unknown>).x).toBeUndefined();
}
const PRISTINE = Object.getOwnPropertyNames(Object.prototype).sort();

describe('hostile input to the notifier core (fast-check)', () => {
  it('a matcher is a result or one clear line, and every regex is RE2', () => {
    fc.assert(
      fc.property(matcherText, labels, (text, l) => {
        const parsed = parseMatcher(text);
        if (typeof parsed === 'string') {
          expect(parsed).not.toMatch(/[\r\n]/);
          expect(parsed.length).toBeGreaterThan(0);
        } else {
          if (parsed.op === '=~' || parsed.op === '!~') expect(parsed.regex).toBeInstanceOf(RE2JS);
          // The literal-alternation shortcut answers exactly as RE2 does.
          if (parsed.literals)
            for (const v of [...Object.values(l), parsed.value, parsed.value.split('|')[0]!, ''])
              expect(parsed.literals.has(v)).toBe(parsed.regex!.testExact(v));
          expect(typeof matches(parsed, l)).toBe('boolean');
        }
        prototypeUntouched();
      }),
      { numRuns: RUNS },
    );
  });

  it('a silence payload is a bounded silence or one clear line, never a throw', () => {
    const anyValue = fc.oneof(fc.anything(), oddString, fc.double(), fc.constantFrom(1e308, 1e13, -0, Number.MAX_VALUE, 9999999999999 * 3600));
    fc.assert(
      fc.property(
        fc.oneof(fc.array(matcherText, { maxLength: 4 }), fc.anything()),
        anyValue,
        fc.oneof(oddString, fc.anything()),
        fc.oneof(oddString, fc.anything()),
        (m, seconds, by, comment) => {
          const now = Date.parse('2026-06-01T00:00:00Z');
          const checked = checkSilence(
            {
              matchers: m as string[],
              durationMs: (typeof seconds === 'number' ? seconds * 1000 : seconds) as number,
              createdBy: by as string,
              comment: comment as string,
            },
            now,
          );
          if (checked.ok) {
            expect(checked.value.endsAt).toBeGreaterThan(now);
            expect(checked.value.endsAt).toBeLessThanOrEqual(now + MAX_SILENCE_MS);
            expect(new Date(checked.value.endsAt).toISOString()).toMatch(/^2026-/);
          } else {
            expect(checked.error).not.toMatch(/[\r\n]/);
          }
          prototypeUntouched();
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a route file is a value or errors with file:line, never a throw', () => {
    const receiver = fc.record({
      name: oddString,
      channel: fc.constantFrom('slack', 'dingtalk', 'jira', 'record', 'nope', '__proto__'),
      settings: fc.dictionary(oddString, oddString, { maxKeys: 3 }),
    });
    fc.assert(
      fc.property(
        fc.array(receiver, { maxLength: 3 }),
        fc.array(matcherText, { maxLength: 3 }),
        fc.array(labelName, { maxLength: 3 }),
        (receivers, matchers, groupBy) => {
          const text = stringify({
            receivers,
            route: { receiver: receivers[0]?.name ?? 'r', group_by: groupBy, routes: [{ matchers }] },
            inhibit_rules: [{ source: matchers.slice(0, 1), target: matchers, equal: groupBy }],
          });
          const result = parseYamlText('routes.yaml', text, RoutesFile);
          if (!result.ok) for (const e of result.errors) expect(e.line).toBeGreaterThanOrEqual(1);
          prototypeUntouched();
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('alerts with hostile hosts, labels and fingerprints are decided, keyed in null-prototype maps', () => {
    const config = RoutesFile.parse({
      receivers: [
        { name: 'pager', channel: 'record' },
        { name: 'chat', channel: 'record' },
      ],
      route: {
        receiver: 'chat',
        group_by: ['host', 'constructor'],
        group_wait: '0s',
        routes: [
          { matchers: ['severity="critical"'], receiver: 'pager', page: true, continue: true },
          { matchers: ['toString=~".*"'], receiver: 'chat' },
        ],
      },
      inhibit_rules: [{ source: ['category="host_down"'], target: ['category!="host_down"'], equal: ['host', '__proto__'] }],
    });
    const alert = fc.record({
      host: oddString,
      fingerprint: oddString,
      labels,
      status: fc.constantFrom('firing', 'resolved'),
      severity: fc.constantFrom('critical', 'warning'),
      category: fc.constantFrom('host_down', 'xid', 'maintenance', '__proto__'),
    });
    fc.assert(
      fc.property(fc.array(alert, { minLength: 1, maxLength: 6 }), (alerts) => {
        const core = new NotifierCore(config);
        let state = emptyNotifierState();
        let now = Date.parse('2026-06-01T00:00:00Z');
        for (const a of alerts) {
          const envelope = newEnvelope({
            type: 'alert',
            host: a.host,
            source: 'fuzz',
            labels: a.labels,
            data: {
              fingerprint: a.fingerprint,
              status: a.status,
              severity: a.severity,
              category: a.category,
              rule: 'r',
              summary: 's',
              starts_at: new Date(now).toISOString(),
              evidence: [],
            } as AlertData,
          }) as EnvelopeOf<'alert'>;
          core.ingest(state, envelope, now);
          now += 1_000;
          core.flush(state, now);
          state = restoreNotifierState(JSON.stringify(state));
        }
        for (const map of [state.groups, state.pages, state.silences, state.firing, state.sources]) expect(Object.getPrototypeOf(map)).toBeNull();
        for (const group of Object.values(state.groups)) {
          expect(Object.getPrototypeOf(group.alerts)).toBeNull();
          expect(Object.getPrototypeOf(group.told)).toBeNull();
        }
        prototypeUntouched();
      }),
      { numRuns: RUNS },
    );
  });
});
