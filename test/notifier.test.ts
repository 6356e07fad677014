import type { Bus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { createLogger } from '@gpualert/log';
import { RoutesFile } from '@gpualert/notify';
import { addSilence, startNotifier } from '@gpualert/notifier';
import { envelopeMessage } from '@gpualert/bus';
import { newEnvelope, parseEnvelope, TOPICS, type AlertData, type EnvelopeOf } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { RedisStore } from '@gpualert/state/redis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { SmtpSink } from './infra/smtp-sink.ts';
import { VendorReceivers } from './infra/vendor-receivers.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const log = createLogger({ name: 'test', level: 'silent' });
const SECRETS = {
  feishu: 'feishu-secret',
  dingtalk: 'SECdingtalk-secret',
  webhook: `whsec_${Buffer.from('webhook secret of thirty-two byte').toString('base64')}`,
  routingKey: 'R0UTINGKEY0000000000000000000000',
  opsgenie: 'og-key',
};
const FAST_RETRY = { baseMs: 100, maxDelayMs: 1_000, giveUpAfterMs: 20_000 };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(routes: unknown, options: { retry?: typeof FAST_RETRY } = {}) {
  const vendors = new VendorReceivers(SECRETS);
  await vendors.start();
  cleanups.push(() => vendors.stop());
  const smtp = new SmtpSink();
  await smtp.start();
  cleanups.push(() => smtp.stop());
  const bus: Bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${uniqueName('notify')}.`, partitions: 3 });
  await bus.ensureTopics(Object.values(TOPICS));
  cleanups.push(() => bus.close());
  const store: StateStore = new RedisStore({ url: inject('redisUrl'), prefix: `${uniqueName('notify')}:` });
  cleanups.push(() => store.close());
  const env = {
    BASE: vendors.base,
    FEISHU_SECRET: SECRETS.feishu,
    DINGTALK_SECRET: SECRETS.dingtalk,
    WEBHOOK_SECRET: SECRETS.webhook,
    PD_KEY: SECRETS.routingKey,
    OG_KEY: SECRETS.opsgenie,
    SMTP: `smtp://127.0.0.1:${smtp.port}`,
  };
  const parsed = RoutesFile.parse(JSON.parse(JSON.stringify(routes).replaceAll('${BASE}', vendors.base).replaceAll('${SMTP}', env.SMTP)));
  const start = (more: Partial<Parameters<typeof startNotifier>[0]> = {}) =>
    startNotifier({ bus, store, log, routes: parsed, env, retry: options.retry ?? FAST_RETRY, flushEveryMs: 100, ...more });
  return { vendors, smtp, bus, store, start, parsed };
}

function alert(
  fingerprint: string,
  status: 'firing' | 'resolved',
  severity: AlertData['severity'] = 'critical',
  extra: Partial<AlertData> = {},
): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: `${fingerprint}-${status}-${severity}`,
    host: 'gpu-node-002',
    source: 'test',
    labels: { cluster: 'lab' },
    data: {
      fingerprint,
      status,
      severity,
      category: 'fallen_off_bus',
      rule: 'gpu-absent',
      summary: `GPU 3 on gpu-node-002 has disappeared (${fingerprint})`,
      action: 'Drain the host and reboot it.',
      starts_at: new Date().toISOString(),
      evidence: ['k-1'],
      gpu: { index: 3 },
      ...extra,
      ...(status === 'resolved' ? { ends_at: new Date().toISOString() } : {}),
    },
  });
}

async function records(bus: Bus) {
  return (await bus.read(TOPICS.notifications)).flatMap((m) => {
    const r = parseEnvelope(m.value);
    return r.ok && r.value.type === 'notification' ? [r.value.data] : [];
  });
}

const receiver = (name: string, channel: string, settings: Record<string, string> = {}, extra: Record<string, unknown> = {}) => ({
  name,
  channel,
  settings,
  ...extra,
});

