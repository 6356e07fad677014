import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatRuleError, parseYamlText } from './load-yaml.ts';
import { loadXidCatalog, XidCatalogFile } from './xid-catalog.ts';

const nvidiaCodes = readFileSync(new URL('../../../test/fixtures/xid-catalog.csv', import.meta.url), 'utf8')
  .split('\n')
  .slice(1)
  .filter((l) => l.trim() !== '')
  .map((l) => Number(l.split(',')[0]));

describe('the Xid catalog in rules/', () => {
  const result = loadXidCatalog();
  if (!result.ok) throw new Error(result.errors.map(formatRuleError).join('\n'));
  const catalog = result.value;

  it('covers every code in NVIDIA\'s catalog', () => {
    expect(nvidiaCodes.length).toBe(172);
    for (const code of nvidiaCodes) expect(catalog.lookup(code).known, `Xid ${code}`).toBe(true);
  });

  it('grades the well-known faults as the field does', () => {
    for (const code of [48, 64, 74, 79, 95, 119, 120, 140]) expect(catalog.lookup(code).severity, `Xid ${code}`).toBe('critical');
    for (const code of [13, 31, 43, 63, 68, 92]) expect(catalog.lookup(code).severity, `Xid ${code}`).toBe('warning');
    expect(catalog.lookup(79).action).toMatch(/reboot/);
    expect(catalog.lookup(63).why).toMatch(/Split/);
    expect(catalog.lookup(48).cause).toBe('memory');
    expect(catalog.lookup(149).cause).toBe('nvlink');
  });

  it('never drops an unknown code: it is a warning that says so', () => {
    const unknown = catalog.lookup(9999);
    expect(unknown.known).toBe(false);
    expect(unknown.severity).toBe('warning');
    expect(unknown.meaning).toBe('unknown Xid');
  });

  it('reports a bad entry with file, line and field', () => {
    const text = 'codes:\n  - code: 1\n    mnemonic: X\n    meaning: y\n    cause: app\n    severity: fatal\n    action: z\n';
    const bad = parseYamlText('bad.yaml', text, XidCatalogFile);
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(formatRuleError(bad.errors[0]!)).toMatch(/^bad\.yaml:6: codes\.0\.severity: /);
  });
});
