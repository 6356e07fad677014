import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cleanEnv, startCli } from './infra/run-cli.ts';
import { waitFor } from './infra/wait-for.ts';

const TOKEN = 'up-notifier-token-0123456789';
const dataDir = () => mkdtempSync(join(tmpdir(), 'gpualert-up-api-'));
const base = { GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1', GPUALERT_NOTIFIER_LISTEN: '127.0.0.1' };

describe("gpualert up serves the notifier's API", () => {
  it("with a token: Alertmanager's v2 API on its own port, named on the banner; a pushed alert is listed", async () => {
    const up = startCli(
      ['up', '--log-format', 'pretty', '--notifier-port', '0', '--data-dir', dataDir()],
      cleanEnv({ ...base, GPUALERT_NOTIFIER_TOKEN: TOKEN }),
    );
    try {
      await waitFor(() => /api +Alertmanager's v2 API on port \d+/.test(up.output()), 'the banner', 30_000);
      const port = Number(/v2 API on port (\d+)/.exec(up.output())![1]);
      expect(up.output()).toMatch(/notifier +listening on port \d+/);
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const url = `http://127.0.0.1:${port}/api/v2`;
      expect((await fetch(`${url}/status`)).status).toBe(401);
      const alert = [{ labels: { alertname: 'GpuHot', instance: 'gpu-7:9400' }, annotations: { summary: 'GPU 3 at 91 °C' } }];
      expect((await fetch(`${url}/alerts`, { method: 'POST', headers, body: JSON.stringify(alert) })).status).toBe(200);
      await waitFor(
        async () => {
          const list = (await (await fetch(`${url}/alerts`, { headers })).json()) as { labels: Record<string, string> }[];
          return list.some((a) => a.labels.alertname === 'GpuHot');
        },
        'the pushed alert in the alert list',
        20_000,
      );
    } finally {
      up.kill('SIGINT');
      await once(up, 'exit');
    }
  });

  it('without a token: the banner says the API is off and why', async () => {
    const up = startCli(['up', '--log-format', 'pretty', '--notifier-port', '0', '--data-dir', dataDir()], cleanEnv(base));
    try {
      await waitFor(() => up.output().includes('Ctrl-C stops'), 'the banner', 30_000);
      expect(up.output()).toMatch(/api +off: set GPUALERT_NOTIFIER_TOKEN \(16\+ characters\)/);
      expect(up.output()).toMatch(/notifier +running/);
    } finally {
      up.kill('SIGINT');
      await once(up, 'exit');
    }
  });
});
