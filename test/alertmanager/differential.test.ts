import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadRoutes, routesFor } from '@gpualert/notify';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../infra/wait-for.ts';
import { relocatedAlertmanager } from './debian-tool.ts';
import { amtool, startGpualertNotifier, startToolOnFreePort, tempDir, TOKEN, WebhookSink, type Delivery } from './harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A window of two hours around now in Tokyo: muting there, not in UTC (nine hours away), so a UTC reading of `location` mutes nothing. */
function tokyoWindow(now: Date): { start: string; end: string } {
  const hour = Number(new Intl.DateTimeFormat('en-GB', { timeZone: 'Asia/Tokyo', hour: '2-digit', hourCycle: 'h23' }).format(now));
  const start = Math.min(Math.max(hour - 1, 0), 22);
  return { start: `${String(start).padStart(2, '0')}:00`, end: `${String(start + 2).padStart(2, '0')}:00` };
}

/** One Alertmanager configuration, as written for Alertmanager 0.25, its receivers at `base`. */
function config(base: string, window: { start: string; end: string }): string {
  return `
route:
  receiver: default
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
  routes:
  - matchers: [team="db"]
    receiver: db
    group_by: ['...']
    continue: true
  - match_re: { team: db|web }
    receiver: ops
    group_by: [team]
  - matchers: [alertname=NightJob]
    receiver: night
    mute_time_intervals: [tokyo-now]
  - matchers: [alertname=TemplateProbe]
    receiver: chat
    group_by: [alertname, zone]
inhibit_rules:
- source_matchers: [severity="critical"]
  target_matchers: [severity="warning"]
  equal: [instance]
time_intervals:
- name: tokyo-now
  time_intervals:
  - times: [{ start_time: '${window.start}', end_time: '${window.end}' }]
    location: Asia/Tokyo
receivers:
- name: default
  webhook_configs: [{ url: '${base}/default' }]
- name: db
  webhook_configs: [{ url: '${base}/db' }]
- name: ops
  webhook_configs: [{ url: '${base}/ops' }]
- name: night
  webhook_configs: [{ url: '${base}/night' }]
- name: chat
  slack_configs:
  - api_url: '${base}/slack'
    send_resolved: true
    username: 'gpu-{{ .CommonLabels.team }}'
    icon_emoji: ':fire:'
    title: '[{{ .Status | toUpper }}{{ if eq .Status "firing" }}:{{ .Alerts.Firing | len }}{{ end }}] {{ .GroupLabels.SortedPairs.Values | join " " }} {{ .CommonLabels.severity | title }}'
    text: |-
      {{ range $i, $a := .Alerts -}}
      {{ if $i }}---
      {{ end }}*{{ $a.Labels.instance | toUpper }}* {{ .Annotations.summary }}{{ if .Annotations.runbook_url }} (runbook: {{ .Annotations.runbook_url }}){{ else }} (no runbook){{ end }}
      {{ range .Labels.SortedPairs }}{{ .Name }}={{ .Value }} {{ end }}
      {{- end }}
      {{ with .CommonLabels.Remove .GroupLabels.Names }}{{ .Values | join ", " }}{{ end }} | {{ reReplaceAll "([a-z]+)-([0-9])" "$2.$1" .CommonLabels.zone }} | {{ len .Alerts.Resolved }} resolved | {{ .Receiver }} | {{ template "__subject" . }} | {{ (index .Alerts 0).StartsAt.Format "Mon Jan _2 15:04:05.000 MST 2006" }}
`;
}

/** Debian's Alertmanager 0.25 with this configuration on a loopback port, ready; its URL. */
async function startAlertmanager(yaml: string): Promise<string> {
  const dir = tempDir('alertmanager');
  writeFileSync(join(dir, 'alertmanager.yml'), yaml);
  const { binary, cwd } = relocatedAlertmanager();
  const { tool: alertmanager, port } = await startToolOnFreePort(
    binary,
    (free) => [
      `--config.file=${join(dir, 'alertmanager.yml')}`,
      `--storage.path=${join(dir, 'data')}`,
      '--cluster.listen-address=',
      `--web.listen-address=127.0.0.1:${free}`,
    ],
    cleanups,
    cwd,
  );
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok === true || alertmanager.exitCode !== null, 'Alertmanager', 30_000);
  expect(alertmanager.exitCode, alertmanager.output()).toBeNull();
  return url;
}

