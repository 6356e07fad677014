import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatRuleError } from '@gpualert/rules';
import { describe, expect, it } from 'vitest';
import { opsgenieChannel } from './channels/opsgenie.ts';
import { pagerdutyChannel } from './channels/pagerduty.ts';
import { slackMessage } from './channels/slack.ts';
import type { CompiledTemplate } from './go-template.ts';
import { loadRoutes } from './load-routes.ts';
import type { AlertView, Notification } from './notifier-core.ts';
import { renderFields } from './receiver-templates.ts';

/** The text of a Slack message's first block, its section. */
function sectionText(message: ReturnType<typeof slackMessage>): string {
  const first = message.blocks[0];
  return first?.type === 'section' ? first.text.text : '';
}

function dir(): string {
  return mkdtempSync(join(tmpdir(), 'gpualert-templates-'));
}

const CONFIG = `templates: ['templates/*.tmpl']
receivers:
- name: team-db
  slack_configs:
  - api_url: 'https://hooks.slack.com/services/T/B/x'
    title: '{{ template "team.title" . }}'
    text: '{{ template "team.text" . }}'
  pagerduty_configs:
  - routing_key: abc
    url: URL
    description: '{{ template "pagerduty.default.description" . }}'
route: { receiver: team-db, group_by: [alertname] }
`;

const TEAM = `{{ define "team.title" }}[{{ .Status | toUpper }}{{ if eq .Status "firing" }}:{{ .Alerts.Firing | len }}{{ end }}] {{ .CommonLabels.alertname }}{{ end }}
{{ define "team.text" }}{{ range .Alerts -}}
*{{ .Labels.instance }}*: {{ .Annotations.summary }} <{{ .Annotations.runbook_url }}|runbook>
{{ end }}{{ end }}
`;

function alert(instance: string, extra: Record<string, string> = {}): AlertView {
  return {
    id: instance,
    fingerprint: `fp-${instance}`,
    host: instance,
    status: 'firing',
    severity: 'warning',
    category: 'other',
    summary: '',
    startsAt: '2026-06-01T00:00:00.000Z',
    expected: false,
    evidence: [],
    labels: { alertname: 'DiskFull', instance, ...extra },
    annotations: { summary: `disk full on ${instance}`, runbook_url: 'https://runbooks.example/disk' },
  };
}

function message(alerts: AlertView[]): Notification {
  return {
    id: 'n1',
    receiver: 'team-db/slack/0',
    group: 'g',
    reason: 'first',
    alerts,
    firing: alerts.length,
    alertmanager: { receiver: 'team-db', groupLabels: { alertname: 'DiskFull' }, alerts },
  };
}

function setup(config: string, templates: Record<string, string>): string {
  const root = dir();
  mkdirSync(join(root, 'templates'));
  for (const [name, text] of Object.entries(templates)) writeFileSync(join(root, 'templates', name), text);
  writeFileSync(join(root, 'alertmanager.yml'), config);
  return join(root, 'alertmanager.yml');
}

