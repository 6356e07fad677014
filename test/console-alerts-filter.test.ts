import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@gpualert/log';
import { emptyNotifierState, loadRoutes, NotifierCore } from '@gpualert/notify';
import { createNotifierServer, NotifierMetrics } from '@gpualert/notifier';
import { newEnvelope, type AlertData, type FleetSource } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { syntheticFleetSnapshot } from '@gpualert/test-support';
import { SilenceSync } from '../services/notifier/src/silence-sync.ts';
import { Browser, type Page } from './console-browser.ts';
import { close, listen } from './infra/http.ts';

const TOKEN = 'console-token-0123456789';
const MIN = 60_000;
/** Screenshots land here for a person to look at (kept after the run), beside console.test.ts' own. */
const SHOTS = join(tmpdir(), 'gpualert-console-shots');

/**
 * The alerts page as an on-call engineer uses it, against a notifier's state made by its own core
 * from engine-shaped alerts: a maintenance window on gpu-node-001 (its silence holds the pager
 * only), a GPU of that host off the bus inside it, and faults on four other hosts.
 */
describe("the console's alerts page: Alertmanager's matchers, grouping, and the silence form's preview, in headless Chromium", () => {
  // The routes a fleet pages with (rules/routes.yaml): critical to the pager, warning and worse to chat, errors to a ticket.
  const routes = loadRoutes();
  if (!routes.ok) throw new Error('routes');
  const core = new NotifierCore(routes.value);
  const state = emptyNotifierState();
  const store = new MemoryStore();
  const now = Date.now();
  const window = { start: now - 30 * MIN, end: now + 90 * MIN };
  const fingerprints: Record<string, string> = {};
  const raise = (
    host: string,
    category: AlertData['category'],
    severity: AlertData['severity'],
    gpu: number | undefined,
    summary: string,
    extra: Partial<AlertData> = {},
  ) => {
    const fingerprint = `${host}-${category}`;
    fingerprints[`${host} ${category}`] = fingerprint;
    core.ingest(
      state,
      newEnvelope({
        type: 'alert',
        host,
        source: 'engine',
        ts: new Date(now - 10 * MIN).toISOString(),
        data: {
          fingerprint,
          status: 'firing',
          severity,
          category,
          rule: `${category}_rule`,
          summary,
          starts_at: new Date(now - 10 * MIN).toISOString(),
          evidence: [],
          ...(gpu !== undefined ? { gpu: { index: gpu } } : {}),
          ...extra,
        },
      }),
      now - 10 * MIN,
    );
  };
  raise('gpu-node-001', 'maintenance', 'warning', undefined, 'aws system-maintenance scheduled', {
    window: { start: new Date(window.start).toISOString(), end: new Date(window.end).toISOString() },
  });
  raise('gpu-node-001', 'fallen_off_bus', 'critical', 3, 'GPU 3 fell off the bus');
  raise('gpu-node-002', 'thermal', 'critical', 5, 'GPU 5 at 91 °C');
  raise('gpu-node-003', 'ecc', 'warning', 1, 'correctable ECC errors rising');
  raise('gpu-node-010', 'thermal', 'critical', 0, 'GPU 0 at 90 °C');
  raise('gpu-node-011', 'xid', 'error', 2, 'Xid 13 <img src=x onerror="document.title=\'owned\'">');
  const view = { routes: routes.value, state: () => state };
  const fleet: FleetSource = {
    snapshot(at) {
      const s = syntheticFleetSnapshot(4, 8, at);
      s.hosts[1]!.host = 'gpu-node-001';
      s.hosts[1]!.maintenance = [
        { id: 'aws-evt-1', open: true, status: 'started', start: window.start, end: window.end, description: 'aws system-maintenance' },
      ];
      return Promise.resolve(s);
    },
  };
  const server = createNotifierServer(store, new NotifierMetrics(), TOKEN, undefined, {}, routes.value, view, fleet);
  const sync = new SilenceSync(store, createLogger({ name: 't', level: 'silent' }), () => Promise.resolve());
  let base = '';
  let browser: Browser;
  let page: Page;

  const rows = () =>
    page.evaluate<{ fingerprint: string; state: string; held: string }[]>(
      `[...document.querySelectorAll('#alerts tr[data-fingerprint]')].map((r) => ({ fingerprint: r.dataset.fingerprint, state: r.dataset.state, held: r.cells[5].innerText.trim() }))`,
    );
  const drawn = async (hash: string) => {
    const before = await page.evaluate<string>('document.body.dataset.drawn ?? "0"');
    await page.evaluate(`location.hash = ${JSON.stringify(hash)}; true`);
    await page.waitFor(
      `document.body.dataset.drawn !== ${JSON.stringify(before)} && document.body.dataset.view === ${JSON.stringify(hash.split('/')[1])}`,
      hash,
    );
  };
  /** Types a filter and a grouping as a person would, and presses Apply; waits for the page to redraw. */
  const apply = async (filter: string, group: string) => {
    const before = await page.evaluate<string>('document.body.dataset.drawn');
    await page.evaluate(
      `document.getElementById('filter').value = ${JSON.stringify(filter)}; document.getElementById('group-by').value = ${JSON.stringify(group)}; document.querySelector('#alert-filter button[type=submit]').click(); true`,
    );
    await page.waitFor(
      `document.body.dataset.drawn !== ${JSON.stringify(before)} && document.getElementById('filter').value === ${JSON.stringify(filter)} && document.getElementById('group-by').value === ${JSON.stringify(group)}`,
      `the page redrawn for ${filter} / ${group}`,
    );
  };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // The running notifier shares its core's silences with the store the console's /v1/silences reads.
    await sync.shareOwn(state, new Map());
    base = await listen(server);
    browser = await Browser.launch();
    page = await browser.newPage();
    await page.goto(`${base}/console/#/alerts`);
    await page.waitFor('document.getElementById("token-form") && !document.getElementById("token-form").hidden', 'the token form');
    await page.evaluate(`document.getElementById('token').value = ${JSON.stringify(TOKEN)}; document.getElementById('token-form').requestSubmit(); true`);
    await page.waitFor('document.body.dataset.view === "alerts"', 'the alerts page');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await close(server);
  });

  it('the filter bar narrows the list by Alertmanager matchers, keeps the filter in the address, and words a matcher it refuses', async () => {
    expect(await rows()).toHaveLength(6);
    await apply('{host=~"gpu-node-0.*",severity="critical"}', '');
    const critical = await rows();
    expect(critical.map((r) => r.fingerprint).sort()).toEqual([
      fingerprints['gpu-node-001 fallen_off_bus'],
      fingerprints['gpu-node-002 thermal'],
      fingerprints['gpu-node-010 thermal'],
    ]);
    // The GPU off the bus inside the window: held from the pager by the window's silence, and said so.
    expect(critical.find((r) => r.fingerprint === fingerprints['gpu-node-001 fallen_off_bus'])).toEqual({
      fingerprint: fingerprints['gpu-node-001 fallen_off_bus'],
      state: 'suppressed',
      held: `suppressed silenced by maintenance-${fingerprints['gpu-node-001 maintenance']} (held from pager only)`,
    });
    expect(await page.evaluate('document.getElementById("alert-count").textContent')).toBe('3 firing matching the filter');
    const hash = await page.evaluate<string>('location.hash');
    expect(new URLSearchParams(decodeURIComponent(hash.slice('#/alerts/'.length))).get('filter')).toBe('{host=~"gpu-node-0.*",severity="critical"}');
    // A reload keeps what the person asked for.
    await page.evaluate('window.beforeReload = true; location.reload(); true');
    await page.waitFor(
      '!window.beforeReload && document.body.dataset.view === "alerts" && document.querySelectorAll("#alerts tr[data-fingerprint]").length === 3',
      'the filtered page after a reload',
    );
    expect(await page.evaluate('document.getElementById("filter").value')).toBe('{host=~"gpu-node-0.*",severity="critical"}');
    await page.screenshot(join(SHOTS, 'alerts-filtered.png'));
    // A regex RE2 refuses: the notifier's own message, under the bar, and no list.
    await apply('{host=~"gpu-node-(0"}', '');
    expect(await page.evaluate('document.getElementById("filter-error").textContent')).toMatch(/^filter "\{host=~\\"gpu-node-\(0\\"\}": /);
    expect(await rows()).toEqual([]);
    // Chromium logs the refused request; nothing else went wrong.
    expect(page.errors.splice(0).filter((e) => !/status of 400 \(Bad Request\)/.test(e))).toEqual([]);
    await apply('', '');
    expect(await rows()).toHaveLength(6);
  });

  it('groups by receiver (an alert sent to two is in both) and by any label, each group with its count', async () => {
    await apply('', '@receiver');
    const groups = () =>
      page.evaluate<Record<string, number>>(
        `Object.fromEntries([...document.querySelectorAll('#alerts tbody[data-group]')].map((g) => [g.dataset.group, g.querySelectorAll('tr[data-fingerprint]').length]))`,
      );
    // Critical and not expected: the pager; warning and worse: chat; error: a ticket.
    expect(await groups()).toEqual({ chat: 6, pager: 3, ticket: 1 });
    expect(await page.evaluate('document.querySelector("#alerts tbody[data-group=pager] tr.group").innerText')).toMatch(/^receiver="pager"\s+3 alerts$/);
    await page.screenshot(join(SHOTS, 'alerts-by-receiver.png'));
    await apply('', 'host');
    expect(await groups()).toEqual({ 'gpu-node-001': 2, 'gpu-node-002': 1, 'gpu-node-003': 1, 'gpu-node-010': 1, 'gpu-node-011': 1 });
    // What an alert says stays text.
    expect(await page.evaluate('document.title')).toBe('gpualert console');
    expect(await page.evaluate('document.querySelectorAll("#alerts img").length')).toBe(0);
    expect(page.errors).toEqual([]);
  });

  it("the silence form previews what it would silence (count and list), and the silence made holds exactly those; a window's silence shows whom it holds back from", async () => {
    await drawn('#/silences');
    const preview = async (matchers: string) => {
      await page.evaluate(
        `(() => { document.getElementById('s-preview').removeAttribute('data-count'); const t = document.getElementById('s-matchers'); t.value = ${JSON.stringify(matchers)}; t.dispatchEvent(new Event('input', { bubbles: true })); return true; })()`,
      );
      const count = Number(await page.waitFor<string>('document.getElementById("s-preview").dataset.count', `the preview of ${matchers}`));
      const listed = await page.evaluate<string[]>('[...document.querySelectorAll("#s-preview-list li")].map((li) => li.dataset.fingerprint).sort()');
      return { count, listed, text: await page.evaluate<string>('document.getElementById("s-preview-count").textContent') };
    };
    expect(await preview('host=~"gpu-node-01.*"')).toEqual({
      count: 2,
      listed: [fingerprints['gpu-node-010 thermal'], fingerprints['gpu-node-011 xid']].sort(),
      text: 'would silence 2 firing alerts',
    });
    const critical = await preview('severity="critical"\nhost!="gpu-node-002"');
    expect(critical.count).toBe(2);
    await page.screenshot(join(SHOTS, 'silence-preview.png'));
    // The window's own silence: for the pager only, from 15 minutes before the window to 15 after.
    const windowSilence = `maintenance-${fingerprints['gpu-node-001 maintenance']}`;
    expect(await page.evaluate(`document.querySelector('tr[data-silence="${windowSilence}"] .scope').textContent`)).toBe('only pager');
    // Made: the silence lands in the store; the notifier's next step reads it; the alerts page shows it on exactly the previewed alerts.
    await page.evaluate(
      `document.getElementById('s-by').value = 'ops'; document.getElementById('s-comment').value = 'swapping cards'; document.getElementById('silence-form').requestSubmit(); true`,
    );
    const id = await page.waitFor<string>('document.getElementById("status").textContent.match(/^created ([^\\s:]+)/)?.[1]', 'the silence made');
    state.silences = await sync.current(state);
    await drawn('#/alerts');
    const silenced = (await rows()).filter((r) => r.held.includes(`silenced by ${id}`)).map((r) => r.fingerprint);
    expect(silenced.sort()).toEqual(critical.listed);
    expect(silenced).toHaveLength(critical.count);
    expect(page.errors).toEqual([]);
  });

  it("the maintenance page shows each window's pager silence: when it holds and whom it holds back from", async () => {
    await drawn('#/maintenance');
    const held = await page.evaluate<string>('document.querySelector("#windows tr[data-open=true] td.held").innerText');
    expect(held).toContain(`maintenance-${fingerprints['gpu-node-001 maintenance']} active`);
    expect(held).toContain(new Date(window.start - 15 * MIN).toISOString().replace('T', ' ').slice(0, 19));
    expect(held).toContain(new Date(window.end + 15 * MIN).toISOString().replace('T', ' ').slice(0, 19));
    expect(held).toContain('only pager');
    await page.screenshot(join(SHOTS, 'maintenance-held.png'));
    expect(page.errors).toEqual([]);
  });
});