/** What was delivered, timing aside: (receiver, group labels, alert, firing/resolved) as one line each. */
function delivered(deliveries: readonly Delivery[]): string[] {
  const lines = new Set<string>();
  for (const { body, path } of deliveries) {
    if (path === '/slack') continue;
    const group = Object.entries(body.groupLabels)
      .sort()
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    for (const alert of body.alerts) lines.add(`${body.receiver} {${group}} ${alert.labels.alertname}/${alert.labels.instance} ${alert.status}`);
  }
  return [...lines].sort();
}

const A = { alertname: 'DiskFull', team: 'db', instance: 'i1', severity: 'warning' };
const B = { alertname: 'DiskFull', team: 'db', instance: 'i2', severity: 'warning' };
const C = { alertname: 'NodeDown', team: 'web', instance: 'i3', severity: 'critical' };
const D = { alertname: 'GpuHot', team: 'web', instance: 'i3', severity: 'warning' };
const E = { alertname: 'GpuHot', instance: 'i4', severity: 'warning' };
const F = { alertname: 'NightJob', instance: 'i5' };
const G = { alertname: 'Quiet', instance: 'i6' };

describe('the same configuration and alerts to Alertmanager 0.25 and to gpualert', () => {
  it('deliver the same (receiver, group labels, alert, status): grouping with ..., continue, inhibition with equal, silences, a mute interval in Asia/Tokyo', async () => {
    const window = tokyoWindow(new Date());
    const amSink = new WebhookSink();
    const ourSink = new WebhookSink();
    await amSink.start();
    await ourSink.start();
    cleanups.push(
      () => amSink.stop(),
      () => ourSink.stop(),
    );

    const am = await startAlertmanager(config(amSink.base, window));
    const { base: ours } = await startGpualertNotifier(config(ourSink.base, window), cleanups);

    const both = async (path: string, body: unknown) => {
      for (const base of [am, ours]) {
        const res = await fetch(`${base}/api/v2/${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        expect(res.status, `${base} ${path}: ${await res.clone().text()}`).toBe(200);
      }
    };
    const now = Date.now();
    await both('silences', {
      matchers: [{ name: 'alertname', value: 'Quiet', isRegex: false, isEqual: true }],
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
      createdBy: 'test',
      comment: 'quiet',
    });
    const firing = (labels: Record<string, string>) => ({
      labels,
      annotations: { summary: `${labels.alertname} on ${labels.instance}` },
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
    });
    const resolved = (labels: Record<string, string>) => ({ ...firing(labels), endsAt: new Date(Date.now() - 500).toISOString() });
    const settle = async (expected: readonly string[], what: string) => {
      for (const [name, sink] of [
        ['Alertmanager', amSink],
        ['gpualert', ourSink],
      ] as const) {
        await waitFor(
          () => expected.every((line) => delivered(sink.deliveries).includes(line)),
          `${name}: ${what}\n${delivered(sink.deliveries).join('\n')}`,
          30_000,
        );
      }
    };

    await both('alerts', [A, B, C, D, E, F, G].map(firing));
    const phase1 = [
      'db {alertname=DiskFull,instance=i1,severity=warning,team=db} DiskFull/i1 firing',
      'db {alertname=DiskFull,instance=i2,severity=warning,team=db} DiskFull/i2 firing',
      'ops {team=db} DiskFull/i1 firing',
      'ops {team=db} DiskFull/i2 firing',
      'ops {team=web} NodeDown/i3 firing',
      'default {alertname=GpuHot} GpuHot/i4 firing',
    ];
    await settle(phase1, 'the first alerts');

    // NodeDown resolves: GpuHot on i3, inhibited until now, is told; DiskFull on i1 resolves too.
    await both('alerts', [resolved(C), resolved(A)]);
    await settle(
      [
        'ops {team=web} NodeDown/i3 resolved',
        'ops {team=web} GpuHot/i3 firing',
        'db {alertname=DiskFull,instance=i1,severity=warning,team=db} DiskFull/i1 resolved',
        'ops {team=db} DiskFull/i1 resolved',
      ],
      'the second step',
    );

    await both('alerts', [B, D, E, F, G].map(resolved));
    const last = [
      'ops {team=db} DiskFull/i2 resolved',
      'ops {team=web} GpuHot/i3 resolved',
      'default {alertname=GpuHot} GpuHot/i4 resolved',
      'db {alertname=DiskFull,instance=i2,severity=warning,team=db} DiskFull/i2 resolved',
    ];
    await settle(last, 'everything resolved');

    // A Slack receiver with its own title and text templates: Alertmanager's attachment and gpualert's message say the same.
    const probe = (instance: string, runbook?: string) => ({
      labels: { alertname: 'TemplateProbe', zone: 'eu-1', severity: 'warning', team: 'gpu', instance },
      annotations: { summary: `probe on ${instance}`, ...(runbook ? { runbook_url: runbook } : {}) },
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
    });
    await both('alerts', [probe('node-b', 'https://runbooks.example/probe'), probe('node-a')]);
    const slack = (sink: WebhookSink) =>
      sink.deliveries
        .filter((d) => d.path === '/slack')
        .map((d) => {
          const body = d.body as unknown as {
            text?: string;
            blocks?: { text: { text: string } }[];
            attachments?: { title: string; text: string }[];
            username?: string;
            icon_emoji?: string;
          };
          const look = { username: body.username, icon_emoji: body.icon_emoji };
          return body.attachments
            ? { title: body.attachments[0]!.title, text: body.attachments[0]!.text, ...look }
            : { title: body.text ?? '', text: body.blocks?.[0]?.text.text ?? '', ...look };
        });
    for (const [name, sink] of [
      ['Alertmanager', amSink],
      ['gpualert', ourSink],
    ] as const) {
      await waitFor(() => slack(sink).length > 0, `${name}: the templated Slack message`, 30_000);
    }
    const [theirs] = slack(amSink);
    expect(theirs!.title).toBe('[FIRING:2] TemplateProbe eu-1 Warning');
    expect(theirs).toMatchObject({ username: 'gpu-gpu', icon_emoji: ':fire:' });
    expect(theirs!.text).toContain('*NODE-A* probe on node-a (no runbook)');
    expect(slack(ourSink)[0]).toEqual(theirs);

    const ours_ = delivered(ourSink.deliveries);
    expect(ours_).toEqual(delivered(amSink.deliveries));
    // Muted in Tokyo's night (or day), silenced: neither ever reached a receiver.
    expect(ours_.filter((l) => l.includes('NightJob') || l.includes('Quiet'))).toEqual([]);
    expect(ourSink.deliveries.filter((d) => d.path !== '/slack').every((d) => d.body.version === '4')).toBe(true);
  });

  it("take amtool's alert add and silence update as Alertmanager does: the start set to now, no made-up summary, the alertname, the silence's id kept", async () => {
    const sink = new WebhookSink();
    await sink.start();
    cleanups.push(() => sink.stop());
    const yaml = `route:\n  receiver: default\n  group_by: [alertname]\nreceivers:\n- name: default\n  webhook_configs: [{ url: '${sink.base}/default' }]\n`;
    const systems = [
      ['Alertmanager', await startAlertmanager(yaml)],
      ['gpualert', (await startGpualertNotifier(yaml, cleanups)).base],
    ] as const;
    const seen: Record<string, unknown>[] = [];
    for (const [name, base] of systems) {
      const before = Date.now();
      // amtool sends Go's zero time as startsAt and no annotations.
      const added = amtool(base, ['alert', 'add', 'alertname=AmtoolAdded', 'instance=gpu-9:9400']);
      expect(added.code, `${name}: ${added.out}`).toBe(0);
      let alert: { labels: Record<string, string>; annotations: Record<string, string>; startsAt: string } | undefined;
      await waitFor(
        async () => {
          const list = (await (await fetch(`${base}/api/v2/alerts`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as NonNullable<typeof alert>[];
          alert = list.find((a) => a.labels.alertname === 'AmtoolAdded');
          return alert !== undefined;
        },
        `${name}: the alert amtool added`,
        30_000,
      );
      expect(Date.parse(alert!.startsAt), `${name} startsAt ${alert!.startsAt}`).toBeGreaterThanOrEqual(before - 1_000);
      seen.push({ labels: alert!.labels, annotations: alert!.annotations });

      const created = amtool(base, ['silence', 'add', 'alertname=AmtoolAdded', '--comment=first', '--author=bo', '--duration=1h']);
      expect(created.code, `${name}: ${created.out}`).toBe(0);
      const id = created.out.trim();
      const updated = amtool(base, ['silence', 'update', id, '--comment=second']);
      expect(updated.code, `${name}: ${updated.out}`).toBe(0);
      const silences = JSON.parse(amtool(base, ['silence', 'query', '-o', 'json']).out) as { id: string; comment: string; status: { state: string } }[];
      // An active silence whose matchers and start stay is changed in place: its id is kept.
      expect(
        silences.filter((x) => x.status.state === 'active').map((x) => [x.id, x.comment]),
        name,
      ).toEqual([[id, 'second']]);
    }
    expect(seen[1]).toEqual(seen[0]);
    expect(seen[0]).toEqual({ labels: { alertname: 'AmtoolAdded', instance: 'gpu-9:9400' }, annotations: {} });
  });

  it('load or refuse the same configurations that amtool check-config accepts or refuses', () => {
    const receiver = "receivers:\n- name: team\n  webhook_configs: [{ url: 'http://127.0.0.1:9/hook' }]\n";
    const cases: Record<string, string> = {
      'a plain tree': `${receiver}route:\n  receiver: team\n  group_by: [alertname]\n`,
      'a number and a boolean in match': `${receiver}route:\n  receiver: team\n  routes:\n  - match: { test: 2, canary: true }\n    receiver: team\n`,
      'an invalid group_by label': `${receiver}route:\n  receiver: team\n  group_by: ['-invalid-']\n`,
      'a duplicated group_by label': `${receiver}route:\n  receiver: team\n  group_by: [a, a]\n`,
      'an undefined receiver': `${receiver}route:\n  receiver: nobody\n`,
    };
    const verdicts = Object.entries(cases).map(([name, yaml]) => {
      const path = join(tempDir('check-config'), 'alertmanager.yml');
      writeFileSync(path, yaml);
      const theirs = amtool('http://127.0.0.1:9', ['check-config', path]);
      const ours = loadRoutes(path);
      return [name, theirs.code === 0 ? 'loads' : 'refused', ours.ok ? 'loads' : 'refused'];
    });
    expect(verdicts.map(([name, , ours]) => [name, ours])).toEqual(verdicts.map(([name, theirs]) => [name, theirs]));
    expect(verdicts.filter(([, theirs]) => theirs === 'refused').length).toBe(3); // amtool does refuse: the comparison can fail
    // And where a bare number in match routes: as written, by both.
    const path = join(tempDir('check-config'), 'alertmanager.yml');
    writeFileSync(
      path,
      `${receiver}- name: v\n  webhook_configs: [{ url: 'http://127.0.0.1:9/v' }]\nroute:\n  receiver: team\n  routes:\n  - { receiver: v, match: { ver: 1.10, hex: 0x1F } }\n`,
    );
    const ours = loadRoutes(path);
    if (!ours.ok) throw new Error('the config did not load');
    for (const labels of [
      ['ver=1.10', 'hex=0x1F'],
      ['ver=1.1', 'hex=0x1F'],
      ['ver=1.10', 'hex=31'],
    ]) {
      const theirs = amtool('http://127.0.0.1:9', ['config', 'routes', 'test', `--config.file=${path}`, ...labels])
        .out.trim()
        .split('\n')[0];
      expect(
        routesFor(ours.value.route, Object.fromEntries(labels.map((l) => l.split('=') as [string, string])))
          .map((r) => r.receiver)
          .join(','),
        labels.join(' '),
      ).toBe(theirs);
    }
  });
});
