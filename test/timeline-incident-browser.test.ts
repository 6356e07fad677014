import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { newEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Browser, type Page } from './console-browser.ts';
import { cleanEnv, runCli } from './infra/run-cli.ts';

const T0 = Date.parse('2026-06-01T02:00:00Z');
const at = (s: number) => new Date(T0 + s * 1_000).toISOString();

function alert(id: string, host: string, gpu: number, fingerprint: string, ts: number, extra: Partial<EnvelopeOf<'alert'>['data']> = {}): Envelope {
  return newEnvelope({
    type: 'alert',
    id,
    host,
    source: 'engine',
    ts: at(ts),
    data: {
      fingerprint,
      status: 'firing',
      severity: 'critical',
      category: 'xid',
      rule: 'kernel-event',
      gpu: { index: gpu },
      summary: `${id}: GPU ${gpu} on ${host}`,
      starts_at: at(ts),
      evidence: [],
      ...extra,
    },
  });
}

const notification = (id: string, ts: number, fingerprints: string[], data: Partial<EnvelopeOf<'notification'>['data']>): Envelope =>
  newEnvelope({
    type: 'notification',
    id,
    host: 'gpu-node-002',
    source: 'notifier',
    ts: at(ts),
    data: { receiver: 'oncall-pager', channel: 'pagerduty', fingerprints, reason: 'page', outcome: 'sent', attempt: 1, ...data },
  });

/**
 * The demo's night on three hosts: gpu-node-000 healthy, GPU 5 of gpu-node-001 running hot (one
 * incident), GPU 3 of gpu-node-002 lost after an Xid 119 then 79 (another: the one exported).
 */
function night(): Envelope[] {
  const samples = ['gpu-node-000', 'gpu-node-001', 'gpu-node-002'].flatMap((host) =>
    Array.from({ length: 6 * 50 }, (_, i) => {
      const m = i / 6;
      const gpus = Array.from({ length: 8 }, (_, gpu) => ({
        index: gpu,
        temp_c: host === 'gpu-node-001' && gpu === 5 ? 60 + Math.min(14, Math.max(0, m - 6)) : 60 + (gpu % 3),
        power_w: 630 - gpu,
        util_pct: 96,
        mem_temp_c: 64 + (i % 2),
      })).filter((g) => !(host === 'gpu-node-002' && g.index === 3 && m >= 18));
      return newEnvelope({ type: 'gpu.sample', id: `${host}-${i}`, host, source: 'collector', ts: at(i * 10), data: { gpus: gpus as never } });
    }),
  );
  return [
    ...samples,
    newEnvelope({
      type: 'kernel.event',
      id: 'xid119',
      host: 'gpu-node-002',
      source: 'collector',
      ts: at(17 * 60),
      data: {
        kind: 'xid',
        xid: 119,
        gpu: 3,
        message: 'NVRM: Xid (PCI:0000:4b:00): 119, Timeout after 6s of waiting for RPC response',
        severity: 'critical',
        meaning: 'GSP RPC Timeout',
      },
    }),
    newEnvelope({
      type: 'kernel.event',
      id: 'xid79',
      host: 'gpu-node-002',
      source: 'collector',
      ts: at(18 * 60),
      data: {
        kind: 'xid',
        xid: 79,
        gpu: 3,
        message: 'NVRM: Xid (PCI:0000:4b:00): 79, GPU has fallen off the bus.',
        severity: 'critical',
        meaning: 'GPU has fallen off the bus',
      },
    }),
    alert('hot', 'gpu-node-001', 5, 'fp-hot', 15 * 60 + 50, { severity: 'warning', category: 'thermal' }),
    alert('xid119-alert', 'gpu-node-002', 3, 'fp-119', 17 * 60 + 30),
    alert('lost', 'gpu-node-002', 3, 'fp-79', 18 * 60, { incident: 'fp-119', category: 'fallen_off_bus' }),
    notification('hot-chat', 16 * 60 + 20, ['fp-hot'], { receiver: 'gpu-chat', channel: 'slack', reason: 'first' }),
    notification('page-119-1', 17 * 60 + 31, ['fp-119'], { outcome: 'failed', error: 'HTTP 503 from PagerDuty', retry_in_ms: 2_000, notification_id: 'n-119' }),
    notification('page-119-2', 17 * 60 + 34, ['fp-119'], { attempt: 2, notification_id: 'n-119' }),
    notification('page-79', 18 * 60 + 2, ['fp-79'], { notification_id: 'n-79' }),
    notification('chat-79', 18 * 60 + 30, ['fp-79'], { receiver: 'gpu-chat', channel: 'slack', reason: 'first', notification_id: 'n-chat' }),
    notification('mail-79', 18 * 60 + 31, ['fp-79'], { receiver: 'ops-mail', channel: 'email', reason: 'first', outcome: 'suppressed', attempt: 0 }),
    newEnvelope({
      type: 'acknowledgement',
      id: 'ack',
      host: 'pagerduty',
      source: 'intake',
      ts: at(21 * 60),
      data: {
        pager: 'pagerduty',
        action: 'acknowledged',
        fingerprint: 'fp-119',
        by: 'Ana On-Call',
        pager_incident: 'PGR0VU2',
        pager_event: 'evt-1',
        title: 'Xid 119 on gpu-node-002',
      },
    }),
  ];
}

