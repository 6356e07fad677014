import { mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FleetSnapshot, type FleetSource } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { createNotifierServer, loadSilences, NotifierMetrics } from '@gpualert/notifier';
import { syntheticFleetSnapshot } from '@gpualert/test-support';
import { Browser, type Page } from './console-browser.ts';
import { close, listen } from './infra/http.ts';

const TOKEN = 'console-token-0123456789';
/** Screenshots land here for a person to look at (kept after the run). */
export const SHOTS = join(tmpdir(), 'gpualert-console-shots');
const HOSTILE = '<img src=x onerror="document.title=\'owned\'">';

/** The synthetic fleet (20 hosts × 8 GPUs), with one host named like an attack. */
const fleet: FleetSource = {
  snapshot(now) {
    const s = syntheticFleetSnapshot(20, 8, now);
    s.hosts[9]!.host = HOSTILE;
    s.hosts[9]!.gpus[2]!.state = 'warning';
    s.hosts[9]!.state = 'warning';
    return Promise.resolve(s);
  },
};

describe('the live console against a fixture fleet, in headless Chromium', () => {
  const store = new MemoryStore();
  const server = createNotifierServer(store, new NotifierMetrics(), TOKEN, undefined, {}, undefined, undefined, fleet);
  let base = '';
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    base = await listen(server);
    browser = await Browser.launch();
    page = await browser.newPage();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await close(server);
  });

  it('serves the page without a token, and no data without one', async () => {
    const html = await fetch(`${base}/console/`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await html.text()).toContain('<script type="module" src="/console/app.js">');
    expect((await fetch(`${base}/v1/fleet`)).status).toBe(401);
    const bare = await fetch(`${base}/console`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location')]).toEqual([302, '/console/']);
    const script = await fetch(`${base}/console/app.js`);
    expect([script.status, script.headers.get('content-type')]).toEqual([200, 'text/javascript; charset=utf-8']);
    expect((await fetch(`${base}/console/../../package.json`)).status).toBe(404);
    expect((await fetch(`${base}/console/%2e%2e%2fconsole-http.ts`)).status).toBe(404);
    const answer = await fetch(`${base}/v1/fleet`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(answer.status).toBe(200);
    // the snapshot keeps its contract
    expect(FleetSnapshot.safeParse(await answer.json()).success).toBe(true);
  });

  it('answers one GPU by its host and index; a bad host, GPU or method is one line', async () => {
    const get = (path: string, init: RequestInit = {}) => fetch(`${base}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}` } });
    const one = await get('/v1/fleet/syn-node-0001/3');
    expect(one.status).toBe(200);
    const body = (await one.json()) as { host: { host: string; siblings: { index: number }[]; gpus?: unknown }; gpu: { index: number; state: string } };
    expect(body.gpu).toMatchObject({ index: 3, state: 'critical' });
    expect(body.host.siblings.map((s) => s.index)).toEqual([0, 1, 2, 4, 5, 6, 7]);
    expect(body.host.gpus).toBeUndefined();
    // the hostile host by its percent-encoded name
    expect((await get(`/v1/fleet/${encodeURIComponent(HOSTILE)}/2`)).status).toBe(200);
    expect(await (await get('/v1/fleet/syn-node-0001/9')).json()).toMatchObject({ error: 'not_found' });
    expect((await get('/v1/fleet/syn-node-0001/256')).status).toBe(400);
    expect((await get('/v1/fleet/syn-node-0001/-1')).status).toBe(400);
    expect((await get('/v1/fleet/%E0%A4%A/1')).status).toBe(400);
    expect((await get('/v1/fleet/a%0Ab/1')).status).toBe(400);
    expect((await get('/v1/fleet', { method: 'POST' })).status).toBe(405);
    // the grid's view: each GPU's index and state, nothing else
    const grid = (await (await get('/v1/fleet?view=grid')).json()) as { hosts: { gpus: object[] }[] };
    expect(grid.hosts[0]!.gpus[0]).toEqual({ index: 0, state: 'ok' });
    // without a notifier behind it there is no alert list
    expect((await get('/v1/alerts')).status).toBe(503);
  });

  it('asks for the token once, then draws the grid in the severity colours; a hostile host name stays text', async () => {
    await page.goto(`${base}/console/`);
    await page.waitFor('!document.getElementById("token-form").hidden', 'the token form');
    await page.evaluate(`document.getElementById('token').value = ${JSON.stringify(TOKEN)}; document.getElementById('token-form').requestSubmit(); true`);
    await page.waitFor('document.body.dataset.view === "fleet"', 'the fleet grid drawn');
    const cells = await page.evaluate<Record<string, string>>(
      `Object.fromEntries([...document.querySelectorAll('a.gpu[data-state]:not([data-state="ok"])')].map((a) => [a.dataset.host + '/' + a.dataset.gpu, a.dataset.state + ' ' + getComputedStyle(a).backgroundColor]))`,
    );
    expect(cells).toEqual({
      'syn-node-0001/3': 'critical rgb(215, 38, 61)',
      'syn-node-0002/0': 'error rgb(238, 132, 52)',
      'syn-node-0002/5': 'warning rgb(242, 193, 78)',
      'syn-node-0003/7': 'info rgb(138, 184, 230)',
      [`${HOSTILE}/2`]: 'warning rgb(242, 193, 78)',
    });
    expect(await page.evaluate('document.querySelectorAll("a.gpu").length')).toBe(160);
    expect(await page.evaluate('document.querySelectorAll("#grid img").length')).toBe(0);
    expect(await page.evaluate('document.title')).toBe('gpualert console');
    // the token is in this tab's storage, in no URL
    expect(await page.evaluate('sessionStorage.getItem("gpualert.notifierToken")')).toBe(TOKEN);
    expect(await page.evaluate('location.href')).not.toContain(TOKEN);
    await page.screenshot(join(SHOTS, 'fixture-fleet.png'));
    expect(readFileSync(join(SHOTS, 'fixture-fleet.png')).subarray(1, 4).toString()).toBe('PNG');
    expect(page.errors).toEqual([]);
  });

  it("a GPU's page draws each metric against its baseline band and its siblings' median", async () => {
    await page.evaluate(`document.querySelector('a.gpu[data-host="syn-node-0001"][data-gpu="3"]').click(); true`);
    await page.waitFor('document.body.dataset.view === "gpu" && document.querySelector("[data-gpu-page]")', 'the GPU page');
    const temp = await page.evaluate<{ low: number; high: number; inside: string; dot: string }>(`(() => {
      const m = document.querySelector('[data-metric="temp_c"]');
      const band = m.querySelector('rect.band');
      return { low: Number(band.dataset.low), high: Number(band.dataset.high), inside: m.dataset.inside, dot: m.querySelector('circle.value').getAttribute('class') };
    })()`);
    // the synthetic GPU runs at 88 °C against its own 64 ± 3·1.5
    expect(temp).toEqual({ low: 59.5, high: 68.5, inside: 'false', dot: 'value outside' });
    expect(await page.evaluate('document.querySelector(\'[data-metric="util_pct"]\').dataset.inside')).toBe('true');
    expect(await page.evaluate('document.querySelectorAll("line.sibling").length')).toBe(4);
    // The band in words: which number is the mean, which the multiplier, which the spread, and what they come to.
    expect(await page.evaluate('document.body.innerText')).toMatch(
      /Temperature now 88\.0 °C outside its normal · normal 59\.5–68\.5 °C: mean 64\.0 °C ± 3\.00 × spread 1\.50 °C, at util 75-100%, learned from \d+ samples/,
    );
    await page.screenshot(join(SHOTS, 'fixture-gpu.png'));
    expect(page.errors).toEqual([]);
  });

  it("a silence made in the page goes through /v1/silences' own validation and lands in the store", async () => {
    await page.evaluate(`location.hash = '#/silences/new/syn-node-0001/3'; true`);
    await page.waitFor('document.body.dataset.view === "silences"', 'the silences page');
    expect(await page.evaluate('document.getElementById("s-matchers").value')).toBe('host="syn-node-0001"\ngpu="3"');
    // a refusal is the API's own sentence
    await page.evaluate(
      `document.getElementById('s-matchers').value = 'host=~".*"'; document.getElementById('s-by').value = 'ops'; document.getElementById('s-comment').value = 'x'; document.getElementById('silence-form').requestSubmit(); true`,
    );
    const refusal = await page.waitFor<string>(
      'document.getElementById("s-result").className === "error" && document.getElementById("s-result").textContent',
      'the refusal',
    );
    expect(refusal).toMatch(/^400: .*would silence every alert/);
    expect(Object.keys(await loadSilences(store))).toEqual([]);
    // One that reaches across what fires is refused with its count (the form's force box would make it).
    const firing = (host: string) => JSON.stringify({ version: 1, labels: { host, alertname: 'GpuHot' } });
    await store.hashSet('notifier:firing', { 'fp-hot-2': firing('syn-node-0002'), 'fp-hot-3': firing('syn-node-0003') });
    await page.evaluate(
      `document.getElementById('s-result').textContent = ''; document.getElementById('s-matchers').value = 'alertname="GpuHot"'; document.getElementById('silence-form').requestSubmit(); true`,
    );
    const broad = await page.waitFor<string>(
      'document.getElementById("s-result").textContent.includes("firing") && document.getElementById("s-result").textContent',
      'the broad silence refused',
    );
    expect(broad).toMatch(/^400: this silence matches 2 of 2 firing alerts on 2 hosts: .*force/);
    expect(await page.evaluate('document.getElementById("s-force").checked')).toBe(false);
    expect(Object.keys(await loadSilences(store))).toEqual([]);
    await page.evaluate(
      `document.getElementById('s-matchers').value = 'host="syn-node-0001"\\ngpu="3"'; document.getElementById('s-comment').value = 'swapping the card'; document.getElementById('silence-form').requestSubmit(); true`,
    );
    const id = await page.waitFor<string>('document.querySelector("tr[data-silence][data-state=active]")?.dataset.silence', 'the new silence listed');
    expect(await page.evaluate('document.getElementById("status").textContent')).toBe(`created ${id}: matches 0 of 2 firing alerts on 0 hosts`);
    const stored = await loadSilences(store);
    expect(Object.keys(stored)).toEqual([id]);
    expect(stored[id]).toMatchObject({ matchers: ['host="syn-node-0001"', 'gpu="3"'], createdBy: 'ops', comment: 'swapping the card' });
    await page.screenshot(join(SHOTS, 'fixture-silences.png'));
    await page.evaluate(`document.querySelector('button[data-expire]').click(); true`);
    await page.waitFor(`document.querySelector('tr[data-silence="${id}"]')?.dataset.state === 'expired'`, 'the silence expired');
    expect((await loadSilences(store))[id]!.expiredAt).toBeTypeOf('number');
    // the form's preview asked once for the alert list this server (no notifier) does not have; the two refusals; nothing else
    expect(page.errors).toEqual([
      'Failed to load resource: the server responded with a status of 503 (Service Unavailable)',
      ...new Array(2).fill('Failed to load resource: the server responded with a status of 400 (Bad Request)'),
    ]);
    expect(await page.evaluate('document.getElementById("s-preview").textContent')).toBe(
      'no preview: this server runs without a notifier: there is no alert list to show',
    );
  });

  it('shows the open maintenance window, and asks again for a token the server refuses', async () => {
    await page.evaluate(`location.hash = '#/maintenance'; true`);
    await page.waitFor('document.body.dataset.view === "maintenance"', 'the maintenance page');
    expect(await page.evaluate('document.querySelector("#windows tr[data-open=true]").innerText')).toMatch(/syn-node-0005\s+open\s+started.*firmware update/s);
    await page.evaluate(`sessionStorage.setItem('gpualert.notifierToken', 'a-wrong-token-of-length'); location.hash = '#/fleet'; true`);
    await page.waitFor('!document.getElementById("token-form").hidden', 'the token form again');
    expect(await page.evaluate('document.getElementById("token-error").textContent')).toBe('the notifier refused the token');
    expect(await page.evaluate('sessionStorage.getItem("gpualert.notifierToken")')).toBeNull();
  });
});

