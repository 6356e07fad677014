import type { KnownBlock } from '@slack/types';
import { channelSettings, createChannel, RoutesFile, type AlertView, type Notification } from '@gpualert/notify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { dingtalkResult } from '../packages/notify/src/channels/dingtalk.ts';
import { FEISHU_MAX_RESET_MS, feishuHttpFailure, feishuResult } from '../packages/notify/src/channels/feishu.ts';
import { slackMessage } from '../packages/notify/src/channels/slack.ts';
import { FEISHU_RESET_SECONDS, VendorReceivers } from './infra/vendor-receivers.ts';

const SECRETS = {
  feishu: 'feishu-secret',
  dingtalk: 'SECdingtalk-secret',
  webhook: `whsec_${Buffer.from('webhook secret of thirty-two byte').toString('base64')}`,
  routingKey: 'R0UTINGKEY0000000000000000000000',
  opsgenie: 'og-key',
};
const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function alert(overrides: Partial<AlertView> = {}): AlertView {
  return {
    id: 'a1',
    fingerprint: 'fp-lost-gpu3',
    host: 'gpu-node-002',
    status: 'firing',
    severity: 'critical',
    category: 'xid',
    summary: 'GPU 3 on gpu-node-002 has fallen off the bus (Xid 79)',
    action: 'reboot the host',
    gpu: 3,
    startsAt: '2026-06-01T02:00:00.000Z',
    expected: false,
    evidence: ['Xid 79 at 02:00:00'],
    labels: { cluster: 'lab' },
    ...overrides,
  };
}
/** The nasty summary: 5,000 characters of CJK and emoji after every markup that pings, links or breaks out. */
const NASTY = '<!channel> <http://evil|click me> & * | ` {code} <at user_id="all"> <@all> <font color="red">x</font> 告警\n';
function nasty(parity: 0 | 1): AlertView {
  const summary = `${NASTY}${'x'.repeat(parity)}${'GPU 故障🔥'.repeat(700)}`.slice(0, 4980) + ' END-OF-SUMMARY';
  return alert({
    fingerprint: `fp-nasty-${parity}`,
    host: 'gpu-node-<!here>\n07',
    summary,
    action: '`rm -rf` {code}',
    category: 'xid|*bold*',
    evidence: ['line one\nline two', '<@U123>'],
    labels: { 'rack\nname': 'a\nb', cluster: 'lab\n<!channel>' },
  });
}
function notification(alerts: AlertView[], reason: Notification['reason'] = 'first'): Notification {
  return { id: `n-${alerts.map((a) => a.fingerprint).join('-')}-${reason}`, receiver: 'r', group: 'g', reason, alerts, firing: alerts.length };
}

let vendors: VendorReceivers;
beforeAll(async () => {
  vendors = new VendorReceivers(SECRETS, { rateLimits: false });
  await vendors.start();
});
afterAll(() => vendors.stop());

function channel(channelName: string, settings: Record<string, string>) {
  const routes = RoutesFile.parse({ receivers: [{ name: 'r', channel: channelName, settings }], route: { receiver: 'r' } });
  return createChannel(routes.receivers[0]!, {});
}
const CHANNELS: [string, () => Record<string, string>][] = [
  ['slack', () => ({ url: `${vendors.base}/slack/hook` })],
  ['feishu', () => ({ url: `${vendors.base}/feishu/hook`, secret: SECRETS.feishu })],
  ['dingtalk', () => ({ url: `${vendors.base}/dingtalk/robot/send?access_token=t`, secret: SECRETS.dingtalk })],
  ['wecom', () => ({ url: `${vendors.base}/wecom/send?key=k` })],
  ['pagerduty', () => ({ url: `${vendors.base}/pagerduty/v2/enqueue`, routing_key: SECRETS.routingKey })],
  ['opsgenie', () => ({ url: `${vendors.base}/opsgenie`, api_key: SECRETS.opsgenie })],
  ['victorops', () => ({ url: `${vendors.base}/victorops/integrations/generic/20131114/alert/`, api_key: SECRETS.routingKey, routing_key: 'gpu-team' })],
  ['pushover', () => ({ url: `${vendors.base}/pushover/1/messages.json`, token: SECRETS.routingKey, user_key: 'uQiRzpo4DXghDmr9QzzfQu27cmVRsG' })],
  ['jira', () => ({ url: `${vendors.base}/jira`, user: 'bot', token: 't', project: 'OPS' })],
  ['servicenow', () => ({ url: `${vendors.base}/snow`, user: 'bot', password: 'p' })],
  ['webhook', () => ({ url: `${vendors.base}/webhook/in`, secret: SECRETS.webhook })],
];

