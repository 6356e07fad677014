import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { formatRuleError, loadYamlFile, parseYamlText } from './load-yaml.ts';

const Anything = z.record(z.string(), z.unknown());

describe('rules files that are hostile or broken', () => {
  it('a YAML bomb is one error that names the file, not an exception without one', () => {
    const layers = ['a: &a ["x","x","x","x","x","x","x","x","x"]'];
    for (const [prev, name] of [['a', 'b'], ['b', 'c'], ['c', 'd'], ['d', 'e']]) layers.push(`${name}: &${name} [${Array(9).fill(`*${prev}`).join(',')}]`);
    const result = parseYamlText('rules/bomb.yaml', `${layers.join('\n')}\n`, Anything);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(formatRuleError(result.errors[0]!)).toMatch(/^rules\/bomb\.yaml:1: not usable YAML: Excessive alias count/);
  });

  it('a file over the size bound is refused before it is read', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gpualert-yaml-')), 'huge.yaml');
    writeFileSync(file, `# ${'x'.repeat(5 * 1024 * 1024)}\n`);
    const result = loadYamlFile(file, Anything);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(formatRuleError(result.errors[0]!)).toMatch(/huge\.yaml:0: too large: \d+ bytes \(at most 4194304\)/);
  });
});

describe('an enum value misspelt', () => {
  const Kinds = z.object({ kinds: z.array(z.enum(['xid', 'sxid', 'nvlink'])) });

  it('names the line, the value, the valid ones and the nearest', () => {
    const result = parseYamlText('rules/x.yaml', '# a comment\nkinds:\n  - sxid\n  - xdi\n', Kinds);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map(formatRuleError)).toEqual(['rules/x.yaml:4: kinds.1: "xdi" is not one of xid, sxid, nvlink; did you mean "xid"?']);
  });

  it('suggests nothing when no valid value is near', () => {
    const result = parseYamlText('rules/x.yaml', 'kinds: [thermal]\n', Kinds);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map(formatRuleError)).toEqual(['rules/x.yaml:1: kinds.0: "thermal" is not one of xid, sxid, nvlink']);
  });

  it('an unknown key is named at its own line; thousands of them are twenty named and the rest counted (no look per key through thousands)', () => {
    const Strict = z.strictObject({ route: z.strictObject({ receiver: z.string() }) });
    const one = parseYamlText('routes.yaml', 'route:\n  receiver: team\n  # a comment\n  recevier: typo\n', Strict);
    expect(one.ok ? [] : one.errors.map(formatRuleError)).toEqual(['routes.yaml:4: route.recevier: unknown key "recevier"']);
    const keys = Array.from({ length: 5_000 }, (_, i) => `  k${i}: v`).join('\n');
    const many = parseYamlText('routes.yaml', `route:\n  receiver: team\n${keys}\n`, Strict);
    const errors = many.ok ? [] : many.errors.map(formatRuleError);
    expect(errors).toHaveLength(21);
    expect(errors[0]).toBe('routes.yaml:3: route.k0: unknown key "k0"');
    expect(errors[20]).toBe('routes.yaml:1: route: and 4980 more unknown keys');
  });

  it('a FIFO (or any file that is not a regular one) is refused without being opened: reading one would block the process', () => {
    const fifo = join(mkdtempSync(join(tmpdir(), 'gpualert-fifo-')), 'routes.yaml');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const result = loadYamlFile(fifo, Anything);
    expect(result.ok ? [] : result.errors.map(formatRuleError)).toEqual([`${fifo}:0: not a regular file`]);
  });
});
