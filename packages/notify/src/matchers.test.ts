import { RE2JS } from 're2js';
import { describe, expect, it } from 'vitest';
import { MAX_MATCHER_LENGTH, matches, matchesEmpty, parseMatcher, type Matcher } from './matchers.ts';

const parse = (text: string): Matcher => {
  const m = parseMatcher(text);
  if (typeof m === 'string') throw new Error(m);
  return m;
};

describe('matchers', () => {
  it('run user regexes on RE2, compiled once: a catastrophic pattern answers at once on a 12-character host', { timeout: 5_000 }, () => {
    const evil = parse('host=~"(.*){20}!"');
    expect(evil.regex).toBeInstanceOf(RE2JS);
    expect(matches(evil, { host: 'gpu-node-012' })).toBe(false);
    expect(matches(evil, { host: 'gpu-node-012!' })).toBe(true);
    const nested = parse('host=~(a+)+$');
    expect(matches(nested, { host: `${'a'.repeat(40)}b` })).toBe(false);
    expect(matches(nested, { host: 'a'.repeat(40) })).toBe(true);
  });

  it('take the syntax Prometheus and Alertmanager users write, anchored as Alertmanager anchors it', () => {
    expect(matches(parse('host=~"(?i)GPU-NODE-.*"'), { host: 'gpu-node-1' })).toBe(true);
    expect(matches(parse('gpu=~"[[:digit:]]+"'), { gpu: '12' })).toBe(true);
    expect(matches(parse('gpu=~"[[:digit:]]+"'), { gpu: '12a' })).toBe(false);
    expect(matches(parse('host=~"node"'), { host: 'gpu-node-1' })).toBe(false); // anchored: ^(?:node)$
    expect(matches(parse('severity=~"critical|error"'), { severity: 'error' })).toBe(true);
    expect(matches(parse('severity!~"critical|error"'), { severity: 'warning' })).toBe(true);
  });

  it('refuse what RE2 does not take, in one line naming the matcher', () => {
    for (const text of ['host=~"(a)\\1"', 'host=~"(?=a)a"', 'host=~"a(?!b)"', 'host=~"x{1001}"']) {
      const answer = parseMatcher(text);
      expect(typeof answer).toBe('string');
      expect(answer).toMatch(/not an RE2 regular expression/);
      expect(answer).not.toContain('\n');
    }
    // The pattern alone must compile, so it cannot close the anchors' group and match anything.
    expect(parseMatcher('host=~"x)|(.*"')).toMatch(/not an RE2 regular expression/);
    expect(parseMatcher(`host=~"${'a'.repeat(MAX_MATCHER_LENGTH)}"`)).toMatch(/longer than/);
    expect(parseMatcher('host="unclosed')).toBe('matcher value contains unescaped double quote: "unclosed');
  });

  it('never read a label from the prototype: a missing `constructor` label is the empty string', () => {
    expect(matches(parse('constructor=""'), {})).toBe(true);
    expect(matches(parse('toString=~".+"'), {})).toBe(false);
    expect(matches(parse('__proto__="x"'), JSON.parse('{"__proto__":"x"}') as Record<string, string>)).toBe(true);
  });

  it('say which matchers match a missing label (the silence rule)', () => {
    expect(matchesEmpty(parse('host=~".*"'))).toBe(true);
    expect(matchesEmpty(parse('nosuchlabel=""'))).toBe(true);
    expect(matchesEmpty(parse('severity!="nope"'))).toBe(true);
    expect(matchesEmpty(parse('host="h1"'))).toBe(false);
    expect(matchesEmpty(parse('host=~".+"'))).toBe(false);
  });
});