describe("templates: files and receivers' template fields", () => {
  it('loads the defines of the files a glob names (relative to the routes file) and renders Slack title and text with them', () => {
    const loaded = loadRoutes(setup(CONFIG.replace('URL', 'http://127.0.0.1:9/'), { 'team.tmpl': TEAM, 'ignored.txt': '{{ broken' }));
    if (!loaded.ok) throw new Error(loaded.errors.map(formatRuleError).join('\n'));
    const slack = loaded.value.receivers.find((r) => r.channel === 'slack')!;
    // A label value with Slack's control sequences is printed inert; the template's own <url|text> link stays a link.
    const out = slackMessage(message([alert('db-1'), alert('db-2', { note: '<!channel>' })]), {}, slack.compiled);
    expect(out.text).toBe('[FIRING:2] DiskFull');
    expect(sectionText(out)).toBe(
      '*db-1*: disk full on db-1 <https://runbooks.example/disk|runbook>\n*db-2*: disk full on db-2 <https://runbooks.example/disk|runbook>\n',
    );
    expect(JSON.stringify(slack)).not.toContain('compiled'); // never serialized
  });

  it("sends Slack's username and icon_emoji (templates) and icon_url and image_url (URLs) as Slack's webhook takes them; a template in a URL field is refused", () => {
    const config = (extra: string) =>
      `receivers:\n- name: team-db\n  slack_configs:\n  - api_url: 'http://127.0.0.1:9/'\n${extra}route: { receiver: team-db }\n`;
    const loaded = loadRoutes(
      setup(
        config(
          "    username: '{{ .CommonLabels.alertname }} bot'\n    icon_emoji: ':fire:'\n    icon_url: 'https://example.com/gpu.png'\n    image_url: 'https://grafana.example/render/panel.png?from=now-1h&to=now'\n",
        ),
        {},
      ),
    );
    if (!loaded.ok) throw new Error(loaded.errors.map(formatRuleError).join('\n'));
    const slack = loaded.value.receivers[0]!;
    const out = slackMessage(
      message([alert('db-1')]),
      { icon_url: String(slack.settings.icon_url), image_url: String(slack.settings.image_url) },
      slack.compiled,
    );
    expect(out).toMatchObject({ username: 'DiskFull bot', icon_emoji: ':fire:', icon_url: 'https://example.com/gpu.png' });
    expect(out.blocks.at(-1)).toEqual({ type: 'image', image_url: 'https://grafana.example/render/panel.png?from=now-1h&to=now', alt_text: out.text });
    const templated = loadRoutes(setup(config("    icon_url: '{{ .CommonLabels.icon }}'\n"), {}));
    expect(templated.ok ? [] : templated.errors.map(formatRuleError)).toEqual([
      expect.stringMatching(/:5: receivers\.0\.slack_configs\.0\.icon_url: expected a URL \(a template is not supported in this field by gpualert\)/),
    ]);
  });

  it('names the template file and line of a bad define, and the routes file line of a field calling a define that is not there', () => {
    const bad = loadRoutes(setup(CONFIG.replace('URL', 'http://127.0.0.1:9/'), { 'team.tmpl': `${TEAM}\n{{ define "x" }}{{ .Status | toJson }}{{ end }}\n` }));
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.errors.map(formatRuleError).join('\n')).toMatch(/team\.tmpl:6: template: function "toJson" is not supported/);
    const missing = loadRoutes(setup(CONFIG.replace('URL', 'http://127.0.0.1:9/'), { 'other.tmpl': '{{ define "other" }}x{{ end }}' }));
    expect(missing.ok).toBe(false);
    if (missing.ok) return;
    expect(missing.errors.map(formatRuleError).join('\n')).toMatch(
      /alertmanager\.yml:6: receivers\.0\.slack_configs\.0\.title: template: no such template "team\.title"/,
    );
    const wildDir = loadRoutes(setup(CONFIG.replace('URL', 'http://127.0.0.1:9/').replace('templates/*.tmpl', '*/team.tmpl'), { 'team.tmpl': TEAM }));
    expect(wildDir.ok ? '' : wildDir.errors.map(formatRuleError).join('\n')).toMatch(/templates\.0: wildcards are supported in the file name only/);
  });

  it("renders PagerDuty's description template (Alertmanager's default subject) as the event's summary", async () => {
    const bodies: { payload: { summary: string } }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(body) as { payload: { summary: string } });
        res.writeHead(202).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/v2/enqueue`;
      const loaded = loadRoutes(setup(CONFIG.replace('URL', url), { 'team.tmpl': TEAM }));
      if (!loaded.ok) throw new Error(loaded.errors.map(formatRuleError).join('\n'));
      const pd = loaded.value.receivers.find((r) => r.channel === 'pagerduty')!;
      const result = await pagerdutyChannel({ url, routing_key: 'abc' }, pd.compiled).send(message([alert('db-1'), alert('db-2')]));
      expect(result.ok).toBe(true);
      expect(bodies.map((b) => b.payload.summary)).toEqual(['[FIRING:2] DiskFull ', '[FIRING:2] DiskFull ']);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe("Opsgenie's message and description templates", () => {
  it("become the alert's message (one line, at most 130 characters) and description", async () => {
    const bodies: { message: string; description: string }[] = [];
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(JSON.parse(body) as { message: string; description: string });
        res.writeHead(202).end('{}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
      const config = `receivers:
- name: ops
  opsgenie_configs:
  - api_key: k
    api_url: '${url}'
    message: '{{ .CommonLabels.alertname }} x{{ len .Alerts }}{{ range .Alerts }} {{ .Labels.instance }}{{ end }}{{ "\\n" }}{{ "y" }}'
    description: '{{ template "opsgenie.default.description" . }}'
route: { receiver: ops }
`;
      const loaded = loadRoutes(setup(config, {}));
      if (!loaded.ok) throw new Error(loaded.errors.map(formatRuleError).join('\n'));
      const og = loaded.value.receivers[0]!;
      expect((await opsgenieChannel({ url, api_key: 'k' }, og.compiled).send(message([alert('db-1'), alert('db-2')]))).ok).toBe(true);
      expect(bodies[0]!.message).toBe('DiskFull x2 db-1 db-2 y');
      expect(bodies[0]!.description).toMatch(/^disk full on db-1|Alerts Firing:\nLabels:\n - alertname = DiskFull\n - instance = db-1/m);
      expect(bodies[0]!.description).toContain('Annotations:\n - runbook_url = https://runbooks.example/disk\n - summary = disk full on db-1\n');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('a template that fails on one message', () => {
  it("sends gpualert's own text for that field and says why in the message, never dropping the alert", () => {
    const loaded = loadRoutes(
      setup(
        CONFIG.replace('URL', 'http://127.0.0.1:9/').replace(
          `text: '{{ template "team.text" . }}'`,
          `text: '{{ range .Alerts }}{{ reReplaceAll .Labels.pattern "x" "y" }}{{ end }}'`,
        ),
        { 'team.tmpl': TEAM },
      ),
    );
    if (!loaded.ok) throw new Error(loaded.errors.map(formatRuleError).join('\n'));
    const slack = loaded.value.receivers.find((r) => r.channel === 'slack')!;
    const fine = slackMessage(message([alert('db-1', { pattern: 'a+' })]), {}, slack.compiled);
    expect(sectionText(fine)).toBe('y');
    const bad = slackMessage(message([alert('db-1', { pattern: '(' })]), {}, slack.compiled);
    expect(bad.text).toBe('[FIRING:1] DiskFull');
    expect(sectionText(bad)).toMatch(/db-1[\s\S]*_text: template: not an RE2 regular expression/);
  });

  it('a value that grows past the bound (a variable doubled in a range) is the same: own text, the reason said', () => {
    const doubling = `{{ $x := "aaaaaaaaaaaaaaaa" }}{{ range stringSlice ${Array.from({ length: 25 }, (_v, i) => `"${i}"`).join(' ')} }}{{ $x = printf "%s%s" $x $x }}{{ end }}{{ len $x }}`;
    const loaded = loadRoutes(
      setup(CONFIG.replace('URL', 'http://127.0.0.1:9/').replace(`text: '{{ template "team.text" . }}'`, `text: '${doubling}'`), { 'team.tmpl': TEAM }),
    );
    if (!loaded.ok) throw new Error(loaded.errors.map(formatRuleError).join('\n'));
    const slack = loaded.value.receivers.find((r) => r.channel === 'slack')!;
    const out = slackMessage(message([alert('db-1')]), {}, slack.compiled);
    expect(out.text).toBe('[FIRING:1] DiskFull');
    expect(sectionText(out)).toMatch(/db-1[\s\S]*_text: template: printf: result longer than 65536 characters/);
  });

  it('any other error while rendering (a bug in gpualert, not the template) also falls back, never fails the send', () => {
    const broken = {
      render: () => {
        throw new RangeError('Invalid string length');
      },
    } as unknown as CompiledTemplate;
    const r = renderFields({ text: broken }, message([alert('db-1')]));
    expect(r?.fields.text).toBeUndefined();
    expect(r?.errors).toEqual(['text: template: could not be rendered (RangeError: Invalid string length)']);
  });
});
