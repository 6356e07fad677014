import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../infra/wait-for.ts';
import { amtool, startGpualertNotifier, TOKEN, WebhookSink } from './harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const routes = (base: string) => `
route:
  receiver: team
  group_by: [alertname]
  group_wait: 1s
  group_interval: 1s
  routes:
  - matchers: ['service=~"db|cache"']
    receiver: db
receivers:
- name: team
  webhook_configs: [{ url: '${base}/team' }]
- name: db
  webhook_configs: [{ url: '${base}/db', send_resolved: true }]
`;

describe('amtool 0.25 against gpualert notifier', () => {
  it('silence add, query and expire; alert query; config routes test', async () => {
    const sink = new WebhookSink();
    await sink.start();
    cleanups.push(() => sink.stop());
    const { base } = await startGpualertNotifier(routes(sink.base), cleanups);

    // Prometheus' push, as amtool would see it afterwards.
    const alerts = [{ labels: { alertname: 'GpuHot', service: 'db', instance: 'gpu-7:9400' }, annotations: { summary: 'GPU 3 at 91 °C' } }];
    const pushed = await fetch(`${base}/api/v2/alerts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(alerts),
    });
    expect(pushed.status).toBe(200);
    await waitFor(() => sink.deliveries.some((d) => d.path === '/db'), 'the alert at the db receiver', 30_000);
    // Alertmanager's webhook payload, as a receiver written for Alertmanager reads it.
    expect(sink.deliveries.find((d) => d.path === '/db')!.body).toMatchObject({
      version: '4',
      receiver: 'db',
      status: 'firing',
      groupLabels: { alertname: 'GpuHot' },
      commonLabels: { alertname: 'GpuHot', service: 'db', instance: 'gpu-7:9400' },
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'GpuHot', service: 'db', instance: 'gpu-7:9400' },
          annotations: { summary: 'GPU 3 at 91 °C' },
          endsAt: '0001-01-01T00:00:00Z',
        },
      ],
      truncatedAlerts: 0,
    });
    const query = () => amtool(base, ['alert', 'query']);
    await waitFor(() => query().out.includes('GpuHot'), 'amtool alert query to list GpuHot', 10_000);
    const listed = query();
    expect(listed.code, listed.out).toBe(0);
    expect(listed.out).toMatch(/GpuHot\s.*GPU 3 at 91 °C/);

    const added = amtool(base, ['silence', 'add', 'alertname=GpuHot', 'instance=~"gpu-.*"', '--comment=rack move', '--author=bo', '--duration=1h']);
    expect(added.code, added.out).toBe(0);
    const id = added.out.trim();
    expect(id).toMatch(/^[\w-]+$/);
    const silences = amtool(base, ['silence', 'query']);
    expect(silences.code, silences.out).toBe(0);
    expect(silences.out).toContain(id);
    expect(silences.out).toMatch(/alertname="GpuHot" instance=~"gpu-\.\*"\s.*bo\s+rack move/);
    // Silenced now: not in the default (active) list, listed with --silenced.
    await waitFor(() => !query().out.includes('GpuHot'), 'GpuHot silenced', 10_000);
    expect(amtool(base, ['alert', 'query', '--silenced']).out).toContain('GpuHot');
    const expired = amtool(base, ['silence', 'expire', id]);
    expect(expired.code, expired.out).toBe(0);
    expect(amtool(base, ['silence', 'query', '-q']).out.trim()).toBe('');
    expect(amtool(base, ['silence', 'query', '--expired', '-q']).out).toContain(id);

    const routed = amtool(base, ['config', 'routes', 'test', '--verify.receivers=db', 'service=db', 'alertname=GpuHot']);
    expect(routed.code, routed.out).toBe(0);
    expect(routed.out.trim()).toBe('db');
    const wrong = amtool(base, ['config', 'routes', 'test', '--verify.receivers=db', 'service=web']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.out).toContain('team');
    const refused = amtool(base, ['silence', 'query'], 'not-the-token-0123456789');
    expect(refused.code).not.toBe(0);
    expect(refused.out).toMatch(/401|Unauthorized/i);
  });
});
