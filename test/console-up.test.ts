import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject, describe, expect, it } from 'vitest';
import { Browser } from './console-browser.ts';
import { cleanEnv, runCli, startCli } from './infra/run-cli.ts';
import { waitFor } from './infra/wait-for.ts';

const TOKEN = 'console-up-token-0123456789';
const SHOTS = join(tmpdir(), 'gpualert-console-shots');

describe('the console in `gpualert up --demo`, in headless Chromium', () => {
  it("shows the demo's faulty GPUs in their colours, a GPU against its baseline band, and a silence made in the page that `silence list` shows and that mutes the next matching alert", async () => {
    mkdirSync(SHOTS, { recursive: true });
    const prefix = `console-up-${process.pid}-${Date.now()}:`;
    const env = cleanEnv({
      REDIS_URL: inject('redisUrl'),
      GPUALERT_KEY_PREFIX: prefix,
      GPUALERT_NOTIFIER_TOKEN: TOKEN,
      GPUALERT_INTAKE_PORT: '0',
      GPUALERT_INTAKE_LISTEN: '127.0.0.1',
      GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
    });
    const up = startCli(
      ['up', '--demo', '--speed', '600', '--log-format', 'pretty', '--notifier-port', '0', '--data-dir', mkdtempSync(join(tmpdir(), 'gpualert-console-up-'))],
      env,
    );
    const browser = await Browser.launch();
    try {
      await waitFor(() => /console +http:\/\/\S+\/console\//.test(up.output()), 'the console on the banner', 30_000);
      const consoleUrl = /console +(http:\/\/\S+\/console\/)/.exec(up.output())![1]!;
      const base = new URL(consoleUrl).origin;
      const page = await browser.newPage();
      await page.goto(consoleUrl);
      await page.waitFor('!document.getElementById("token-form").hidden', 'the token form');
      await page.evaluate(`document.getElementById('token').value = ${JSON.stringify(TOKEN)}; document.getElementById('token-form').requestSubmit(); true`);

      // The demo's three troubled GPUs, each in its severity's colour, as the incident unfolds (the page redraws every 5 s).
      const faulty = await page.waitFor<Record<string, string>>(
        `(() => {
        const cells = Object.fromEntries([...document.querySelectorAll('a.gpu[data-state]:not([data-state="ok"])')].map((a) => [a.dataset.host + '/' + a.dataset.gpu, a.dataset.state + ' ' + getComputedStyle(a).backgroundColor]));
        return cells['gpu-node-002/3'] && cells['gpu-node-001/5'] && cells['gpu-node-000/2'] ? cells : false;
      })()`,
        "the demo's faulty GPUs on the grid",
        60_000,
      );
      expect(faulty).toMatchObject({
        'gpu-node-002/3': 'critical rgb(215, 38, 61)',
        'gpu-node-001/5': 'warning rgb(242, 193, 78)',
        'gpu-node-000/2': 'warning rgb(242, 193, 78)',
      });
      // the healthy ones are there too, in the ok colour
      expect(await page.evaluate('document.querySelector(\'a.gpu[data-host="gpu-node-001"][data-gpu="0"]\').dataset.state')).toBe('ok');
      await page.screenshot(join(SHOTS, 'up-fleet.png'));

      // The hot GPU's page: its temperature against its own baseline band, outside it.
      await page.evaluate(`document.querySelector('a.gpu[data-host="gpu-node-001"][data-gpu="5"]').click(); true`);
      const band = await page.waitFor<{ low: number; high: number; value: number; inside: string }>(
        `(() => {
        const m = document.querySelector('[data-gpu-page="gpu-node-001/5"] ~ [data-metric="temp_c"]');
        const rect = m && m.querySelector('rect.band');
        return rect ? { low: Number(rect.dataset.low), high: Number(rect.dataset.high), value: Number(/now ([\\d.]+)/.exec(m.innerText)[1]), inside: m.dataset.inside } : false;
      })()`,
        'the baseline band of gpu-node-001 GPU 5',
        30_000,
      );
      expect(band.high).toBeGreaterThan(band.low);
      expect(band.low).toBeGreaterThan(40);
      expect(band.high).toBeLessThan(band.value);
      expect(band.inside).toBe('false');
      // Its recent history from the engine's ring: it ran inside its band before it ran hot; the band said in words.
      const history = await page.waitFor<{ points: number; outside: number; text: string }>(
        `(() => {
        const m = document.querySelector('[data-gpu-page="gpu-node-001/5"] ~ [data-metric="temp_c"]');
        return m && Number(m.dataset.points) > 20 ? { points: Number(m.dataset.points), outside: Number(m.dataset.outside), text: m.innerText } : false;
      })()`,
        'the history of gpu-node-001 GPU 5',
        30_000,
      );
      expect(history.outside).toBeGreaterThan(0);
      expect(history.outside).toBeLessThan(history.points);
      expect(history.text).toMatch(/normal [\d.]+–[\d.]+ °C: mean [\d.]+ °C ± [\d.]+ × spread [\d.]+ °C, at busy/);
      // The demo is a recording: its times are its own, not "183 d ago".
      const gpuText = await page.evaluate<string>('document.getElementById("view").innerText');
      expect(gpuText).toContain('The data is a recording');
      expect(gpuText).not.toMatch(/\d+ d ago/);
      await page.screenshot(join(SHOTS, 'up-gpu.png'));

      // The GPU that fell off the bus: said so, since when, its charts on real axes up to then, its Xid named.
      await page.evaluate(`location.hash = '#/gpu/gpu-node-002/3'; true`);
      const lost = await page.waitFor<{ banner: string; labels: number[]; band: boolean; events: string[] }>(
        `(() => {
        const p = document.querySelector('[data-gpu-page="gpu-node-002/3"] ~ p[data-missing]');
        const m = document.querySelector('[data-metric="temp_c"]');
        const events = [...document.querySelectorAll('tr[data-event-kind="kernel"]')].map((r) => r.innerText);
        // (the kernel events come in on their own topic: the page redraws every 5 s until they are judged too)
        if (!p || !m || !events.some((e) => e.includes('Xid 79'))) return false;
        return { banner: p.innerText, labels: [...m.querySelectorAll('text')].slice(0, 2).map((t) => Number(t.textContent)), band: m.querySelector('polygon.band') !== null,
          events };
      })()`,
        'the page of the GPU that fell off the bus',
        30_000,
      );
      expect(lost.banner).toMatch(/^Fallen off the bus: this GPU has been missing from its host's samples since 2026-06-01 02:1\d/);
      expect(Math.min(...lost.labels)).toBeGreaterThan(20);
      expect(lost.band).toBe(true);
      expect(lost.events.join('\n')).toMatch(/Xid 79: /);
      expect(lost.events.join('\n')).not.toMatch(/kernel event [0-9a-f]{8}/);
      await page.screenshot(join(SHOTS, 'up-gpu-lost.png'));

      // A silence made in the page, through the notifier's own /v1/silences.
      await page.evaluate(`location.hash = '#/silences'; true`);
      await page.waitFor('document.body.dataset.view === "silences"', 'the silences page');
      await page.evaluate(`document.getElementById('s-matchers').value = 'probe="muted"';
        document.getElementById('s-for').value = '1h'; document.getElementById('s-by').value = 'console-test';
        document.getElementById('s-comment').value = 'made in the console'; document.getElementById('silence-form').requestSubmit(); true`);
      // (the notifier's own silence for the demo's maintenance notice is listed too)
      const id = await page.waitFor<string>(
        '[...document.querySelectorAll("tr[data-silence][data-state=active]")].find((r) => r.innerText.includes(\'probe="muted"\'))?.dataset.silence',
        'the new silence listed',
      );
      // It says how far it reaches: none of what the demo has firing.
      expect(await page.evaluate('document.getElementById("status").textContent')).toMatch(
        new RegExp(`^created ${id}: matches 0 of [1-9]\\d* firing alerts on 0 hosts$`),
      );
      await page.screenshot(join(SHOTS, 'up-silences.png'));

      const list = await runCli(['silence', 'list'], { env });
      expect(list.code).toBe(0);
      expect(list.stdout).toMatch(new RegExp(`^${id}  active .* probe="muted"  by console-test: made in the console$`, 'm'));

      // The next alert that matches is muted; one beside it that does not match is not (the check can see an unmuted one).
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      const probes = ['muted', 'loud'].map((probe) => ({
        labels: { alertname: 'ConsoleProbe', host: 'gpu-node-002', probe },
        annotations: { summary: `probe ${probe}` },
      }));
      expect((await fetch(`${base}/api/v2/alerts`, { method: 'POST', headers, body: JSON.stringify(probes) })).status).toBe(200);
      await page.evaluate(`location.hash = '#/alerts'; true`);
      const states = await page.waitFor<Record<string, string>>(
        `(() => {
        const rows = [...document.querySelectorAll('#alerts tr[data-fingerprint]')].filter((r) => r.innerText.includes('probe '));
        const out = Object.fromEntries(rows.map((r) => [/probe (\\w+)/.exec(r.innerText)[1], r.dataset.state + ' ' + r.cells[5].innerText.trim()]));
        return out.muted && out.loud ? out : false;
      })()`,
        'both probes on the alerts page',
        30_000,
      );
      expect(states).toEqual({ muted: `suppressed suppressed silenced by ${id}`, loud: 'active active' });
      await page.screenshot(join(SHOTS, 'up-alerts.png'));

      // The lost GPU's incident, its timeline exported from the page (`gpualert timeline`'s HTML, fetched with the token).
      const incident = await page.waitFor<string>(
        `[...document.querySelectorAll('tr[data-incident]')].find((r) => r.cells[1].innerText === 'gpu-node-002')?.dataset.incident`,
        "gpu-node-002's incident",
        30_000,
      );
      const downloads = mkdtempSync(join(tmpdir(), 'gpualert-console-dl-'));
      await browser.allowDownloads(downloads);
      await page.evaluate(`document.querySelector('button[data-export="${incident}"][data-format="html"]').click(); true`);
      const file = join(downloads, `incident-${incident}.html`);
      await waitFor(() => existsSync(file) && readFileSync(file, 'utf8').includes('</html>'), 'the exported timeline', 30_000);
      expect(readFileSync(file, 'utf8')).toMatch(/fallen off the bus|fallen_off_bus/i);
      expect(page.errors).toEqual([]);
    } finally {
      await browser.close();
      up.kill('SIGINT');
      await once(up, 'exit');
    }
  }, 150_000);
});