describe("every channel against its vendor's published contract", () => {
  for (const [name, settings] of CHANNELS) {
    it(`${name}: a realistic alert and a nasty one are accepted, nothing pings, nothing is cut mid-character`, async () => {
      const before = { received: vendors.received.length, rejected: vendors.rejected.length, pings: vendors.pings.length };
      const send = channel(name, settings());
      for (const n of [notification([alert()]), notification([nasty(0), nasty(1)]), notification([nasty(0), nasty(1)], 'resolved')]) {
        const result = await send.send(n.reason === 'resolved' ? { ...n, alerts: n.alerts.map((a) => ({ ...a, status: 'resolved' as const })) } : n);
        expect(result, `${name} ${n.reason}`).toEqual({ ok: true });
      }
      expect(vendors.rejected.slice(before.rejected)).toEqual([]);
      expect(vendors.pings.slice(before.pings)).toEqual([]);
      const received = vendors.received.slice(before.received);
      expect(received.length).toBeGreaterThan(0);
      for (const r of received)
        expect(LONE.test(JSON.stringify(r.body).replace(/\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}/g, ''))).toBe(false);
    });
  }

  it('feishu: a 429 from its gateway is retried after x-ogw-ratelimit-reset, not at once', async () => {
    vendors.fail('feishu', '429', { count: 1 });
    const result = await channel('feishu', CHANNELS[1]![1]()).send(notification([alert()]));
    expect(result).toMatchObject({ ok: false, retriable: true, retryAfterMs: Number(FEISHU_RESET_SECONDS) * 1000 });
    expect(await channel('feishu', CHANNELS[1]![1]()).send(notification([alert()]))).toEqual({ ok: true });
    // Older APIs answer 400 with the same code; a plain 400 is no limit; the header is whole seconds, within a bound.
    const headers = (reset: string | null) => ({ get: (name: string) => (name === 'x-ogw-ratelimit-reset' ? reset : null) });
    const limited = JSON.stringify({ code: 99991400, msg: 'request trigger frequency limit' });
    expect(feishuHttpFailure(400, limited, headers('7'))).toMatchObject({ retriable: true, retryAfterMs: 7_000 });
    expect(feishuHttpFailure(400, '{"code":9499,"msg":"Bad Request"}', headers('7'))).toMatchObject({ retriable: false });
    expect(feishuHttpFailure(400, 'not json', headers('7'))).toMatchObject({ retriable: false });
    expect(feishuHttpFailure(429, limited, headers('99999999'))).toMatchObject({ retryAfterMs: FEISHU_MAX_RESET_MS });
    for (const junk of ['-1', '1e3', '', 'soon', null]) expect(feishuHttpFailure(429, limited, headers(junk))).not.toHaveProperty('retryAfterMs');
    // The longer wait when Retry-After says more than the reset header (a reset of 0 never shortens it).
    const both = { get: (name: string) => (name === 'x-ogw-ratelimit-reset' ? '0' : name === 'retry-after' ? '120' : null) };
    expect(feishuHttpFailure(429, limited, both)).toMatchObject({ retryAfterMs: 120_000 });
  });

  it('pagerduty: 600 KB of evidence pages within its 512 KB, keeping the first lines and saying how many were cut', async () => {
    const line = (i: number) => `[${i}] NVRM: Xid (PCI:0000:3a:00): 79, pid=1, GPU has fallen off the bus. ${'x'.repeat(900)}`;
    const evidence = Array.from({ length: 640 }, (_, i) => line(i));
    expect(Buffer.byteLength(JSON.stringify(evidence))).toBeGreaterThan(600_000);
    const before = vendors.of('pagerduty').length;
    expect(await channel('pagerduty', CHANNELS[4]![1]()).send(notification([alert({ evidence })]))).toEqual({ ok: true });
    const [event] = vendors.of('pagerduty').slice(before) as { body: { payload: { custom_details: { evidence: string[] } } } }[];
    const size = Buffer.byteLength(JSON.stringify(event!.body));
    expect(size).toBeLessThanOrEqual(512 * 1024);
    expect(size).toBeGreaterThan(500 * 1024); // as much as fits, not a token 64 KB
    const sent = event!.body.payload.custom_details.evidence;
    expect(sent.slice(0, -1)).toEqual(evidence.slice(0, sent.length - 1));
    expect(sent.at(-1)).toBe(`… ${evidence.length - sent.length + 1} of 640 evidence lines cut to keep the event within PagerDuty's 512 KB`);
  });

  it('a group of 5,000 alerts goes to each chat as one message: the alerts that fit, then a line with how many more, and only those written', async () => {
    const text: Record<string, (body: any) => string> = {
      slack: (b) => b.blocks[0].text.text,
      feishu: (b) => b.content.text,
      dingtalk: (b) => b.markdown.text,
      wecom: (b) => b.markdown.content,
    };
    for (const [name, settings] of CHANNELS.filter(([n]) => n in text)) {
      let summariesRead = 0;
      const alerts = Array.from({ length: 5_000 }, (_, i) => {
        const a = alert({ fingerprint: `fp-storm-${i}`, host: `gpu-node-${i}` });
        return Object.defineProperty({ ...a }, 'summary', {
          get: () => {
            summariesRead += 1;
            return a.summary;
          },
          enumerable: true,
        });
      });
      const before = vendors.of(name).length;
      expect(await channel(name, settings()).send(notification(alerts)), name).toEqual({ ok: true });
      const sent = text[name]!(vendors.of(name).slice(before)[0]!.body);
      const shown = sent.match(/fp-storm-\d+/g) ?? [];
      const more = /… ([\d,]+) more alerts not shown: the message holds no more$/.exec(sent);
      expect(more, `${name}: ${sent.slice(-200)}`).not.toBeNull();
      expect(shown.length, name).toBeGreaterThan(0);
      expect(shown.length + Number(more![1]!.replace(/,/g, '')), name).toBe(5_000);
      // Written no further than the message holds: a summary is read for the title and each alert shown, not 5,000 times.
      expect(summariesRead, name).toBeLessThanOrEqual(shown.length + 3);
      // A first alert too large for the message alone is cut, and the line about the others still ends it.
      const huge = [alert({ fingerprint: 'fp-huge', summary: `${'告警 GPU 3 '.repeat(4_000)}END` }), ...alerts.slice(1, 1_000)];
      const at = vendors.of(name).length;
      expect(await channel(name, settings()).send(notification(huge)), name).toEqual({ ok: true });
      const cut = text[name]!(vendors.of(name).slice(at)[0]!.body);
      const rest = /^[^]*?告警 GPU 3[^]*… ([\d,]+) more alerts not shown: the message holds no more$/.exec(cut);
      expect(rest, `${name}: ${cut.slice(-200)}`).not.toBeNull();
      expect((cut.match(/fp-storm-\d+/g) ?? []).length + Number(rest![1]!.replace(/,/g, '')), name).toBe(999);
    }
  });

  it("pagerduty with Alertmanager's service_key speaks Events API v1: a trigger and a resolve under the alert's incident_key, 403 retried", async () => {
    // As Alertmanager loads it: Events API v1 at v1's own endpoint, and a url beside service_key refused (Alertmanager ignores it).
    const am = RoutesFile.parse(parseYaml(`receivers:\n- name: v1\n  pagerduty_configs:\n  - service_key: ${SECRETS.routingKey}\nroute: { receiver: v1 }\n`));
    expect(am.receivers[0]!.settings).toEqual({ url: 'https://events.pagerduty.com/generic/2010-04-15/create_event.json', service_key: SECRETS.routingKey });
    const withUrl = RoutesFile.safeParse(
      parseYaml(
        `receivers:\n- name: v1\n  pagerduty_configs:\n  - { service_key: k, url: 'https://events.pagerduty.com/v2/enqueue' }\nroute: { receiver: v1 }\n`,
      ),
    );
    expect(withUrl.success ? '' : withUrl.error.issues.map((i) => i.message).join()).toMatch(/ignores url/);
    // Sent to the loopback PagerDuty as the same settings point it there.
    const v1 = channel('pagerduty', { url: `${vendors.base}/pagerduty/generic/2010-04-15/create_event.json`, service_key: SECRETS.routingKey });
    const before = vendors.of('pagerduty').length;
    expect(await v1.send(notification([alert()]))).toEqual({ ok: true });
    expect(await v1.send(notification([alert({ status: 'resolved' })], 'resolved'))).toEqual({ ok: true });
    const sent = vendors
      .of('pagerduty')
      .slice(before)
      .map((r) => r.body as Record<string, unknown>);
    expect(sent.map((e) => [e.event_type, e.incident_key, e.description])).toEqual([
      ['trigger', 'fp-lost-gpu3', alert().summary],
      ['resolve', 'fp-lost-gpu3', alert().summary],
    ]);
    expect(sent[0]!.details).toMatchObject({ evidence: alert().evidence });
    const both = RoutesFile.safeParse(
      parseYaml(`receivers:\n- name: v1\n  pagerduty_configs:\n  - { service_key: a, routing_key: b }\nroute: { receiver: v1 }\n`),
    );
    expect(both.success ? '' : both.error.issues.map((i) => i.message).join()).toMatch(
      /one of routing_key \(Events API v2\) and service_key \(Events API v1\), not both/,
    );
  });

  it("victorops from Alertmanager's victorops_configs: one event per alert at the REST endpoint, RECOVERY under the same entity_id, its templates rendered", async () => {
    const routes = RoutesFile.parse(
      parseYaml(
        [
          'global: { victorops_api_url: "' + `${vendors.base}/victorops/integrations/generic/20131114/alert/` + '" }',
          'receivers:',
          '- name: oncall',
          '  victorops_configs:',
          `  - { api_key: ${SECRETS.routingKey}, routing_key: gpu-team, entity_display_name: '{{ .CommonLabels.cluster }} is hot' }`,
          'route: { receiver: oncall }',
          '',
        ].join('\n'),
      ),
    );
    const send = createChannel(routes.receivers[0]!, {});
    const before = vendors.of('victorops').length;
    expect(await send.send(notification([alert()]))).toEqual({ ok: true });
    expect(await send.send(notification([alert({ status: 'resolved' })], 'resolved'))).toEqual({ ok: true });
    const sent = vendors
      .of('victorops')
      .slice(before)
      .map((r) => r.body as Record<string, unknown>);
    expect(await send.send(notification([alert({ fingerprint: 'fp-warm', severity: 'warning' })]))).toEqual({ ok: true });
    expect(sent.map((e) => [e.message_type, e.entity_id, e.entity_display_name, e.monitoring_tool])).toEqual([
      ['CRITICAL', 'fp-lost-gpu3', 'lab is hot', 'gpualert'],
      ['RECOVERY', 'fp-lost-gpu3', 'lab is hot', 'gpualert'],
    ]);
    // Alertmanager's default message_type is CRITICAL whatever the severity; the api key is never in a settings URL.
    expect((vendors.of('victorops').at(-1)!.body as Record<string, unknown>).message_type).toBe('CRITICAL');
    expect(routes.receivers[0]!.settings.url).not.toContain(SECRETS.routingKey);
    for (const field of ['routing_key: "{{ .CommonLabels.team }}"', 'message_type: 5']) {
      const bad = RoutesFile.safeParse(
        parseYaml(
          `receivers:\n- name: oncall\n  victorops_configs:\n  - { api_key: k, routing_key: r, ${field} }\nroute: { receiver: oncall }\n`.replace(
            'routing_key: r, routing_key',
            'routing_key',
          ),
        ),
      );
      expect(bad.success, field).toBe(false);
    }
    const bad = RoutesFile.safeParse(
      parseYaml(
        `receivers:\n- name: oncall\n  victorops_configs:\n  - { api_key: k, routing_key: r, message_type: '{{ .Status }}' }\nroute: { receiver: oncall }\n`,
      ),
    );
    expect(bad.success ? '' : bad.error.issues.map((i) => i.message).join()).toMatch(/a template is not supported in this field/);
  });

  it("pushover from Alertmanager's pushover_configs: emergency while firing (retry and expire as Alertmanager's), 0 resolved, a set priority kept", () => {
    const load = (extra: string) =>
      RoutesFile.safeParse(parseYaml(`receivers:\n- name: phone\n  pushover_configs:\n  - { user_key: u, token: t${extra} }\nroute: { receiver: phone }\n`));
    const plain = load('');
    expect(plain.success && plain.data.receivers[0]).toMatchObject({
      channel: 'pushover',
      settings: { url: 'https://api.pushover.net/1/messages.json', token: 't', user_key: 'u' },
    });
    expect(load(', priority: 1').success && load(', priority: 1').data?.receivers[0]!.settings.priority).toBe('1');
    const templated = load(', priority: \'{{ if eq .Status "firing" }}1{{ end }}\'');
    expect(templated.success ? '' : templated.error.issues.map((i) => i.message).join()).toMatch(/a template is not supported in this field/);
    const unknown = load(', html: true');
    expect(unknown.success ? '' : unknown.error.issues.map((i) => i.message).join()).toMatch(/"html" is not supported by gpualert/);
  });

  it('pushover: a firing message is an emergency with retry and expire, a resolved one priority 0', async () => {
    const send = channel('pushover', CHANNELS.find(([n]) => n === 'pushover')![1]());
    const before = vendors.of('pushover').length;
    expect(await send.send(notification([alert()]))).toEqual({ ok: true });
    expect(await send.send(notification([alert({ status: 'resolved' })], 'resolved'))).toEqual({ ok: true });
    const sent = vendors
      .of('pushover')
      .slice(before)
      .map((r) => r.body as Record<string, unknown>);
    expect(sent.map((m) => [m.priority, m.retry, m.expire])).toEqual([
      [2, 60, 3600],
      [0, undefined, undefined],
    ]);
  });

  it("slack: escapes &, <, > and writes bold as *x*, in a message that fits Slack's published block types", () => {
    const message = slackMessage(notification([nasty(0)]));
    const blocks: KnownBlock[] = message.blocks; // compile-time check against @slack/types
    const text = (blocks[0] as { text: { text: string } }).text.text;
    expect(text).toContain('&lt;!channel&gt; &lt;http://evil|click me&gt; &amp;');
    expect(text.startsWith('*[CRITICAL]')).toBe(true);
    expect(text).not.toContain('**');
    expect(text.length).toBeLessThanOrEqual(3000);
  });

  it('feishu: the body stays within 20 KB and the summary is sent once', async () => {
    const before = vendors.received.length;
    expect(await channel('feishu', CHANNELS[1]![1]()).send(notification([nasty(0)]))).toEqual({ ok: true });
    const body = vendors.received[before]!.body;
    expect(Buffer.byteLength(JSON.stringify(body))).toBeLessThanOrEqual(20 * 1024);
    expect((body.content.text as string).match(/END-OF-SUMMARY/g)).toHaveLength(1);
  });

  it('jira data center: REST v2 with /search and wiki text; jira cloud: /search answers 410 and the channel uses /search/jql with ADF', async () => {
    const dc = new VendorReceivers(SECRETS, { jira: 'datacenter' });
    await dc.start();
    try {
      const send = createChannel(
        RoutesFile.parse({
          receivers: [{ name: 'r', channel: 'jira', settings: { url: `${dc.base}/jira`, user: 'b', token: 't', project: 'OPS' } }],
          route: { receiver: 'r' },
        }).receivers[0]!,
        {},
      );
      expect(await send.send(notification([nasty(1)]))).toEqual({ ok: true });
      expect(dc.of('jira')[0]!.path).toBe('/jira/rest/api/2/issue');
      expect(dc.of('jira')[0]!.body.fields.description).toContain('\\{code\\}');
    } finally {
      await dc.stop();
    }
    const cloud = vendors.of('jira').find((r) => r.path === '/jira/rest/api/3/issue');
    expect(cloud?.body.fields.description).toMatchObject({ type: 'doc', version: 1 });
    expect(cloud?.body.fields.summary).not.toMatch(/\n/);
  });

  it('servicenow: cmdb_ci goes with sysparm_input_display_value, and resolve uses a close code from the default choice list', () => {
    const incidents = vendors.servicenowIncidents();
    expect(incidents.length).toBeGreaterThan(0);
    expect(incidents.find((i) => i.state === '6')?.close_code).toBe('Solution provided');
    expect(incidents[0]!.cmdb_ci).toBe('gpu-node-002');
  });

  it('wrong retries: Feishu 9499 is a bad request (no retry), 11232 its rate limit; DingTalk 130101 waits its 10 minutes', () => {
    expect(feishuResult(9499, 'Bad Request')).toMatchObject({ ok: false, retriable: false });
    expect(feishuResult(11232, 'frequency limited')).toMatchObject({ ok: false, retriable: true });
    expect(dingtalkResult(130101, 'send too fast')).toMatchObject({ ok: false, retriable: true, retryAfterMs: 600_000 });
    expect(dingtalkResult(310000, 'sign not match')).toMatchObject({ ok: false, retriable: false });
  });

  it('webhook: a secret that is not whsec_ + strict base64 (24–64 bytes) is refused at load, as the reference library would', () => {
    for (const secret of ['plain-text-secret', 'whsec_not*base64!', 'whsec_QUJD', `whsec_${Buffer.from('x'.repeat(32)).toString('base64')}%`]) {
      expect(channelSettings('webhook', false).safeParse({ url: 'https://h.example/in', secret }).success, secret).toBe(false);
    }
    expect(channelSettings('webhook', false).safeParse({ url: 'https://h.example/in', secret: SECRETS.webhook }).success).toBe(true);
  });
});

