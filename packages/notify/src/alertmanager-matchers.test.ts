import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatMatcher, matchesValue, newMatcher, parseMatchers, type Matcher, type MatchOp } from './matchers.ts';

/*
 * Alertmanager's own tables, ported verbatim (inputs, expected matchers and error texts):
 *   pkg/labels/parse_test.go TestMatchers and pkg/labels/matcher_test.go TestMatcher, TestMatcherString,
 *   github.com/prometheus/alertmanager at 68fb2d5759b3 (v0.34.0+20; the table is unchanged since v0.27.0,
 *   v0.25.0 holds its first 32 rows). Only the regex error's wording is RE2's as re2js writes it.
 */
type Row = { input: string; want?: [string, MatchOp, string][]; err?: string };
const PARSE_TEST: Row[] = [
  { input: '{}', want: [] },
  { input: ',', err: 'bad matcher format: ' },
  { input: '{,}', err: 'bad matcher format: ' },
  { input: "{foo='}", want: [['foo', '=', "'"]] },
  { input: '{foo=`}', want: [['foo', '=', '`']] },
  { input: '{foo=\\"}', want: [['foo', '=', '"']] },
  { input: '{foo=bar}', want: [['foo', '=', 'bar']] },
  { input: '{foo="bar"}', want: [['foo', '=', 'bar']] },
  { input: '{foo=~bar.*}', want: [['foo', '=~', 'bar.*']] },
  { input: '{foo=~"bar.*"}', want: [['foo', '=~', 'bar.*']] },
  { input: '{foo!=bar}', want: [['foo', '!=', 'bar']] },
  { input: '{foo!="bar"}', want: [['foo', '!=', 'bar']] },
  { input: '{foo!~bar.*}', want: [['foo', '!~', 'bar.*']] },
  { input: '{foo!~"bar.*"}', want: [['foo', '!~', 'bar.*']] },
  {
    input: '{foo="bar", baz!="quux"}',
    want: [
      ['foo', '=', 'bar'],
      ['baz', '!=', 'quux'],
    ],
  },
  {
    input: '{foo="bar", baz!~"quux.*"}',
    want: [
      ['foo', '=', 'bar'],
      ['baz', '!~', 'quux.*'],
    ],
  },
  {
    input: '{foo="bar",baz!~".*quux", derp="wat"}',
    want: [
      ['foo', '=', 'bar'],
      ['baz', '!~', '.*quux'],
      ['derp', '=', 'wat'],
    ],
  },
  {
    input: '{foo="bar", baz!="quux", derp="wat"}',
    want: [
      ['foo', '=', 'bar'],
      ['baz', '!=', 'quux'],
      ['derp', '=', 'wat'],
    ],
  },
  {
    input: '{foo="bar", baz!~".*quux.*", derp="wat"}',
    want: [
      ['foo', '=', 'bar'],
      ['baz', '!~', '.*quux.*'],
      ['derp', '=', 'wat'],
    ],
  },
  {
    input: '{foo="bar", instance=~"some-api.*"}',
    want: [
      ['foo', '=', 'bar'],
      ['instance', '=~', 'some-api.*'],
    ],
  },
  { input: '{foo=""}', want: [['foo', '=', '']] },
  {
    input: '{foo="bar,quux", job="job1"}',
    want: [
      ['foo', '=', 'bar,quux'],
      ['job', '=', 'job1'],
    ],
  },
  {
    input: '{foo = "bar", dings != "bums", }',
    want: [
      ['foo', '=', 'bar'],
      ['dings', '!=', 'bums'],
    ],
  },
  {
    input: 'foo=bar,dings!=bums',
    want: [
      ['foo', '=', 'bar'],
      ['dings', '!=', 'bums'],
    ],
  },
  { input: '{quote="She said: \\"Hi, ladies! That\'s gender-neutral…\\""}', want: [['quote', '=', 'She said: "Hi, ladies! That\'s gender-neutral…"']] },
  { input: 'statuscode=~"5.."', want: [['statuscode', '=~', '5..']] },
  { input: 'tricky=~~~', want: [['tricky', '=~', '~~']] },
  { input: 'trickier==\\\\=\\=\\"', want: [['trickier', '=', '=\\=\\="']] },
  {
    input: 'contains_quote != "\\"" , contains_comma !~ "foo,bar" , ',
    want: [
      ['contains_quote', '!=', '"'],
      ['contains_comma', '!~', 'foo,bar'],
    ],
  },
  { input: '{foo=bar}}', want: [['foo', '=', 'bar}']] },
  { input: '{foo=bar}},}', want: [['foo', '=', 'bar}}']] },
  {
    input: '{foo=,bar=}}',
    want: [
      ['foo', '=', ''],
      ['bar', '=', '}'],
    ],
  },
  { input: '{foo=bar\\t}', want: [['foo', '=', 'bar\\t']] },
  { input: '{foo=bar\\n}', want: [['foo', '=', 'bar\n']] },
  { input: '{foo=bar\\}', want: [['foo', '=', 'bar\\']] },
  { input: '{foo=bar\\\\}', want: [['foo', '=', 'bar\\']] },
  { input: '{foo=bar\\"}', want: [['foo', '=', 'bar"']] },
  { input: 'job=', want: [['job', '=', '']] },
  { input: 'job="value', err: 'matcher value contains unescaped double quote: "value' },
  { input: 'job=value"', err: 'matcher value contains unescaped double quote: value"' },
  { input: 'trickier==\\\\=\\=\\""', err: 'matcher value contains unescaped double quote: =\\\\=\\=\\""' },
  { input: 'contains_unescaped_quote = foo"bar', err: 'matcher value contains unescaped double quote: foo"bar' },
  { input: '{invalid-name = "valid label"}', err: 'bad matcher format: invalid-name = "valid label"' },
  { input: '{foo=~"invalid[regexp"}', err: 'error parsing regexp: missing closing ]: `[regexp)$`' },
  { input: '"{foo=\\"bar"}', err: 'bad matcher format: "{foo=\\"bar"' },
  { input: '"foo=\\"bar"', err: 'bad matcher format: "foo=\\"bar"' },
  { input: '"foo=\\"bar\\""', err: 'bad matcher format: "foo=\\"bar\\""' },
  { input: '"foo=\\"bar\\"', err: 'bad matcher format: "foo=\\"bar\\"' },
  { input: '"{foo=\\"bar\\"}"', err: 'bad matcher format: "{foo=\\"bar\\"}"' },
  { input: '"foo="bar""', err: 'bad matcher format: "foo="bar""' },
  { input: '{{foo=', err: 'bad matcher format: {foo=' },
  { input: '{foo=', want: [['foo', '=', '']] },
  { input: '{foo=}b', want: [['foo', '=', '}b']] },
];

