import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ALERTMANAGER_DEFAULT_TEMPLATES } from './alertmanager-default-templates.ts';
import { templateData } from './go-template-data.ts';
import { CompiledTemplate, MAX_OUTPUT_CHARS, TemplateError, TemplateSet, type GoType, type Value } from './go-template.ts';
import { GoKV, GoList, GoStruct } from './go-template-values.ts';
import type { AlertView, Notification } from './notifier-core.ts';

const origin = { file: 'alertmanager.yml', line: 10 };

function run(text: string, data: Value = null, opts: { html?: boolean; dot?: GoType; set?: TemplateSet } = {}): string {
  const set = opts.set ?? new TemplateSet();
  return CompiledTemplate.compile(text, set, origin, opts.html ?? false, opts.dot ?? 'any').render(data);
}

function refused(text: string, dot: GoType = 'Data', set = new TemplateSet()): TemplateError {
  try {
    CompiledTemplate.compile(text, set, origin, false, dot);
  } catch (error) {
    if (error instanceof TemplateError) return error;
    throw error;
  }
  throw new Error(`expected ${text} to be refused`);
}

const kv = (o: Record<string, string>) => new GoKV(new Map(Object.entries(o)));
const strings = (...s: string[]) => new GoList('Strings', s);

/**
 * TestTemplateExpansion from Alertmanager 0.25.0's template/template_test.go, verbatim (title, in,
 * data, exp), https://github.com/prometheus/alertmanager/blob/v0.25.0/template/template_test.go,
 * and `trimSpace` from the same test on main (added after 0.25).
 */
const EXPANSION: { title: string; in: string; data?: Value; html?: boolean; exp?: string; fail?: boolean }[] = [
  { title: 'Template without action', in: 'abc', exp: 'abc' },
  { title: 'Template with simple action', in: '{{ "abc" }}', exp: 'abc' },
  { title: 'Template with invalid syntax', in: '{{ ', fail: true },
  { title: 'Template using toUpper', in: '{{ "abc" | toUpper }}', exp: 'ABC' },
  { title: 'Template using toLower', in: '{{ "ABC" | toLower }}', exp: 'abc' },
  { title: 'Template using title', in: '{{ "abc" | title }}', exp: 'Abc' },
  { title: 'Template using TrimSpace', in: '{{ " a b c " | trimSpace }}', exp: 'a b c' },
  { title: 'Template using positive match', in: '{{ if match "^a" "abc"}}abc{{ end }}', exp: 'abc' },
  { title: 'Template using negative match', in: '{{ if match "abcd" "abc" }}abc{{ end }}', exp: '' },
  { title: 'Template using join', in: '{{ . | join "," }}', data: strings('a', 'b', 'c'), exp: 'a,b,c' },
  { title: 'Text template without HTML escaping', in: '{{ "<b>" }}', exp: '<b>' },
  { title: 'HTML template with escaping', in: '{{ "<b>" }}', html: true, exp: '&lt;b&gt;' },
  { title: 'HTML template using safeHTML', in: '{{ "<b>" | safeHtml }}', html: true, exp: '<b>' },
  { title: 'Template using reReplaceAll', in: '{{ reReplaceAll "ab" "AB" "abcdabcda"}}', exp: 'ABcdABcda' },
  {
    title: 'Template using stringSlice',
    in: '{{ with .GroupLabels }}{{ with .Remove (stringSlice "key1" "key3") }}{{ .SortedPairs.Values }}{{ end }}{{ end }}',
    data: new GoStruct('Data', new Map([['GroupLabels', kv({ key1: 'key1', key2: 'key2', key3: 'key3', key4: 'key4' })]])),
    exp: '[key2 key4]',
  },
];

describe("Alertmanager's template expansion cases", () => {
  for (const tc of EXPANSION) {
    it(tc.title, () => {
      if (tc.fail) {
        expect(() => run(tc.in, tc.data ?? null, { html: tc.html ?? false })).toThrow(TemplateError);
        return;
      }
      expect(run(tc.in, tc.data ?? null, { html: tc.html ?? false })).toBe(tc.exp);
    });
  }
});