const EVERY_CHANNEL = {
  receivers: [
    receiver('slack', 'slack', { url: '${BASE}/slack/hooks' }),
    receiver('feishu', 'feishu', { url: '${BASE}/feishu/hook', secret: 'env:FEISHU_SECRET' }),
    receiver('dingtalk', 'dingtalk', { url: '${BASE}/dingtalk/robot/send?access_token=t', secret: 'env:DINGTALK_SECRET' }),
    receiver('wecom', 'wecom', { url: '${BASE}/wecom/send?key=k' }),
    receiver('email', 'email', { smtp_url: '${SMTP}', from: 'gpualert@example.com', to: 'oncall@example.com' }),
    receiver('jira', 'jira', { url: '${BASE}/jira', user: 'bot', token: 't', project: 'OPS' }),
    receiver('snow', 'servicenow', { url: '${BASE}/snow', user: 'bot', password: 'p' }),
    receiver('pd', 'pagerduty', { url: '${BASE}/pagerduty/v2/enqueue', routing_key: 'env:PD_KEY' }),
    receiver('og', 'opsgenie', { url: '${BASE}/opsgenie', api_key: 'env:OG_KEY' }),
    receiver('hook', 'webhook', { url: '${BASE}/webhook/in', secret: 'env:WEBHOOK_SECRET' }),
  ],
  route: {
    receiver: 'slack',
    group_wait: '0s',
    group_interval: '1s',
    repeat_interval: '4h',
    routes: ['feishu', 'dingtalk', 'wecom', 'email', 'jira', 'snow', 'hook', 'slack']
      .map((r) => ({ receiver: r, continue: true }))
      .concat(['pd', 'og'].map((r) => ({ receiver: r, page: true, continue: true }) as never)),
  },
};