describe("the console's alerts page against a notifier's state", () => {
  it('lists each firing alert with its evidence and what silences it, grouped into the incident the fleet names', async () => {
    const { emptyNotifierState, loadRoutes } = await import('@gpualert/notify');
    const { bundledPath } = await import('@gpualert/rules');
    const routes = loadRoutes(bundledPath('rules/routes.embedded.yaml'));
    if (!routes.ok) throw new Error('routes');
    const state = emptyNotifierState();
    const now = Date.now();
    const hot = {
      host: 'syn-node-0001',
      gpu: '3',
      severity: 'critical',
      category: 'baseline',
      rule: 'baseline_temp',
      fingerprint: 'syn1-3',
      expected: 'false',
    };
    const ecc = { host: 'syn-node-0002', gpu: '5', severity: 'warning', category: 'ecc', rule: 'ecc_sbe_rate', fingerprint: 'syn2-5', expected: 'false' };
    state.firing['syn1-3'] = hot;
    state.firing['syn2-5'] = ecc;
    state.about['syn1-3'] = {
      startsAt: new Date(now - 600_000).toISOString(),
      updatedAt: now,
      summary: 'GPU 3 at 88 °C, 24 °C above its own normal',
      evidence: ['gpu.sample 7f1c', '<b>kernel</b> Xid 79'],
    };
    state.about['syn2-5'] = { startsAt: new Date(now - 300_000).toISOString(), updatedAt: now, summary: 'correctable ECC errors rising', evidence: [] };
    state.silences['s-ecc'] = { id: 's-ecc', matchers: ['category="ecc"'], startsAt: now - 1_000, endsAt: now + 3_600_000, createdBy: 'ops', comment: 'known' };
    const view = { routes: routes.value, state: () => state };
    const server = createNotifierServer(new MemoryStore(), new NotifierMetrics(), TOKEN, undefined, {}, routes.value, view, fleet);
    const base = await listen(server);
    const browser = await Browser.launch();
    try {
      const page = await browser.newPage();
      await page.goto(`${base}/console/#/alerts`);
      await page.waitFor('document.getElementById("token-form") && !document.getElementById("token-form").hidden', 'the token form');
      await page.evaluate(`document.getElementById('token').value = ${JSON.stringify(TOKEN)}; document.getElementById('token-form').requestSubmit(); true`);
      await page.waitFor('document.body.dataset.view === "alerts"', 'the alerts page');
      const rows = await page.evaluate<Record<string, { state: string; text: string; evidence: string[] }>>(
        `Object.fromEntries([...document.querySelectorAll('#alerts tr[data-fingerprint]')].map((r) => [r.dataset.fingerprint, { state: r.dataset.state, text: r.cells[5].innerText.trim(), evidence: [...r.querySelectorAll('.evidence li')].map((li) => li.textContent) }]))`,
      );
      expect(rows).toEqual({
        'syn1-3': { state: 'active', text: 'active', evidence: ['gpu.sample 7f1c', '<b>kernel</b> Xid 79'] },
        'syn2-5': { state: 'suppressed', text: 'suppressed silenced by s-ecc', evidence: [] },
      });
      // the synthetic fleet names inc-1 for the hot GPU's alert; the incident offers its timeline
      expect(await page.evaluate('[...document.querySelectorAll("tr[data-incident]")].map((r) => r.dataset.incident + " " + r.cells[1].innerText)')).toEqual([
        'inc-1 syn-node-0001',
      ]);
      expect(await page.evaluate('document.querySelectorAll("button[data-export=\'inc-1\']").length')).toBe(3);
      await page.screenshot(join(SHOTS, 'fixture-alerts.png'));
      expect(page.errors).toEqual([]);
    } finally {
      await browser.close();
      await close(server);
    }
  });
});