/** The parts of a MIME message as a mail client decodes them (base64 or quoted-printable). */
function mimeParts(eml: string): { type: string; text: string }[] {
  const boundary = /boundary="?([^";\r\n]+)"?/i.exec(eml)?.[1];
  const sections = boundary ? eml.split(`--${boundary}`).slice(1, -1) : [eml];
  return sections.map((section) => {
    const [head = '', ...rest] = section.split(/\r?\n\r?\n/);
    const raw = rest.join('\n\n');
    const type = /content-type:\s*([^;\r\n]+)/i.exec(head)?.[1]?.trim().toLowerCase() ?? 'text/plain';
    const encoding = /content-transfer-encoding:\s*(\S+)/i.exec(head)?.[1]?.toLowerCase();
    const bytes =
      encoding === 'base64'
        ? Buffer.from(raw.replace(/\s+/g, ''), 'base64')
        : encoding === 'quoted-printable'
          ? Buffer.from(
              raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))),
              'latin1',
            )
          : Buffer.from(raw, 'utf8');
    return { type, text: bytes.toString('utf8') };
  });
}

describe('email against a real SMTP server', () => {
  it('an Alertmanager email_configs requires STARTTLS as Alertmanager does: refused by a server without it unless require_tls is false, and says hello as set', async () => {
    const { SmtpSink } = await import('./infra/smtp-sink.ts');
    const smtp = new SmtpSink(); // offers no STARTTLS
    await smtp.start();
    try {
      const receiver = (extra: string, global = '') =>
        RoutesFile.parse(
          parseYaml(
            `${global}receivers:\n- name: mail\n  email_configs:\n  - { to: oncall@example.com, from: am@example.com, smarthost: '127.0.0.1:${smtp.port}'${extra} }\nroute: { receiver: mail }\n`,
          ),
        ).receivers[0]!;
      const required = await createChannel(receiver(''), {}).send(notification([alert()]));
      expect(required).toMatchObject({ ok: false });
      expect(!required.ok && required.error).toMatch(/STARTTLS|TLS/i);
      expect(smtp.mails()).toHaveLength(0);
      for (const [extra, global] of [
        [', require_tls: false, hello: gpu-alerts.example.org', ''],
        ['', 'global:\n  smtp_require_tls: false\n'],
      ] as const) {
        expect(await createChannel(receiver(extra, global), {}).send(notification([alert()]))).toEqual({ ok: true });
      }
      expect(smtp.mails()).toHaveLength(2);
      expect(receiver(', hello: gpu-alerts.example.org').settings?.smtp_url).toMatch(/[?&]name=gpu-alerts\.example\.org/);
    } finally {
      await smtp.stop();
    }
  });

  it('a nasty alert arrives as one well-formed mail: one-line subject, escaped HTML, no character cut in half', async () => {
    const { SmtpSink } = await import('./infra/smtp-sink.ts');
    const smtp = new SmtpSink();
    await smtp.start();
    try {
      const send = channel('email', { smtp_url: `smtp://127.0.0.1:${smtp.port}`, from: 'gpualert@example.com', to: 'oncall@example.com' });
      expect(await send.send(notification([nasty(0), nasty(1)]))).toEqual({ ok: true });
      const [mail] = smtp.mails();
      expect(mail).toBeDefined();
      const [headers = ''] = mail!.split(/\r?\n\r?\n/);
      const unfolded = headers.replace(/\r?\n[ \t]+/g, ' ');
      // the host's and the labels' newlines never start a header of their own (no header injection)
      expect(unfolded.split(/\r?\n/).every((line) => /^[A-Za-z-]+:/.test(line))).toBe(true);
      expect(unfolded.match(/^Subject:/gim)).toHaveLength(1);
      const html = mimeParts(mail!).find((p) => p.type === 'text/html');
      expect(html).toBeDefined();
      // markup from the alert is shown, not obeyed
      expect(html!.text).not.toMatch(/<at user_id|<font color|<!channel>|<http:\/\/evil/);
      expect(html!.text).toContain('&lt;at user_id=');
      expect(LONE.test(html!.text)).toBe(false);
      expect(html!.text).toContain('END-OF-SUMMARY');
    } finally {
      await smtp.stop();
    }
  });
});