describe('notifier on the real Kafka and Redis, with every channel against its local receiver', () => {
  it('delivers a firing and a resolved alert to every channel, each as the vendor expects', async () => {
    const { vendors, smtp, bus, start } = await setup(EVERY_CHANNEL);
    const notifier = await start();
    cleanups.push(() => notifier.stop());
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-lost-gpu3', 'firing'))]);
    const vendorsSeen = () => new Set(vendors.received.map((r) => r.vendor));
    await waitFor(() => vendorsSeen().size === 9 && smtp.mails().length === 1, 'every channel', 30_000);
    expect(vendors.rejected).toEqual([]);
    expect(vendors.of('pagerduty')[0]!.body).toMatchObject({
      event_action: 'trigger',
      dedup_key: 'fp-lost-gpu3',
      payload: { severity: 'critical', source: 'gpu-node-002', component: 'GPU 3' },
    });
    expect(vendors.of('slack')[0]!.body.text).toBe('[CRITICAL] gpu-node-002 GPU 3: GPU 3 on gpu-node-002 has disappeared (fp-lost-gpu3)');
    expect(vendors.of('opsgenie')[0]!.body).toMatchObject({ alias: 'fp-lost-gpu3', priority: 'P1' });
    expect(vendors.jira()).toEqual([{ key: 'OPS-1', labels: ['gpualert', 'gpualert-fp-lost-gpu3'], status: 'Open', comments: [] }]);
    expect(vendors.servicenow()).toMatchObject([{ correlation_id: 'fp-lost-gpu3', state: '1' }]);
    const mail = smtp.mails()[0]!.replace(/\r\n[ \t]+/g, ' '); // unfold long headers
    expect(mail).toMatch(/^Subject: \[CRITICAL\] gpu-node-002 GPU 3: GPU 3 on gpu-node-002 has disappeared/m);
    expect(mail).toMatch(/Content-Type: text\/html/);
    expect(mail).toMatch(/Drain the host and reboot it/);

    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-lost-gpu3', 'resolved'))]);
    await waitFor(
      () =>
        vendors.of('pagerduty').length === 2 &&
        vendors.servicenow()[0]!.state === '6' &&
        vendors.jira()[0]!.status === 'Done' &&
        vendors.of('opsgenie').length === 2,
      'every resolve',
      30_000,
    );
    expect(vendors.of('pagerduty')[1]!.body).toMatchObject({ event_action: 'resolve', dedup_key: 'fp-lost-gpu3' });
    expect(vendors.of('opsgenie')[1]!.path).toBe('/opsgenie/v2/alerts/fp-lost-gpu3/close');
    const sentTo = async () => new Set((await records(bus)).filter((r) => r.outcome === 'sent').map((r) => r.receiver));
    await waitFor(async () => (await sentTo()).size >= 10, 'a delivery record from every receiver', 10_000);
    expect(await sentTo()).toEqual(new Set(['slack', 'feishu', 'dingtalk', 'wecom', 'email', 'jira', 'snow', 'pd', 'og', 'hook']));
  });

  it('retries a receiver through 500s and a 429 with Retry-After until it is back, and records each attempt', async () => {
    const { vendors, bus, start } = await setup({
      receivers: [receiver('chat', 'slack', { url: '${BASE}/slack/hooks' })],
      route: { receiver: 'chat', group_wait: '0s', group_interval: '1s' },
    });
    vendors.fail('slack', '500', { forMs: 2_500 });
    const notifier = await start();
    cleanups.push(() => notifier.stop());
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-a', 'firing', 'warning'))]);
    await waitFor(async () => (await records(bus)).some((r) => r.outcome === 'failed'), 'a failed attempt');
    vendors.fail('slack', '429', { count: 1 });
    await waitFor(() => vendors.of('slack').length === 1, 'delivery after the outage', 30_000);
    // The delivery record is published after the vendor has answered: wait for it, not for the HTTP request.
    await waitFor(async () => (await records(bus)).some((r) => r.outcome === 'sent'), 'the delivery record', 10_000);
    const attempts = await records(bus);
    expect(attempts.filter((r) => r.outcome === 'failed').length).toBeGreaterThanOrEqual(2);
    expect(attempts.some((r) => r.error?.startsWith('HTTP 500'))).toBe(true);
    expect(attempts.at(-1)).toMatchObject({ outcome: 'sent', receiver: 'chat' });
  });

  it('treats HTTP 200 with an error code as a failure: a bad Feishu signature is dead-lettered, not retried', async () => {
    const { vendors, bus, start } = await setup({
      receivers: [receiver('lark', 'feishu', { url: '${BASE}/feishu/hook', secret: 'the-wrong-secret' })],
      route: { receiver: 'lark', group_wait: '0s' },
    });
    const notifier = await start();
    cleanups.push(() => notifier.stop());
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-b', 'firing', 'warning'))]);
    await waitFor(async () => (await bus.read(TOPICS.deadletter)).length === 1, 'the dead letter');
    expect(vendors.rejected).toEqual([{ vendor: 'feishu', reason: 'bad signature' }]);
    const dead = (await bus.read(TOPICS.deadletter))[0]!;
    expect(dead.headers['gpualert-reason']).toMatch(/^delivery to lark failed: feishu code 19021/);
    expect(JSON.parse(dead.value.toString())).toMatchObject({ receiver: 'lark', alerts: [{ fingerprint: 'fp-b' }] });
    expect((await records(bus)).map((r) => [r.outcome, r.attempt])).toEqual([['failed', 1]]);
  });

  it("folds what exceeds a destination's rate into a digest instead of dropping it", async () => {
    const { vendors, bus, start } = await setup({
      receivers: [receiver('robot', 'wecom', { url: '${BASE}/wecom/send?key=k' }, { per_second: 2 })],
      route: { receiver: 'robot', group_by: ['fingerprint'], group_wait: '0s' },
    });
    const notifier = await start();
    cleanups.push(() => notifier.stop());
    await bus.publish(
      TOPICS.alerts,
      Array.from({ length: 14 }, (_, i) => envelopeMessage(alert(`fp-${i}`, 'firing', 'warning'))),
    );
    await waitFor(
      () => vendors.of('wecom').flatMap((r) => (r.body.markdown.content as string).match(/fingerprint fp-\d+/g) ?? []).length === 14,
      'all fourteen alerts',
      30_000,
    );
    expect(vendors.of('wecom').length).toBeLessThan(14);
    await waitFor(async () => (await records(bus)).some((r) => r.reason.startsWith('digest:')), 'a digest record', 10_000);
  });

  it('resolves what was paged although a silence came in between, and a silenced new fault is only recorded', async () => {
    const { vendors, bus, store, start } = await setup({
      receivers: [receiver('pd', 'pagerduty', { url: '${BASE}/pagerduty/v2/enqueue', routing_key: 'env:PD_KEY' })],
      route: { receiver: 'pd', page: true },
    });
    const notifier = await start();
    cleanups.push(() => notifier.stop());
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-s', 'firing'))]);
    await waitFor(() => vendors.of('pagerduty').length === 1, 'the page');
    await addSilence(store, { matchers: ['host="gpu-node-002"'], durationMs: 3_600_000, createdBy: 'ana', comment: 'replacing the GPU' }, Date.now());
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-s', 'resolved')), envelopeMessage(alert('fp-t', 'firing'))]);
    await waitFor(() => vendors.of('pagerduty').length === 2, 'the resolve');
    // The silence's own record is `suppressed` too (no fingerprints) and comes from the flush timer,
    // often before the alert batch is judged: wait for the record of the silenced fault itself.
    await waitFor(async () => (await records(bus)).some((r) => r.outcome === 'suppressed' && r.fingerprints.length > 0), 'the suppression record', 30_000);
    expect(vendors.of('pagerduty').map((r) => [r.body.event_action, r.body.dedup_key])).toEqual([
      ['trigger', 'fp-s'],
      ['resolve', 'fp-s'],
    ]);
    expect((await records(bus)).find((r) => r.outcome === 'suppressed' && r.fingerprints.length > 0)).toMatchObject({
      fingerprints: ['fp-t'],
      reason: expect.stringMatching(/^silenced: silence \w+ by ana: replacing the GPU/),
    });
    // the silence itself is on the record, for the timeline
    await waitFor(async () => (await records(bus)).some((r) => r.channel === 'silence' && /created by ana/.test(r.reason)), 'the silence record');
  });

  it('stopped mid-send while the pager is down, then restarted: the page arrives once', async () => {
    const { vendors, bus, store, start } = await setup({
      receivers: [receiver('pd', 'pagerduty', { url: '${BASE}/pagerduty/v2/enqueue', routing_key: 'env:PD_KEY' })],
      route: { receiver: 'pd', page: true },
    });
    vendors.fail('pagerduty', '500');
    let notifier = await start();
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-k', 'firing'))]);
    await waitFor(async () => (await records(bus)).some((r) => r.outcome === 'failed'), 'a failed page attempt');
    await notifier.stop(); // what was in flight stays in the outbox
    vendors.heal('pagerduty');
    notifier = await start();
    cleanups.push(() => notifier.stop());
    await waitFor(() => vendors.of('pagerduty').length >= 1, 'the page after the restart', 30_000);
    // A later fault of the same host (same partition, same receiver queue) is paged only after
    // everything ahead of it: a second page of fp-k, resent from the outbox or judged again from
    // Kafka, would have arrived before this one. A fixed sleep was too short on a loaded machine.
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-later', 'firing'))]);
    await waitFor(() => vendors.of('pagerduty').some((r) => r.body.dedup_key === 'fp-later'), "the later fault's page", 30_000);
    // ...and nothing is left in the notifier's outbox (`notifier:outbox`) that could still go out.
    await waitFor(async () => Object.keys(await store.hashGetAll('notifier:outbox')).length === 0, 'an empty outbox', 30_000);
    expect(vendors.of('pagerduty').map((r) => r.body.dedup_key)).toEqual(['fp-k', 'fp-later']);
  });
});