describe("the console's own sources", () => {
  it('without the engine, the fleet is what the firing alerts name: their hosts and GPUs in their worst severity', async () => {
    const { emptyNotifierState, loadRoutes } = await import('@gpualert/notify');
    const { bundledPath } = await import('@gpualert/rules');
    const { alertsFleetSource } = await import('../services/notifier/src/console/alerts-fleet-source.ts');
    const routes = loadRoutes(bundledPath('rules/routes.embedded.yaml'));
    if (!routes.ok) throw new Error('routes');
    const state = emptyNotifierState();
    state.firing.f1 = { host: 'n1', gpu: '3', severity: 'warning', category: 'thermal', rule: 'r1' };
    state.firing.f2 = { host: 'n1', gpu: '3', severity: 'critical', category: 'xid', rule: 'r2' };
    state.firing.f3 = { host: 'n1', severity: 'error', category: 'host_down', rule: 'r3' };
    state.firing.f4 = { alertname: 'GpuHot', instance: 'n2:9400', gpu: '999' };
    state.firing.f5 = { alertname: 'NoHost' };
    const snapshot = await alertsFleetSource({ routes: routes.value, state: () => state }).snapshot(1_000);
    expect(FleetSnapshot.safeParse(snapshot).success).toBe(true);
    expect(snapshot.hosts.map((h) => [h.host, h.state, h.gpus.map((g) => `${g.index}:${g.state}`), h.alerts.map((a) => a.fingerprint)])).toEqual([
      ['n1', 'critical', ['3:critical'], ['f3']],
      // a GPU index past 255 is no GPU: the alert stays with its host
      ['n2', 'warning', [], ['f4']],
    ]);
  });
});
