import { writeFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../infra/wait-for.ts';
import { startGpualertNotifier, TOKEN, WebhookSink } from './harness.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** One receiver at `path` of the sink, named `name`, grouping by alertname. */
const config = (base: string, name: string, path: string) => `
route: { receiver: ${name}, group_by: [alertname], group_wait: 1s, group_interval: 1s, repeat_interval: 1h }
receivers:
- name: ${name}
  webhook_configs: [{ url: '${base}${path}' }]
`;

describe('reloading the notifier without a restart', () => {
  it('SIGHUP and POST /-/reload: the new routes take effect (a moved alert goes to its new receiver), silences survive, a bad file is refused at its line and the metric says so', async () => {
    const sink = new WebhookSink();
    await sink.start();
    cleanups.push(() => sink.stop());
    const { base, notifier, file } = await startGpualertNotifier(config(sink.base, 'team', '/team'), cleanups);
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' } });
    const now = Date.now();
    const firing = (instance: string) => ({
      labels: { alertname: 'DiskFull', instance },
      annotations: {},
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
    });
    expect(
      (
        await api('/api/v2/silences', {
          method: 'POST',
          body: JSON.stringify({
            matchers: [{ name: 'alertname', value: 'Quiet', isRegex: false, isEqual: true }],
            startsAt: new Date(now).toISOString(),
            endsAt: new Date(now + 3_600_000).toISOString(),
            createdBy: 't',
            comment: 'quiet',
          }),
        })
      ).status,
    ).toBe(200);
    expect((await api('/api/v2/alerts', { method: 'POST', body: JSON.stringify([firing('i1')]) })).status).toBe(200);
    const at = (path: string) => sink.deliveries.filter((d) => d.path === path).flatMap((d) => d.body.alerts.map((a) => a.labels.instance));
    await waitFor(() => at('/team').includes('i1'), 'i1 told to team', 30_000);

    // The receiver renamed and moved: SIGHUP, as Alertmanager takes it.
    writeFileSync(file, config(sink.base, 'oncall', '/oncall'));
    notifier.kill('SIGHUP');
    await waitFor(() => notifier.output().includes('"msg":"config_reloaded"'), 'config_reloaded', 30_000);
    expect(notifier.exitCode).toBeNull();
    expect((await api('/api/v2/alerts', { method: 'POST', body: JSON.stringify([firing('i2')]) })).status).toBe(200);
    // The group's key changed with its receiver: i1 (moved) and i2 (new) are news to oncall.
    await waitFor(() => ['i1', 'i2'].every((i) => at('/oncall').includes(i)), 'i1 and i2 told to oncall', 30_000);
    const receivers = (await (await api('/api/v2/receivers')).json()) as { name: string }[];
    expect(receivers.map((r) => r.name)).toEqual(['oncall']);
    const silences = (await (await api('/api/v2/silences')).json()) as { comment: string; status: { state: string } }[];
    expect(silences.map((s) => [s.comment, s.status.state])).toEqual([['quiet', 'active']]);

    // A broken file: refused with its file:line, the running routes kept, the metric at 0.
    writeFileSync(file, `${config(sink.base, 'oncall', '/oncall')}\n  - name: stray\n`.replace('receiver: oncall', 'receiver: nobody'));
    const refused = await api('/-/reload', { method: 'POST' });
    const body = (await refused.json()) as { errors: string[] };
    expect(refused.status).toBe(400);
    expect(body.errors.join('\n')).toMatch(/alertmanager\.yml:\d+/);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^gpualert_config_last_reload_successful 0$/m);
    expect((await fetch(`${base}/-/reload`, { method: 'POST' })).status).toBe(401); // behind the token
    expect((await api('/api/v2/alerts', { method: 'POST', body: JSON.stringify([firing('i3')]) })).status).toBe(200);
    await waitFor(() => at('/oncall').includes('i3'), 'i3 told to oncall, on the routes kept', 30_000);
    expect(at('/team')).toEqual(['i1']);

    // A good file again: 200, and the metric back at 1.
    writeFileSync(file, config(sink.base, 'oncall', '/oncall'));
    expect((await api('/-/reload', { method: 'POST' })).status).toBe(200);
    expect(await (await fetch(`${base}/metrics`)).text()).toMatch(/^gpualert_config_last_reload_successful 1$/m);
  }, 120_000);
});