const plain = (m: Matcher) => [m.label, m.op, m.value];

describe("Alertmanager's matcher tables (pkg/labels)", () => {
  it.each(PARSE_TEST)('ParseMatchers($input)', ({ input, want, err }) => {
    const got = parseMatchers(input);
    if (err === undefined) {
      expect(typeof got === 'string' ? got : got.map(plain)).toEqual(want);
    } else if (err.startsWith('error parsing regexp')) {
      expect(got).toMatch(/^not an RE2 regular expression: error parsing regexp: missing closing \]/);
    } else {
      expect(got).toBe(err);
    }
  });

  const m = (op: MatchOp, value: string): Matcher => newMatcher('', op, value) as Matcher;
  it.each([
    [m('=', 'bar'), 'bar', true],
    [m('=', 'bar'), 'foo-bar', false],
    [m('!=', 'bar'), 'bar', false],
    [m('!=', 'bar'), 'foo-bar', true],
    [m('=~', 'bar'), 'bar', true],
    [m('=~', 'bar'), 'foo-bar', false],
    [m('=~', '.*bar'), 'foo-bar', true],
    [m('!~', 'bar'), 'bar', false],
    [m('!~', 'bar'), 'foo-bar', true],
    [m('!~', '.*bar'), 'foo-bar', false],
    [m('=~', 'foo.bar'), 'foo-bar', true],
    [m('=~', 'foo\\.bar'), 'foo-bar', false],
    [m('=~', 'foo\\.bar'), 'foo.bar', true],
    [m('=', 'foo\nbar'), 'foo\nbar', true],
    [m('=~', 'foo.bar'), 'foo\nbar', false],
    [m('=~', '(?s)foo.bar'), 'foo\nbar', true],
    [m('=', '~!="'), '~!="', true],
  ] as const)('Matcher %# (%o) on %j is %s (TestMatcher)', (matcher, value, want) => {
    expect(matchesValue(matcher, value)).toBe(want);
  });

  it.each([
    ['foo', '=', 'bar', 'foo="bar"'],
    ['foo', '!=', 'bar', 'foo!="bar"'],
    ['foo', '=~', 'bar', 'foo=~"bar"'],
    ['foo', '!~', 'bar', 'foo!~"bar"'],
    ['foo', '=', 'back\\slash', 'foo="back\\\\slash"'],
    ['foo', '=', 'double"quote', 'foo="double\\"quote"'],
    ['foo', '=', 'new\nline', 'foo="new\\nline"'],
    ['foo', '=', 'tab\tstop', 'foo="tab\tstop"'],
    ['foo', '=', '🙂', 'foo="🙂"'],
    ['foo!', '!=', 'bar', '"foo!"!="bar"'],
    ['foo🙂', '=', 'bar', 'foo🙂="bar"'],
    ['foo bar', '=', 'baz', '"foo bar"="baz"'],
  ] as const)('String(%s %s %j) is %s, and parses back (TestMatcherString)', (label, op, value, want) => {
    const matcher = newMatcher(label, op, value) as Matcher;
    expect(formatMatcher(matcher)).toBe(want);
    expect((parseMatchers(want) as Matcher[]).map(plain)).toEqual([[label, op, value]]);
  });
});

/** Cases per property: modest in CI; GPUALERT_FUZZ_RUNS=100000 for the long run. */
const RUNS = Number(process.env.GPUALERT_FUZZ_RUNS ?? 500);

describe('matcher text round trip (fast-check)', () => {
  it('what formatMatcher writes parses back to the same matcher, for any UTF-8 name and value', () => {
    const text = fc.string({ unit: 'grapheme', maxLength: 24 });
    fc.assert(
      fc.property(
        text.filter((s) => s.length > 0),
        fc.constantFrom<MatchOp>('=', '!='),
        text,
        (label, op, value) => {
          const back = parseMatchers(formatMatcher({ label, op, value }));
          expect(typeof back === 'string' ? back : back.map(plain)).toEqual([[label, op, value]]);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
