import { newEnvelope, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { render } from './formats.ts';
import { chartedGpus } from './gpu-chart.ts';
import { incidentRange, resolveIncident } from './incident-scope.ts';
import { buildTimeline } from './timeline.ts';

const T0 = Date.parse('2026-06-01T02:00:00Z');
const at = (s: number) => new Date(T0 + s * 1_000).toISOString();

function alert(id: string, host: string, gpu: number, fingerprint: string, ts: number, extra: Partial<EnvelopeOf<'alert'>['data']> = {}): Envelope {
  return newEnvelope({
    type: 'alert',
    id,
    host,
    source: 't',
    ts: at(ts),
    data: {
      fingerprint,
      status: 'firing',
      severity: 'critical',
      category: 'xid',
      rule: 'kernel-event',
      gpu: { index: gpu },
      summary: `${id} on ${host} GPU ${gpu}`,
      starts_at: at(ts),
      evidence: [],
      ...extra,
    },
  });
}

/**
 * Two incidents at once, as in the demo: GPU 3 of gpu-node-002 lost (Xid 119, then 79, its alerts one
 * incident) and GPU 5 of gpu-node-001 hot (another). Who was told about the first: a page that
 * failed once and was retried, a chat message; PagerDuty's acknowledgement; the resolve.
 */
function story(): Envelope[] {
  const samples = ['gpu-node-001', 'gpu-node-002'].flatMap((host) =>
    Array.from({ length: 50 }, (_, m) =>
      newEnvelope({
        type: 'gpu.sample',
        id: `${host}-${m}`,
        host,
        source: 't',
        ts: at(m * 60),
        data: {
          gpus: Array.from(
            { length: 8 },
            (_, gpu) => ({ index: gpu, temp_c: host === 'gpu-node-001' && gpu === 5 ? 60 + m : 60, power_w: 600, util_pct: 95, mem_temp_c: 64 }) as never,
          )
            // GPU 3 of gpu-node-002 is gone from 02:18 while its host goes on reporting
            .filter((g) => !(host === 'gpu-node-002' && (g as { index: number }).index === 3 && m >= 18)),
        },
      }),
    ),
  );
  const notification = (id: string, ts: number, fingerprints: string[], data: Partial<EnvelopeOf<'notification'>['data']>): Envelope =>
    newEnvelope({
      type: 'notification',
      id,
      host: 'gpu-node-002',
      source: 't',
      ts: at(ts),
      data: { receiver: 'pager', channel: 'pagerduty', fingerprints, reason: 'page', outcome: 'sent', attempt: 1, ...data },
    });
  return [
    ...samples,
    newEnvelope({
      type: 'host.inventory',
      id: 'inv',
      host: 'gpu-node-002',
      source: 't',
      ts: at(0),
      data: {
        gpu_model: 'H100',
        gpu_count: 8,
        driver_version: '550',
        cuda_version: '12.4',
        gpus: [{ index: 3, uuid: 'GPU-3', pci_bus: '0000:4b:00', name: 'H100' }],
      },
    }),
    // names only its PCI address: the inventory says it is GPU 3
    newEnvelope({
      type: 'kernel.event',
      id: 'xid119',
      host: 'gpu-node-002',
      source: 't',
      ts: at(17 * 60),
      data: { kind: 'xid', xid: 119, pci_bus: '0000:4b:00', message: 'NVRM: Xid (PCI:0000:4b:00): 119', severity: 'critical', meaning: 'GSP RPC Timeout' },
    }),
    newEnvelope({
      type: 'kernel.event',
      id: 'xid13-other-gpu',
      host: 'gpu-node-002',
      source: 't',
      ts: at(5 * 60),
      data: { kind: 'xid', xid: 13, gpu: 6, message: 'NVRM: Xid 13', severity: 'warning' },
    }),
    alert('root', 'gpu-node-002', 3, 'fp-root', 17 * 60 + 30),
    alert('member', 'gpu-node-002', 3, 'fp-79', 18 * 60, { incident: 'fp-root', category: 'fallen_off_bus' }),
    alert('hot', 'gpu-node-001', 5, 'fp-hot', 15 * 60, { severity: 'warning', category: 'thermal' }),
    notification('page-1', 17 * 60 + 31, ['fp-root'], { outcome: 'failed', error: 'HTTP 503', retry_in_ms: 2_000, notification_id: 'n-root' }),
    notification('page-2', 17 * 60 + 35, ['fp-root'], { attempt: 2, notification_id: 'n-root' }),
    notification('chat', 18 * 60 + 30, ['fp-79'], { receiver: 'chat', channel: 'slack', reason: 'first', notification_id: 'n-chat' }),
    notification('other', 15 * 60 + 5, ['fp-hot'], { receiver: 'chat', channel: 'slack', reason: 'first' }),
    newEnvelope({
      type: 'acknowledgement',
      id: 'ack',
      host: 'pagerduty',
      source: 't',
      ts: at(20 * 60 + 30),
      data: { pager: 'pagerduty', action: 'acknowledged', fingerprint: 'fp-root', by: 'Ana On-Call', pager_incident: 'PGR0VU2', pager_event: 'e1' },
    }),
    alert('root-resolved', 'gpu-node-002', 3, 'fp-root', 40 * 60, { status: 'resolved', starts_at: at(17 * 60 + 30), ends_at: at(40 * 60) }),
    alert('member-resolved', 'gpu-node-002', 3, 'fp-79', 39 * 60, { status: 'resolved', incident: 'fp-root', starts_at: at(18 * 60), ends_at: at(39 * 60) }),
  ];
}

function exported(id: string) {
  const all = story();
  const scope = resolveIncident(
    all.filter((e): e is EnvelopeOf<'alert'> => e.type === 'alert'),
    id,
  );
  if (!scope) throw new Error('no incident');
  const range = incidentRange(scope);
  return buildTimeline(
    all,
    { ...range, incident: scope, recordsTo: range.to },
    scope.alerts.find((a) => a.data.fingerprint === scope.root),
  );
}

describe("an incident's post-mortem export", () => {
  it('is the incident named by any of its alerts: its GPU, its own signals, every attempt to tell someone, the ack, not the other incident', () => {
    const t = exported('fp-79');
    expect(t.incident).toMatchObject({ fingerprint: 'fp-root', fingerprints: ['fp-79', 'fp-root'], gpus: [{ host: 'gpu-node-002', gpu: 3 }] });
    expect(t.entries.map((e) => e.id)).not.toContain('hot');
    expect(t.entries.map((e) => e.id)).not.toContain('xid13-other-gpu');
    expect(t.entries.find((e) => e.id === 'xid119')).toMatchObject({ gpu: 3 });
    expect(t.notifications.map((n) => [n.id, n.receiver, n.outcome, n.attempt])).toEqual([
      ['page-1', 'pager', 'failed', 1],
      ['page-2', 'pager', 'sent', 2],
      ['chat', 'chat', 'sent', 1],
    ]);
    expect(t.acknowledgements.map((a) => [a.by, a.action])).toEqual([['Ana On-Call', 'acknowledged']]);
    expect(new Set(t.metrics.map((m) => `${m.host}/${m.gpu}`))).toEqual(new Set(['gpu-node-002/3']));
  });

  it('says how long it took to detect, notify, acknowledge and resolve, from the first signal, the first delivered page, the ack and the last resolve', () => {
    const p = exported('fp-root').postmortem;
    expect(p?.firstSignal?.ts).toBe(at(17 * 60));
    expect(p?.toDetect).toEqual({ ms: 30_000 });
    expect(p?.toNotify).toEqual({ ms: 5_000 }); // the retried attempt, not the failed one
    expect(p?.toAcknowledge).toEqual({ ms: 3 * 60_000 });
    expect(p?.toResolve).toEqual({ ms: (40 * 60 - (17 * 60 + 30)) * 1_000 });
    expect(p?.attempts).toEqual({ sent: 2, failed: 1, suppressed: 0, retried: 1 });
  });

  it("finds a drift's first signal where the GPU left its own band, before the alert", () => {
    const p = exported('fp-hot').postmortem;
    // 60 + m °C per minute: the band from 02:00–02:05 is 60–64.5 ± at least 2; 02:07 at 67 is out
    const temp = p?.bands.find((b) => b.metric === 'temp_c');
    expect(temp).toMatchObject({ host: 'gpu-node-001', gpu: 5, k: 3 });
    expect(p?.firstSignal?.what).toMatch(/gpu-node-001 GPU 5: temperature .* left its band/);
    expect(Date.parse(p?.firstSignal?.ts ?? '')).toBeLessThan(T0 + 15 * 60_000);
  });

  it('says a time-to figure is not measured when the notifier dated its records by another clock (a replayed recording)', () => {
    const all = story().map((e) => (e.type === 'notification' ? { ...e, ts: new Date(Date.parse(e.ts) + 183 * 86_400_000).toISOString() } : e));
    const scope = resolveIncident(
      all.filter((e): e is EnvelopeOf<'alert'> => e.type === 'alert'),
      'fp-root',
    )!;
    const range = incidentRange(scope);
    const t = buildTimeline(all, { ...range, incident: scope, recordsTo: range.from + 200 * 86_400_000 }, scope.alerts[0]);
    expect(t.notifications).toHaveLength(3);
    expect(t.postmortem?.toNotify).toEqual({ notMeasured: expect.stringMatching(/two clocks/) as unknown as string });
  });

  it('charts the incident GPU, says it stopped reporting while its host went on, and lists every attempt in HTML and Markdown', () => {
    const t = exported('fp-root');
    expect(chartedGpus(t)).toEqual([{ host: 'gpu-node-002', gpu: 3 }]);
    const html = render(t, 'html');
    expect(html).toMatch(/no samples after 02:18 UTC; its host reported until 02:4/);
    expect([...html.matchAll(/class="series" data-metric="([a-z_]+)" data-host="gpu-node-002" data-gpu="3"/g)].map((m) => m[1])).toEqual([
      'temp_c',
      'power_w',
      'util_pct',
      'mem_temp_c',
    ]);
    expect(html.match(/class="marker" data-source="page"/g)).toHaveLength(2);
    expect(html.match(/class="marker" data-source="failed"/g)).toHaveLength(1);
    expect(html.match(/class="marker" data-source="acknowledgement"/g)).toHaveLength(1);
    expect(html).toMatch(/@media print/);
    expect(html).not.toMatch(/<script|src=|href="http/);
    const md = render(t, 'md');
    expect(md).toMatch(/\| Time to notify \| 5 s \|/);
    expect(md).toMatch(/\| 2026-06-01 02:17:31.000 \| pager \| pagerduty \| fp-root \| page \| failed \| 1 \| in 2 s \| HTTP 503 \|/);
  });
});
