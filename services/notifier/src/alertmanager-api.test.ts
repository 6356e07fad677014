import type { Server } from 'node:http';
import type { Bus, OutgoingMessage } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { alertmanagerPayload, emptyNotifierState, loadRoutes, NotifierCore, RoutesFile, type Notification } from '@gpualert/notify';
import { newEnvelope, parseEnvelope, TOPICS, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { alertEnvelope, alertQuery, listAlerts, listAlertsBounded, MAX_ALERTS_PER_RESPONSE, type AlertQuery, type NotifierView } from './alertmanager-api.ts';
import { createNotifierServer, NotifierMetrics } from './notifier-http.ts';
import { SilenceSync } from './silence-sync.ts';

const TOKEN = 'notifier-token-0123456789';
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const ROUTES = RoutesFile.parse(
  parseYaml(`
receivers:
- name: team
  webhook_configs: [{ url: 'http://127.0.0.1:9/team' }]
- name: db
  webhook_configs: [{ url: 'http://127.0.0.1:9/db' }]
route:
  receiver: team
  group_by: [alertname]
  group_wait: 0s
  routes:
  - matchers: ['service=~"db|cache"']
    receiver: db
`),
);

async function serve(view?: NotifierView) {
  const published: { topic: string; messages: readonly OutgoingMessage[] }[] = [];
  const bus = { publish: async (topic: string, messages: readonly OutgoingMessage[]) => void published.push({ topic, messages }) } as unknown as Bus;
  const store = new MemoryStore();
  const server = createNotifierServer(store, new NotifierMetrics(), TOKEN, bus, {}, ROUTES, view);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { published, store, base: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

describe("Alertmanager's v2 API on the notifier", () => {
  it("takes alerts as Prometheus pushes them: envelopes on the alerts topic, routed like the engine's, endsAt resolves", async () => {
    const { base, published } = await serve();
    const now = Date.now();
    const firing = [
      {
        labels: { alertname: 'GpuHot', service: 'db', instance: 'gpu-7:9400', severity: 'critical' },
        annotations: { summary: 'GPU 3 at 91 °C' },
        startsAt: new Date(now - 60_000).toISOString(),
        endsAt: new Date(now + 180_000).toISOString(),
        generatorURL: 'http://prometheus:9090/graph',
      },
    ];
    const res = await fetch(`${base}/api/v2/alerts`, { method: 'POST', headers: auth, body: JSON.stringify(firing) });
    expect(res.status).toBe(200);
    const resolved = [{ ...firing[0], endsAt: new Date(now - 1_000).toISOString() }];
    expect((await fetch(`${base}/api/v2/alerts`, { method: 'POST', headers: auth, body: JSON.stringify(resolved) })).status).toBe(200);
    expect(published.map((p) => p.topic)).toEqual([TOPICS.alerts, TOPICS.alerts]);
    const envelopes = published.map((p) => parseEnvelope(p.messages[0]!.value)).map((r) => (r.ok ? r.value : undefined)) as EnvelopeOf<'alert'>[];
    expect(envelopes[0]).toMatchObject({
      type: 'alert',
      host: 'gpu-7',
      source: 'alertmanager-api',
      labels: { alertname: 'GpuHot', service: 'db' },
      data: { status: 'firing', severity: 'critical', summary: 'GPU 3 at 91 °C' },
    });
    expect(envelopes[1]!.data.status).toBe('resolved');
    expect(envelopes[1]!.data.fingerprint).toBe(envelopes[0]!.data.fingerprint);
    const core = new NotifierCore(ROUTES);
    const state = emptyNotifierState();
    core.ingest(state, envelopes[0]!, now);
    const sent = core.flush(state, now).flatMap((d) => ('send' in d ? [d.send.receiver] : []));
    expect(sent).toEqual(['db']);
  });

  it('a severity label that is a prototype key is an unknown severity (warning), and costs no other alert of the batch', async () => {
    const { base, published } = await serve();
    const batch = ['constructor', '__proto__', 'toString'].map((severity, i) => ({ labels: { alertname: `A${i}`, severity, host: `x${i}` } }));
    const res = await fetch(`${base}/api/v2/alerts`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify([...batch, { labels: { alertname: 'B', host: 'x9' } }]),
    });
    expect(res.status).toBe(200);
    const severities = published
      .flatMap((p) => p.messages)
      .map((m) => parseEnvelope(m.value))
      .map((r) => (r.ok && r.value.type === 'alert' ? r.value.data.severity : 'invalid'));
    expect(severities).toEqual(['warning', 'warning', 'warning', 'warning']);
  });

  it('refuses a bad batch whole, naming the alert, and answers 401 without the token', async () => {
    const { base, published } = await serve();
    const bad = await fetch(`${base}/api/v2/alerts`, { method: 'POST', headers: auth, body: JSON.stringify([{ labels: { a: 'b' } }, { labels: {} }]) });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('alert 1: an alert needs at least one label');
    expect(published).toEqual([]);
    expect((await fetch(`${base}/api/v2/silences`)).status).toBe(401);
    expect((await fetch(`${base}/-/healthy`)).status).toBe(200);
    expect((await fetch(`${base}/-/ready`)).status).toBe(200);
  });

  it("adds, lists, shows and expires silences in Alertmanager's shape", async () => {
    const { base } = await serve();
    const now = Date.now();
    const body = {
      matchers: [
        { name: 'alertname', value: 'GpuHot', isRegex: false, isEqual: true },
        { name: 'instance', value: 'gpu-.*', isRegex: true, isEqual: true },
      ],
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
      createdBy: 'bo',
      comment: 'rack move',
    };
    const created = await fetch(`${base}/api/v2/silences`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
    expect(created.status).toBe(200);
    const { silenceID } = (await created.json()) as { silenceID: string };
    const list = (await (await fetch(`${base}/api/v2/silences?filter=alertname%3DGpuHot`, { headers: auth })).json()) as {
      id: string;
      status: { state: string };
      matchers: unknown[];
    }[];
    expect(list.map((s) => [s.id, s.status.state])).toEqual([[silenceID, 'active']]);
    expect(list[0]!.matchers).toEqual(body.matchers);
    const one = (await (await fetch(`${base}/api/v2/silence/${silenceID}`, { headers: auth })).json()) as { createdBy: string };
    expect(one.createdBy).toBe('bo');
    expect((await fetch(`${base}/api/v2/silence/${silenceID}`, { method: 'DELETE', headers: auth })).status).toBe(200);
    const after = (await (await fetch(`${base}/api/v2/silence/${silenceID}`, { headers: auth })).json()) as { status: { state: string } };
    expect(after.status.state).toBe('expired');
    const everything = await fetch(`${base}/api/v2/silences`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ ...body, matchers: [{ name: 'x', value: '.*', isRegex: true, isEqual: true }] }),
    });
    expect(everything.status).toBe(400);
    expect(await everything.text()).toContain('would silence every alert');
  });

  it('answers status and receivers', async () => {
    const { base } = await serve();
    const status = (await (await fetch(`${base}/api/v2/status`, { headers: auth })).json()) as { cluster: { status: string } };
    expect(status.cluster.status).toBe('disabled');
    expect(await (await fetch(`${base}/api/v2/receivers`, { headers: auth })).json()).toEqual([{ name: 'team' }, { name: 'db' }]);
  });

  it("lists the running notifier's alerts and groups as amtool reads them: active only by default, silenced and inhibited on request", async () => {
    const routes = RoutesFile.parse(
      parseYaml(`
receivers:
- name: team
  webhook_configs: [{ url: 'http://127.0.0.1:9/team' }]
- name: db
  webhook_configs: [{ url: 'http://127.0.0.1:9/db' }]
route:
  receiver: team
  group_by: [alertname]
  routes:
  - matchers: ['service=~"db|cache"']
    receiver: db
    group_by: ['...']
inhibit_rules:
- source_matchers: [alertname=NodeDown]
  target_matchers: [alertname=GpuHot]
  equal: [instance]
`),
    );
    const now = Date.now();
    const core = new NotifierCore(routes);
    const state = emptyNotifierState();
    const push = (labels: Record<string, string>, summary = '') => {
      const envelope = alertEnvelope({ labels, annotations: { summary }, startsAt: new Date(now - 60_000).toISOString() }, now);
      if (typeof envelope === 'string') throw new Error(envelope);
      core.ingest(state, envelope, now);
    };
    push({ alertname: 'GpuHot', instance: 'gpu-1:9400', service: 'db' }, 'GPU 3 at 91 °C');
    push({ alertname: 'GpuHot', instance: 'gpu-2:9400', service: 'web' });
    push({ alertname: 'NodeDown', instance: 'gpu-2:9400' });
    push({ alertname: 'EccErrors', instance: 'gpu-3:9400', service: 'cache' });
    core.addSilence(state, {
      id: 'sil-1',
      matchers: ['alertname="EccErrors"'],
      startsAt: now - 1_000,
      endsAt: now + 3_600_000,
      createdBy: 'bo',
      comment: 'rma',
    });
    const { base } = await serve({ routes, state: () => state });
    type Alert = {
      labels: Record<string, string>;
      annotations: Record<string, string>;
      receivers: { name: string }[];
      startsAt: string;
      status: { state: string; silencedBy: string[]; inhibitedBy: string[] };
    };
    const get = async (query: string) => (await (await fetch(`${base}/api/v2/alerts${query}`, { headers: auth })).json()) as Alert[];
    const names = (alerts: Alert[]) => alerts.map((a) => `${a.labels.alertname}@${a.labels.instance}:${a.status.state}`).sort();
    // amtool alert query: active=true&silenced=false&inhibited=false&unprocessed=false.
    const active = await get('?active=true&silenced=false&inhibited=false&unprocessed=false');
    expect(names(active)).toEqual(['GpuHot@gpu-1:9400:active', 'NodeDown@gpu-2:9400:active']);
    const hot = active.find((a) => a.labels.instance === 'gpu-1:9400')!;
    expect(hot).toMatchObject({
      labels: { alertname: 'GpuHot', instance: 'gpu-1:9400', service: 'db' },
      annotations: { summary: 'GPU 3 at 91 °C' },
      receivers: [{ name: 'db' }],
      startsAt: new Date(now - 60_000).toISOString(),
    });
    const all = await get('');
    expect(names(all)).toEqual(['EccErrors@gpu-3:9400:suppressed', 'GpuHot@gpu-1:9400:active', 'GpuHot@gpu-2:9400:suppressed', 'NodeDown@gpu-2:9400:active']);
    expect(all.find((a) => a.labels.alertname === 'EccErrors')!.status.silencedBy).toEqual(['sil-1']);
    expect(all.find((a) => a.labels.instance === 'gpu-2:9400' && a.labels.alertname === 'GpuHot')!.status.inhibitedBy).toHaveLength(1);
    expect(names(await get('?silenced=false&active=false'))).toEqual(['GpuHot@gpu-2:9400:suppressed']);
    expect(names(await get(`?filter=${encodeURIComponent('alertname="GpuHot"')}&receiver=${encodeURIComponent('d.')}`))).toEqual(['GpuHot@gpu-1:9400:active']);
    expect((await fetch(`${base}/api/v2/alerts?filter=${encodeURIComponent('alertname=~"("')}`, { headers: auth })).status).toBe(400);
    const groups = (await (await fetch(`${base}/api/v2/alerts/groups`, { headers: auth })).json()) as {
      labels: Record<string, string>;
      receiver: { name: string };
      alerts: Alert[];
    }[];
    const shown = groups.map((g) => `${g.receiver.name} ${JSON.stringify(g.labels)} ${g.alerts.length}`).sort();
    expect(shown).toEqual([
      'db {"alertname":"EccErrors","instance":"gpu-3:9400","service":"cache"} 1',
      'db {"alertname":"GpuHot","instance":"gpu-1:9400","service":"db"} 1',
      'team {"alertname":"GpuHot"} 1',
      'team {"alertname":"NodeDown"} 1',
    ]);
  });

  it("a maintenance window's silence shows its scope and its hours in /api/v2/silences, and the host's paged alerts show it in silencedBy", async () => {
    const routes = loadRoutes();
    if (!routes.ok) throw new Error('routes');
    const core = new NotifierCore(routes.value);
    const state = emptyNotifierState();
    const now = Date.now();
    const MIN = 60_000;
    // The notice came an hour before a two-hour window that is open now; a GPU of the host fell off the bus inside it.
    const window = { start: new Date(now - 30 * MIN).toISOString(), end: new Date(now + 90 * MIN).toISOString() };
    const engineAlert = (fingerprint: string, category: AlertData['category'], severity: AlertData['severity'], at: number, extra: Partial<AlertData> = {}) =>
      newEnvelope({
        type: 'alert',
        host: 'gpu-node-001',
        source: 'engine',
        ts: new Date(at).toISOString(),
        data: {
          fingerprint,
          status: 'firing',
          severity,
          category,
          rule: category,
          summary: `${category} on gpu-node-001`,
          starts_at: new Date(at).toISOString(),
          evidence: [],
          ...extra,
        },
      });
    core.ingest(state, engineAlert('maint1', 'maintenance', 'warning', now - 90 * MIN, { window }), now - 90 * MIN);
    core.ingest(state, engineAlert('lost1', 'fallen_off_bus', 'critical', now - 5 * MIN), now - 5 * MIN);
    const { base, store } = await serve({ routes: routes.value, state: () => state });
    // The running notifier shares the silences its core made with the store the API reads (silence-sync.ts).
    await new SilenceSync(store, createLogger({ name: 't', level: 'silent' }), () => Promise.resolve()).shareOwn(state, new Map());
    const silences = (await (await fetch(`${base}/api/v2/silences`, { headers: auth })).json()) as Record<string, unknown>[];
    expect(silences).toEqual([
      expect.objectContaining({
        id: 'maintenance-maint1',
        status: { state: 'active' },
        startsAt: new Date(now - 45 * MIN).toISOString(),
        endsAt: new Date(now + 105 * MIN).toISOString(),
        createdBy: 'gpualert',
        comment: expect.stringMatching(/^provider maintenance, pager receivers only \(pager\), held /) as unknown,
        receivers: [{ name: 'pager' }],
        matchers: [{ name: 'host', value: 'gpu-node-001', isRegex: false, isEqual: true }],
      }),
    ]);
    type Alert = { fingerprint: string; receivers: { name: string }[]; status: { state: string; silencedBy: string[] } };
    const alerts = (await (await fetch(`${base}/api/v2/alerts`, { headers: auth })).json()) as Alert[];
    const shown = Object.fromEntries(alerts.map((a) => [a.fingerprint, [a.status.state, a.status.silencedBy, a.receivers.map((r) => r.name)]]));
    expect(shown).toEqual({
      // Held from the pager (chat still hears): suppressed, as Alertmanager says of a silenced alert.
      lost1: ['suppressed', ['maintenance-maint1'], ['pager', 'chat']],
      // The notice itself goes to chat only: a silence for the pager does not hold it.
      maint1: ['active', [], ['chat']],
    });
  });

  it('keeps every annotation an alert carries: POST → envelope → notifier → GET /api/v2/alerts and the webhook payload, bounded as labels are', async () => {
    const { base, published } = await serve();
    const annotations = {
      summary: 'GPU 3 at 91 °C',
      description: 'above 90 °C for 5m',
      runbook_url: 'https://runbooks.example/gpu-hot',
      dashboard: 'https://grafana.example/d/gpu',
      constructor: 'just data',
    };
    const res = await fetch(`${base}/api/v2/alerts`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify([{ labels: { alertname: 'GpuHot', instance: 'gpu-7:9400' }, annotations }]),
    });
    expect(res.status).toBe(200);
    const parsed = parseEnvelope(published[0]!.messages[0]!.value);
    if (!parsed.ok || parsed.value.type !== 'alert') throw new Error('not an alert');
    expect({ ...parsed.value.data.annotations }).toEqual(annotations);
    const core = new NotifierCore(ROUTES);
    const state = emptyNotifierState();
    const now = Date.now();
    core.ingest(state, parsed.value, now);
    const sent = core.flush(state, now).flatMap((d) => ('send' in d ? [d.send] : [])) as Notification[];
    expect(alertmanagerPayload(sent[0]!).alerts[0]!.annotations).toEqual(annotations);
    expect(alertmanagerPayload(sent[0]!).commonAnnotations).toEqual(annotations);
    const q = alertQuery(new URLSearchParams()) as AlertQuery;
    expect(listAlerts({ routes: ROUTES, state: () => state }, q, now)[0]!.annotations).toEqual(annotations);
    const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`a${i}`, 'x']));
    const refused = await fetch(`${base}/api/v2/alerts`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify([{ labels: { alertname: 'A' } }, { labels: { alertname: 'B' }, annotations: tooMany }]),
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/alert 1: .*at most 64 annotations/);
    const long = await fetch(`${base}/api/v2/alerts`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify([{ labels: { alertname: 'B' }, annotations: { description: 'x'.repeat(5_000) } }]),
    });
    expect(long.status).toBe(400);
  });

  it('routes each alert once per routes file (a reload routes again) and answers at most MAX_ALERTS_PER_RESPONSE alerts, in fingerprint order', () => {
    const now = Date.now();
    const state = emptyNotifierState();
    const core = new NotifierCore(ROUTES);
    for (let i = 0; i <= MAX_ALERTS_PER_RESPONSE; i += 1) {
      const e = alertEnvelope({ labels: { alertname: 'GpuHot', instance: `gpu-${i}:9400`, service: i % 2 ? 'db' : 'web' } }, now);
      if (typeof e === 'string') throw new Error(e);
      core.ingest(state, e, now);
    }
    const q = alertQuery(new URLSearchParams()) as AlertQuery;
    const { alerts, omitted } = listAlertsBounded({ routes: ROUTES, state: () => state }, q, now);
    expect(alerts).toHaveLength(MAX_ALERTS_PER_RESPONSE);
    expect(omitted).toBe(1);
    expect(alerts.map((a) => a.fingerprint)).toEqual(Object.keys(state.firing).sort().slice(0, MAX_ALERTS_PER_RESPONSE));
    const byReceiver = (routes: RoutesFile) =>
      listAlerts({ routes, state: () => state }, alertQuery(new URLSearchParams('receiver=db')) as AlertQuery, now).length;
    expect(byReceiver(ROUTES)).toBe(Math.min(MAX_ALERTS_PER_RESPONSE, (MAX_ALERTS_PER_RESPONSE + 1) >> 1));
    // The same tree with the db route now matching web: a reloaded file is a new object, so nothing cached from the old one is reused.
    const reloaded = RoutesFile.parse(
      parseYaml(`
receivers:
- name: team
  webhook_configs: [{ url: 'http://127.0.0.1:9/team' }]
- name: db
  webhook_configs: [{ url: 'http://127.0.0.1:9/db' }]
route:
  receiver: team
  routes:
  - matchers: ['service=~"web"']
    receiver: db
`),
    );
    expect(byReceiver(reloaded)).toBe((MAX_ALERTS_PER_RESPONSE + 2) >> 1);
  });
});
