import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatRuleError } from '@gpualert/rules';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RULES_DIR, loadRuleSet } from './load-rules.ts';

/** The bundled rules copied, with `edit` applied to one file's text. */
function rulesWith(file: string, edit: (text: string) => string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-rules-'));
  cpSync(DEFAULT_RULES_DIR, dir, { recursive: true });
  const path = join(dir, file);
  const before = readFileSync(path, 'utf8');
  const after = edit(before);
  if (after === before) throw new Error(`the edit did not change ${file}`);
  writeFileSync(path, after);
  return dir;
}

const errorsOf = (dir: string) => {
  const loaded = loadRuleSet(dir);
  return loaded.ok ? [] : loaded.errors.map((e) => formatRuleError(e).slice(dir.length + 1));
};

describe('gpualert rules check: a typo is an error with its file, line and the nearest valid value', () => {
  it('the bundled rules load', () => {
    expect(errorsOf(DEFAULT_RULES_DIR)).toEqual([]);
  });

  it('a kernel event kind and a throttle reason misspelt in defaults.yaml', () => {
    const dir = rulesWith('defaults.yaml', (t) =>
      t.replace('kinds: [xid, sxid,', 'kinds: [xdi, sxid,').replace('reasons: [hw_slowdown,', 'reasons: [hw_slowdwn,'),
    );
    const errors = errorsOf(dir);
    expect(errors).toHaveLength(2);
    // The lines the typos are on, wherever other rules put them.
    const lines = readFileSync(join(DEFAULT_RULES_DIR, 'defaults.yaml'), 'utf8').split('\n');
    const lineOf = (text: string) => lines.findIndex((l) => l.includes(text)) + 1;
    expect(errors[0]).toMatch(
      new RegExp(`^defaults\\.yaml:${lineOf('kinds: [xid, sxid,')}: rules\\.\\d+\\.kinds\\.0: "xdi" is not one of xid, sxid, .*; did you mean "xid"\\?$`),
    );
    expect(errors[1]).toMatch(
      new RegExp(
        `^defaults\\.yaml:${lineOf('reasons: [hw_slowdown,')}: rules\\.\\d+\\.reasons\\.0: "hw_slowdwn" is not one of .*; did you mean "hw_slowdown"\\?$`,
      ),
    );
  });

  it('a metric and a category misspelt', () => {
    const dir = rulesWith('defaults.yaml', (t) => t.replace('metric: temp_c', 'metric: tmp_c').replace('category: thermal', 'category: thermla'));
    expect(errorsOf(dir).sort()).toEqual([
      expect.stringMatching(/^defaults\.yaml:12: rules\.0\.category: "thermla" is not one of .*; did you mean "thermal"\?$/),
      expect.stringMatching(/^defaults\.yaml:7: rules\.0\.metric: "tmp_c" is not one of .*; did you mean "temp_c"\?$/),
    ]);
  });

  it('a template override with a bad value, or for a rule that does not exist, names its own line', () => {
    const bad = rulesWith('templates/h100.yaml', (t) => t.replace('gpu-mem-temp-high: { above: 95,', 'gpu-mem-temp-high: { above: "hot",'));
    expect(errorsOf(bad)).toEqual([expect.stringMatching(/^templates\/h100\.yaml:7: overrides\.gpu-mem-temp-high\.above: .*expected number/)]);
    const missing = rulesWith('templates/h100.yaml', (t) => t.replace('gpu-mem-temp-high: { above: 95,', 'gpu-mem-temp-hgh: { above: 95,'));
    expect(errorsOf(missing)).toEqual([
      'templates/h100.yaml:7: overrides.gpu-mem-temp-hgh: no rule "gpu-mem-temp-hgh" in defaults.yaml; did you mean "gpu-mem-temp-high"?',
    ]);
  });

  it("a rule's numbers are data: a template can move them, and a bad one is refused where it is written", () => {
    const dir = rulesWith('templates/h100.yaml', (t) =>
      t.replace('overrides:\n', 'overrides:\n  job-straggler: { window: 5m, peers_busy_above: 50 }\n  gpu-temp-peer: { recover_margin: -1 }\n'),
    );
    expect(errorsOf(dir)).toEqual([expect.stringMatching(/^templates\/h100\.yaml:7: overrides\.gpu-temp-peer\.recover_margin: .*>=0/)]);
    const ok = loadRuleSet(
      rulesWith('templates/h100.yaml', (t) => t.replace('overrides:\n', 'overrides:\n  job-straggler: { window: 5m, peers_busy_above: 50 }\n')),
    );
    if (!ok.ok) throw new Error(ok.errors.map(formatRuleError).join('\n'));
    const straggler = ok.value.templates.find((t) => t.template.name === 'h100')!.rules.find((r) => r.id === 'job-straggler');
    expect(straggler).toMatchObject({ window: 300_000, peers_busy_above: 50, smoothing: 0.7 });
  });
});