const TOPIC: Readonly<Record<string, string>> = {
  'gpu.sample': TOPICS.gpuSamples,
  'kernel.event': TOPICS.kernelEvents,
  alert: TOPICS.alerts,
  notification: TOPICS.notifications,
  acknowledgement: TOPICS.notifications,
};

describe("an incident's exported HTML, as a person opens it in Chromium", () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-incident-html-'));
  const file = join(dir, 'incident.html');
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    const bus = new MemoryBus({ dataDir: join(dir, 'log') });
    const all = night();
    for (const topic of new Set(Object.values(TOPIC))) await bus.publish(topic, all.filter((e) => TOPIC[e.type] === topic).map(envelopeMessage));
    await bus.close();
    const result = await runCli(
      ['timeline', '--data-dir', join(dir, 'log'), '--from', at(0), '--to', at(3_600), '--incident', 'fp-79', '--format', 'html', '--out', file],
      { env: cleanEnv() },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    browser = await Browser.launch(1280, 1000);
    page = await browser.newPage(1280, 1000);
    await page.goto(`file://${file}`);
    await page.waitFor('document.readyState === "complete" && document.querySelector("figure")', 'the exported page');
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("charts the incident's own GPU (not a healthy one, not the other incident's), four metrics, each against its band", async () => {
    const charted = await page.evaluate<string[]>('[...document.querySelectorAll("figure")].map((f) => f.dataset.host + "/" + f.dataset.gpu)');
    expect(charted).toEqual(['gpu-node-002/3']);
    const series = await page.evaluate<string[]>(
      '[...new Set([...document.querySelectorAll("polyline.series")].map((p) => p.dataset.host + "/" + p.dataset.gpu + " " + p.dataset.metric))]',
    );
    expect(series).toEqual(['gpu-node-002/3 temp_c', 'gpu-node-002/3 power_w', 'gpu-node-002/3 util_pct', 'gpu-node-002/3 mem_temp_c']);
    expect(await page.evaluate<number>('document.querySelectorAll("rect.band").length')).toBe(4);
    // the chart is drawn at a size a person can read, inside the page
    const box = await page.evaluate<{ width: number; height: number }>(
      '(() => { const r = document.querySelector("figure svg").getBoundingClientRect(); return { width: r.width, height: r.height }; })()',
    );
    expect(box.width).toBeGreaterThan(800);
    expect(box.height).toBeGreaterThan(350);
    const lost = await page.evaluate<string>('document.querySelector("text.lost")?.textContent ?? ""');
    expect(lost).toMatch(/^no samples after 02:18 UTC; its host reported until 02:4\d$/);
    // its kernel events, alerts, pages (one failed) and the acknowledgement are marked on it
    const marks = await page.evaluate<string[]>('[...document.querySelectorAll("line.marker")].map((l) => l.dataset.source).sort()');
    expect(marks).toEqual(['acknowledgement', 'alert', 'alert', 'failed', 'kernel', 'kernel', 'page', 'page', 'page']);
  });

  it('lists every attempt to tell someone: the failed page and its retry, the chat, the message held back; the ack; and how long each step took', async () => {
    const rows = await page.evaluate<string[][]>(
      '[...document.querySelectorAll("table.notifications tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent))',
    );
    expect(rows.map((r) => [r[1], r[2], r[3], r[5], r[6], r[7]])).toEqual([
      ['oncall-pager', 'pagerduty', 'fp-119', 'failed', '1', 'in 2 s'],
      ['oncall-pager', 'pagerduty', 'fp-119', 'sent', '2', ''],
      ['oncall-pager', 'pagerduty', 'fp-79', 'sent', '1', ''],
      ['gpu-chat', 'slack', 'fp-79', 'sent', '1', ''],
      ['ops-mail', 'email', 'fp-79', 'suppressed', '0', ''],
    ]);
    expect(rows[0]?.[8]).toBe('HTTP 503 from PagerDuty');
    const acks = await page.evaluate<string[][]>(
      '[...document.querySelectorAll("table.acknowledgements tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent))',
    );
    expect(acks.map((r) => [r[1], r[2], r[3], r[4]])).toEqual([['pagerduty', 'acknowledged', 'Ana On-Call', 'fp-119']]);
    const durations = await page.evaluate<string[][]>(
      '[...document.querySelectorAll("table.durations tr")].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])',
    );
    expect(durations).toEqual([
      ['Time to detect', '30 s'],
      ['Time to notify', '4 s'],
      ['Time to acknowledge', '3 min 30 s'],
      ['Time to resolve', expect.stringMatching(/^not measured/) as unknown as string],
    ]);
  });

  it('prints: a PDF of its pages, the chart kept whole on one', async () => {
    await page.send('Emulation.setEmulatedMedia', { media: 'print' });
    expect(await page.evaluate<string>('getComputedStyle(document.querySelector("figure")).breakInside')).toBe('avoid');
    await page.send('Emulation.setEmulatedMedia', { media: '' });
    const { data } = (await page.send('Page.printToPDF', { printBackground: true, preferCSSPageSize: true }, 60_000)) as { data: string };
    const pdf = Buffer.from(data, 'base64');
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.length).toBeGreaterThan(10_000);
    // A screenshot for the eye (kept beside the export while the test runs; GPUALERT_KEEP_SCREENSHOT=DIR keeps a copy)
    const shot = join(dir, 'incident.png');
    await page.screenshot(shot);
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    const keep = process.env.GPUALERT_KEEP_SCREENSHOT;
    if (keep) writeFileSync(join(keep, 'timeline-incident.png'), readFileSync(shot));
  });
});