describe("Alertmanager's KV and Alerts methods (TestKVSortedPairs, TestKVRemove, TestAlertsFiring, 0.25.0)", () => {
  it('SortedPairs puts alertname first, then the names in order; Remove drops names', () => {
    const data = kv({ d: 'dVal', b: 'bVal', c: 'cVal', alertname: 'alert', a: 'aVal' });
    expect(run('{{ range .SortedPairs }}{{ .Name }}={{ .Value }};{{ end }}', data)).toBe('alertname=alert;a=aVal;b=bVal;c=cVal;d=dVal;');
    expect(run('{{ (.Remove (stringSlice "b" "c")).Names }}', data)).toBe('[alertname a d]');
    expect(run('{{ . }}', kv({ name1: 'value1', name2: 'value2' }))).toBe('name1=value1, name2=value2');
  });
});

const T = '2026-06-01T00:00:00.000Z';
function alertView(labels: Record<string, string>, status: 'firing' | 'resolved', annotations?: Record<string, string>): AlertView {
  return {
    id: JSON.stringify(labels),
    fingerprint: `fp-${labels.instance}`,
    host: 'h',
    status,
    severity: 'warning',
    category: 'other',
    summary: annotations?.summary ?? '',
    startsAt: T,
    expected: false,
    evidence: ['http://prometheus:9090/graph?g0.expr=up'],
    labels,
    ...(annotations ? { annotations } : {}),
    ...(status === 'resolved' ? { endsAt: '2026-06-01T00:05:00.000Z' } : {}),
  };
}

function notification(alerts: AlertView[], groupLabels: Record<string, string>): Notification {
  return {
    id: 'n',
    receiver: 'team-db',
    group: 'g',
    reason: 'first',
    alerts,
    firing: alerts.length,
    alertmanager: { receiver: 'team-db', groupLabels, alerts },
  };
}

const I1 = alertView({ alertname: 'DiskFull', team: 'db', instance: 'i1', severity: 'warning' }, 'firing', {
  summary: 'disk full on i1',
  runbook_url: 'https://runbooks/disk',
});
const I2 = alertView({ alertname: 'DiskFull', team: 'db', instance: 'i2', severity: 'warning' }, 'firing', {
  summary: 'disk full on i2',
  runbook_url: 'https://runbooks/disk',
});
const I3 = alertView({ alertname: 'DiskFull', team: 'db', instance: 'i3', severity: 'warning' }, 'resolved', { summary: 'disk full on i3' });