describe('a pager with pages queued', () => {
  it('is sent the critical page before the error pages of other faults queued ahead of it, which keep their order', async () => {
    const { vendors, bus, store, start } = await setup({
      receivers: [receiver('pd', 'pagerduty', { url: '${BASE}/pagerduty/v2/enqueue', routing_key: 'env:PD_KEY' })],
      route: { receiver: 'pd', page: true },
    });
    // Queued: in the outbox (the held one too, until the pager answers), then in the receiver's queue once the step's saves are done.
    const queued = async (n: number) => {
      await waitFor(async () => Object.keys(await store.hashGetAll('notifier:outbox')).length === n, `${n} pages in the outbox`, 30_000);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    };
    const triggers = () =>
      vendors
        .of('pagerduty')
        .filter((r) => r.body.event_action === 'trigger')
        .map((r) => r.body.dedup_key as string);
    const notifier = await start();
    cleanups.push(() => notifier.stop());
    // The first page is held at the pager: the next ones wait in the notifier's queue for it.
    const open = vendors.hold('pagerduty');
    const errors = Array.from({ length: 12 }, (_, i) => alert(`fp-error-${i}`, 'firing', 'error'));
    await bus.publish(TOPICS.alerts, [envelopeMessage(errors[0]!)]);
    await waitFor(() => vendors.arrivals.length > 0, 'the first page at the pager');
    await bus.publish(
      TOPICS.alerts,
      errors.slice(1).map((e) => envelopeMessage(e)),
    );
    await queued(12);
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-xid-79', 'firing', 'critical'))]);
    await queued(13);
    open();
    await waitFor(() => triggers().length === 13, 'every page at the pager', 30_000);
    expect(triggers()).toEqual(['fp-error-0', 'fp-xid-79', ...errors.slice(1).map((e) => e.data.fingerprint)]);
  });
});

