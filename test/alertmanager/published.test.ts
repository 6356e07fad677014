import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadRoutes, routesFor } from '@gpualert/notify';
import { describe, expect, it } from 'vitest';
import { parseDocument } from 'yaml';
import { amtool, tempDir } from './harness.ts';

/**
 * Fourteen alertmanager.yml files that public projects publish (published/README.md names each
 * source and commit), judged by Alertmanager 0.25's own `amtool check-config` and by gpualert's
 * loader; where both load one, routed alike (`amtool config routes test`) on the label sets in
 * published/label-sets.json.
 */
const DIR = join(import.meta.dirname, 'published');
const FILES = readdirSync(DIR)
  .filter((f) => f.endsWith('.yml'))
  .sort();
const LABEL_SETS = JSON.parse(readFileSync(join(DIR, 'label-sets.json'), 'utf8')) as Record<string, string[][]>;

/**
 * Where gpualert refuses what Alertmanager loads, and why: a setting gpualert would not honour is
 * refused at its line rather than ignored. Each must still be refused for exactly this reason.
 */
const REFUSED_BY_GPUALERT: Record<string, { readonly why: RegExp; readonly setting: readonly (string | number)[] }> = {
  'alertmanager-conf-good.yml': { why: /global\.http_config\.proxy_url.*do not take Alertmanager's HTTP client settings/, setting: ['global', 'http_config'] },
  'openfaas.yml': {
    why: /receivers\.0\.webhook_configs\.0\.http_config.*not supported by gpualert/,
    setting: ['receivers', 0, 'webhook_configs', 0, 'http_config'],
  },
};

/** The file as both read it; one gpualert refuses, without the setting it refuses (for routing, which does not depend on it). */
function routable(file: string): string {
  const refused = REFUSED_BY_GPUALERT[file];
  if (!refused) return join(DIR, file);
  const doc = parseDocument(readFileSync(join(DIR, file), 'utf8'));
  expect(doc.deleteIn(refused.setting), `${file}: ${refused.setting.join('.')}`).toBe(true);
  const path = join(tempDir('published'), file);
  writeFileSync(path, doc.toString());
  return path;
}

const verdict = (file: string) => {
  const path = join(DIR, file);
  const theirs = amtool('http://127.0.0.1:9', ['check-config', path]);
  const ours = loadRoutes(path);
  return {
    theirs: theirs.code === 0 ? 'loads' : 'refused',
    theirsOut: theirs.out,
    ours: ours.ok ? 'loads' : 'refused',
    why: ours.ok ? '' : ours.errors.map((e) => `${e.line} ${e.field}: ${e.message}`).join('\n'),
  };
};

describe('published Alertmanager configurations, through amtool 0.25 and gpualert', () => {
  it('are loaded or refused alike, but for the settings gpualert refuses rather than ignores, each for its stated reason', () => {
    expect(FILES).toHaveLength(14);
    const verdicts = FILES.map((file) => [file, verdict(file)] as const);
    for (const [file, v] of verdicts) {
      if (Object.hasOwn(REFUSED_BY_GPUALERT, file)) {
        expect([file, v.theirs, v.ours], v.theirsOut).toEqual([file, 'loads', 'refused']);
        expect(v.why, file).toMatch(REFUSED_BY_GPUALERT[file]!.why);
      } else {
        expect([file, v.ours], `${v.theirsOut}\n${v.why}`).toEqual([file, v.theirs]);
      }
    }
    // Both sides do refuse some: the comparison can fail.
    expect(verdicts.filter(([, v]) => v.theirs === 'refused').map(([f]) => f)).toEqual(['alertmanager-simple.yml', 'openshift-cmo.yml']);
  });

  it('route the same label sets to the same receivers where both load the file', () => {
    let compared = 0;
    for (const [file, sets] of Object.entries(LABEL_SETS)) {
      const path = routable(file);
      const ours = loadRoutes(path);
      if (!ours.ok) throw new Error(`${file}: ${ours.errors.map((e) => e.message).join('; ')}`);
      for (const labels of sets) {
        const theirs = amtool('http://127.0.0.1:9', ['config', 'routes', 'test', `--config.file=${path}`, ...labels])
          .out.trim()
          .split('\n')[0];
        const pairs = labels.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as [string, string]);
        expect(
          routesFor(ours.value.route, Object.fromEntries(pairs))
            .map((r) => r.receiver)
            .join(','),
          `${file}: ${labels.join(' ')}`,
        ).toBe(theirs);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(190);
  });
});