describe("Alertmanager's default templates (0.25.0's default.tmpl, verbatim)", () => {
  const set = new TemplateSet();
  set.add(ALERTMANAGER_DEFAULT_TEMPLATES, { file: 'default.tmpl', line: 1 });

  it('is the file in test/alertmanager/fixtures, and every define in it parses and checks', () => {
    expect(ALERTMANAGER_DEFAULT_TEMPLATES).toBe(readFileSync(new URL('../../../test/alertmanager/fixtures/default.tmpl', import.meta.url), 'utf8'));
    expect(set.defined.size).toBe(ALERTMANAGER_DEFAULT_TEMPLATES.match(/\{\{-? define/g)!.length);
    // The alert lists take .Alerts (as pagerduty's details and opsgenie's description pass them); the rest take the whole data.
    for (const name of set.defined.keys())
      expect(() =>
        CompiledTemplate.compile(`{{ template "${name}" . }}`, set, origin, false, /alert_list|instances/.test(name) ? 'Alerts' : 'Data'),
      ).not.toThrow();
    expect(() => CompiledTemplate.compile('{{ template "__text_alert_list" . }}', set, origin)).toThrow(/range can't iterate over Data/);
  });

  it('renders the subject, the alert list and the description as Alertmanager would', () => {
    const data = templateData(notification([I2, I1, I3], { alertname: 'DiskFull' }), 'http://am:9093');
    const render = (name: string, arg = '.') => CompiledTemplate.compile(`{{ template "${name}" ${arg} }}`, set, origin).render(data);
    // __subject: status upper-cased with the firing count, the group's values, then the other common labels' values.
    expect(render('slack.default.title')).toBe('[FIRING:2] DiskFull (warning db)');
    expect(render('slack.default.titlelink')).toBe('http://am:9093/#/alerts?receiver=team-db');
    expect(render('pagerduty.default.instances', '.Alerts')).toBe(
      [
        'Labels:\n - alertname = DiskFull\n - instance = i1\n - severity = warning\n - team = db\nAnnotations:\n - runbook_url = https://runbooks/disk\n - summary = disk full on i1\nSource: http://prometheus:9090/graph?g0.expr=up\n',
        'Labels:\n - alertname = DiskFull\n - instance = i2\n - severity = warning\n - team = db\nAnnotations:\n - runbook_url = https://runbooks/disk\n - summary = disk full on i2\nSource: http://prometheus:9090/graph?g0.expr=up\n',
        'Labels:\n - alertname = DiskFull\n - instance = i3\n - severity = warning\n - team = db\nAnnotations:\n - summary = disk full on i3\nSource: http://prometheus:9090/graph?g0.expr=up\n',
      ].join(''),
    );
    const description = render('opsgenie.default.description');
    expect(description.startsWith('\nAlerts Firing:\nLabels:\n - alertname = DiskFull\n - instance = i1')).toBe(true);
    expect(description).toContain('Alerts Resolved:\nLabels:\n - alertname = DiskFull\n - instance = i3');
  });
});

describe('the subset a receiver field uses', () => {
  const data = templateData(notification([I1, I2], { team: 'db' }), 'http://am:9093');
  const render = (text: string) => CompiledTemplate.compile(text, new TemplateSet(), origin).render(data);

  it('fields, annotations, range with variables, if/else if/else, len, trim markers, $', () => {
    expect(
      render('{{ .Status }} {{ .CommonLabels.alertname }} {{ .GroupLabels.SortedPairs.Values | join " " }} {{ len .Alerts.Firing }} {{ .Receiver }}'),
    ).toBe('firing DiskFull db 2 team-db');
    expect(
      render(
        '{{ range $i, $a := .Alerts }}{{ if $i }}, {{ end }}{{ $a.Labels.instance }}: {{ .Annotations.summary }} ({{ $.CommonAnnotations.runbook_url }}){{ end }}',
      ),
    ).toBe('i1: disk full on i1 (https://runbooks/disk), i2: disk full on i2 (https://runbooks/disk)');
    expect(render('{{ if eq .Status "resolved" }}ok{{ else if gt (len .Alerts) 1 }}many{{ else }}one{{ end }}')).toBe('many');
    expect(render('a  {{- " b " -}}  c\n{{- /* a comment */ -}}\nd')).toBe('a b cd');
    expect(render('{{ $s := .Status }}{{ range .Alerts }}{{ $s = "x" }}{{ end }}{{ $s }}')).toBe('x');
    expect(render('{{ .CommonLabels.missing }}|{{ index .CommonLabels "team" }}')).toBe('|db');
    expect(render('{{ define "line" }}{{ .Labels.instance | toUpper }}{{ end }}{{ range .Alerts }}{{ template "line" . }};{{ end }}')).toBe('I1;I2;');
    // time.Time's Format with Go's layout (UTC), its String, and Alertmanager's zero EndsAt for a firing alert.
    expect(
      render(
        '{{ range .Alerts }}{{ .StartsAt.Format "2006-01-02T15:04:05Z07:00 Mon Jan _2 3PM .000 .999" }}|{{ .StartsAt }}|{{ .EndsAt.UTC.Format "2006" }}|{{ .StartsAt.Unix }}{{ break_ }}{{ end }}'.replace(
          '{{ break_ }}',
          '',
        ),
      ),
    ).toBe('2026-06-01T00:00:00Z Mon Jun  1 12AM .000 |2026-06-01 00:00:00 +0000 UTC|0001|1780272000'.repeat(2));
    expect(
      render('{{ reReplaceAll "i(\\\\d)" "host-$1" "i1 i2" }} {{ match "(?i)DISK" .CommonLabels.alertname }} {{ "x y" | title }} {{ printf "%s=%d" "n" 3 }}'),
    ).toBe('host-1 host-2 true X Y n=3');
  });

  it('escapes what it prints in an HTML field unless safeHtml, as html/template does in text', () => {
    const html = CompiledTemplate.compile(
      '<b>{{ .CommonLabels.alertname }}</b>{{ "<i>+</i>" }}{{ "<hr>" | safeHtml }}',
      new TemplateSet(),
      origin,
      true,
    ).render(data);
    expect(html).toBe('<b>DiskFull</b>&lt;i&gt;&#43;&lt;/i&gt;<hr>');
  });

  it('refuses at load, with the line, what is outside the subset or wrong for the data', () => {
    expect(refused('{{ .Foo }}').message).toMatch(/can't evaluate field Foo in type Data/);
    expect(refused('{{ range .Alerts }}{{ .Labelz }}{{ end }}').message).toMatch(/field Labelz in type Alert/);
    expect(refused('{{ .Status | toJson }}').message).toMatch(/function "toJson" is not supported/);
    expect(refused('{{ template "nowhere" . }}').message).toMatch(/no such template "nowhere"/);
    expect(refused('{{ range .Alerts }}{{ break }}{{ end }}').message).toMatch(/break/);
    expect(refused('{{ .Alerts.Firing.Labels }}').message).toMatch(/field Labels in type Alerts/);
    expect(refused('{{ join " " .CommonLabels }}').message).toMatch(/join: argument 2 must be a list of strings/);
    expect(refused('{{ range .Alerts }}{{ .StartsAt.Hour }}{{ end }}').message).toMatch(
      /of a time's methods gpualert's templates support Format, UTC and Unix/,
    );
    expect(refused('{{ range .Alerts }}{{ .StartsAt.Format }}{{ end }}').message).toMatch(/wrong number of args for Format: want 1 got 0/);
    expect(refused('{{ if .Status }}open').message).toMatch(/unclosed if/);
    const e = refused('line one\n\n{{ .Nope }}');
    expect(e.line).toBe(origin.line + 2);
  });

  it('stays within its bounds: output, steps and nested template calls', () => {
    const set = new TemplateSet();
    set.add('{{ define "loop" }}{{ template "loop" . }}{{ end }}', { file: 't.tmpl', line: 1 });
    expect(() => CompiledTemplate.compile('{{ template "loop" . }}', set, origin).render(data)).toThrow(/nested deeper than/);
    const big = templateData(
      notification(
        Array.from({ length: 200 }, (_v, i) => alertView({ alertname: 'A', instance: `i${i}` }, 'firing', { summary: 'x'.repeat(400) })),
        {},
      ),
    );
    expect(() => CompiledTemplate.compile('{{ range .Alerts }}{{ .Annotations.summary }}{{ end }}', new TemplateSet(), origin).render(big)).toThrow(
      new RegExp(`longer than ${MAX_OUTPUT_CHARS}`),
    );
    expect(() => run(`${'{{ if true }}'.repeat(40)}x${'{{ end }}'.repeat(40)}`)).toThrow(/nested deeper than 32/);
  });

  it('bounds every value a function builds, not only what is written: a doubled variable is a TemplateError, not 256 MB', () => {
    // The attack: a variable doubled in a range never writes, so only a bound on each produced value stops it.
    const doubling = (n: number, expr: string) =>
      `{{ $x := "aaaaaaaaaaaaaaaa" }}{{ range stringSlice ${Array.from({ length: n }, (_v, i) => `"${i}"`).join(' ')} }}{{ $x = ${expr} }}{{ end }}{{ len $x }}`;
    // Below the bound it still works: 16 × 2^11 = 32 KiB.
    expect(run(doubling(11, 'printf "%s%s" $x $x'))).toBe(String(16 * 2 ** 11));
    for (const expr of [
      'printf "%s%s" $x $x',
      'print $x $x',
      'println $x $x',
      'join "" (stringSlice $x $x)',
      'html $x $x',
      'urlquery $x $x',
      'reReplaceAll "(a+)" "$1$1" $x',
    ]) {
      let thrown: unknown;
      try {
        run(doubling(25, expr));
      } catch (error) {
        thrown = error;
      }
      expect(thrown, expr).toBeInstanceOf(TemplateError);
      expect((thrown as Error).message, expr).toMatch(new RegExp(`longer than ${MAX_OUTPUT_CHARS} characters`));
    }
    // One call that would build gigabytes at once (many %s of a 32 KiB value) stops while it builds.
    const many = `{{ $x := "${'a'.repeat(1024)}" }}{{ printf "${'%s'.repeat(2000)}" ${'$x '.repeat(2000)}}}`;
    expect(() => run(many)).toThrow(TemplateError);
    expect(() => run(`{{ reReplaceAll "a" "${'$0'.repeat(2000)}" "${'a'.repeat(2000)}" }}`)).toThrow(TemplateError);
  });
});