describe('a page taken over from a stopped notifier', () => {
  it('reaching the pager after another notifier sent its resolve, is followed by the resolve again (the incident does not stay open)', async () => {
    const { vendors, bus, store, start } = await setup({
      receivers: [receiver('pd', 'pagerduty', { url: '${BASE}/pagerduty/v2/enqueue', routing_key: 'env:PD_KEY' })],
      route: { receiver: 'pd', page: true },
    });
    const actions = () => vendors.of('pagerduty').map((r) => r.body.event_action as string);
    vendors.fail('pagerduty', '500');
    const first = await start();
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-late', 'firing'))]);
    await waitFor(async () => (await records(bus)).some((r) => r.outcome === 'failed'), 'a failed page attempt');
    await first.stop(); // its page stays in the outbox, another notifier's to send
    vendors.heal('pagerduty');
    // The notifier that takes the page over reads no alerts (a bus of its own); its send is held at the pager.
    const open = vendors.hold('pagerduty');
    const arrived = vendors.arrivals.length;
    const quiet: Bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${uniqueName('quiet')}.`, partitions: 3 });
    await quiet.ensureTopics(Object.values(TOPICS));
    cleanups.push(() => quiet.close());
    const taker = await start({ bus: quiet });
    cleanups.push(() => taker.stop());
    await waitFor(() => vendors.arrivals.length > arrived, 'the taken-over page at the pager');
    // Meanwhile another notifier (a group of its own) reads that the fault resolved: the pager was told it fires, so it sends the resolve, which the pager takes first.
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('fp-late', 'resolved'))]);
    const other = await start({ group: 'gpualert-notifier-other' });
    cleanups.push(() => other.stop());
    await waitFor(() => actions().includes('resolve'), 'the resolve from the other notifier', 30_000);
    open();
    await waitFor(() => actions().length >= 3, 'the trigger, then the resolve again', 30_000).catch(() => undefined);
    expect(actions()).toEqual(['resolve', 'trigger', 'resolve']);
    expect(vendors.of('pagerduty').every((r) => r.body.dedup_key === 'fp-late')).toBe(true);
    await waitFor(async () => Object.keys(await store.hashGetAll('notifier:outbox')).length === 0, 'an empty outbox', 30_000);
  });
});

describe('the silences HTTP API', () => {
  it('needs the bearer token, and adds, lists and expires silences', async () => {
    const { createNotifierServer, NotifierMetrics } = await import('@gpualert/notifier');
    const { listen, close } = await import('./infra/http.ts');
    const store = new RedisStore({ url: inject('redisUrl'), prefix: `${uniqueName('silence-api')}:` });
    const server = createNotifierServer(store, new NotifierMetrics(), 'api-token-0123456789');
    const base = await listen(server);
    try {
      const auth = { authorization: 'Bearer api-token-0123456789', 'content-type': 'application/json' };
      expect((await fetch(`${base}/v1/silences`)).status).toBe(401);
      expect((await fetch(`${base}/v1/silences`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
      const created = await fetch(`${base}/v1/silences`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ matchers: ['cluster="lab"'], duration_seconds: 600, created_by: 'bo', comment: 'rack move' }),
      });
      expect(created.status).toBe(201);
      const silence = (await created.json()) as { id: string; endsAt: number; startsAt: number };
      expect(silence.endsAt - silence.startsAt).toBe(600_000);
      const listed = (await (await fetch(`${base}/v1/silences`, { headers: auth })).json()) as { silences: { id: string }[] };
      expect(listed.silences.map((s) => s.id)).toEqual([silence.id]);
      const invalid = await fetch(`${base}/v1/silences`, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({ matchers: ['cluster'], duration_seconds: 60, comment: 'x' }),
      });
      expect(invalid.status).toBe(400);
      const expired = await fetch(`${base}/v1/silences/${silence.id}`, { method: 'DELETE', headers: auth });
      expect(((await expired.json()) as { expiredAt?: number }).expiredAt).toBeGreaterThan(0);
      const scrape = await fetch(`${base}/metrics`);
      expect(scrape.status).toBe(200);
      expect(Number(/^gpualert_notifier_process_resident_memory_bytes (\d+)/m.exec(await scrape.text())?.[1])).toBeGreaterThan(10 * 1024 * 1024);
    } finally {
      await close(server);
      await store.close();
    }
  });
});
