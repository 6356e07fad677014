import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newEnvelope, type Envelope, type EnvelopeOf, type GpuMetrics } from '@gpualert/schema';
import {
  IdleDigest,
  parseBill,
  priceLookup,
  PricesFile,
  reconcile,
  UsageAccumulator,
  UsageReportBuilder,
  type Reconciliation,
  type UsageReport,
} from '@gpualert/usage';
import { parse as parseYaml } from 'yaml';
import { beforeAll, describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from './infra/run-cli.ts';

/**
 * A synthetic month (June 2026) of four 8-GPU hosts sampled every minute, with idle stretches, a
 * GPU fault, a GPU fallen off the bus, a provider maintenance window, a host gone silent for a
 * day, and a bill. Every expected figure below is worked out by hand from this scenario's
 * definition (the comments show the arithmetic), not from the code under test.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const T0 = Date.parse('2026-06-01T00:00:00Z');
const DAYS = 30;
const at = (day: number, hour = 0, minute = 0) => T0 + (day - 1) * DAY + hour * HOUR + minute * MIN;
const iso = (t: number) => new Date(t).toISOString();

interface HostDef {
  readonly host: string;
  readonly labels: Record<string, string>;
  readonly instanceId: string;
  readonly provider: string;
  readonly instanceType: string;
  /** Sampled in [from, to). */
  readonly from: number;
  readonly to: number;
  readonly silent?: readonly [number, number];
  readonly idle?: readonly { gpus: readonly number[]; from: number; to: number }[];
  readonly lost?: { gpu: number; from: number; to: number };
  readonly job?: { job_name: string; job_user: string };
}

const HOSTS: readonly HostDef[] = [
  {
    host: 'gpu-a',
    labels: { cluster: 'train', provider: 'aws' },
    instanceId: 'i-0aaaaaaaaaaaaaaa1',
    provider: 'aws',
    instanceType: 'p5.48xlarge',
    from: at(1),
    to: at(DAYS + 1),
    idle: [{ gpus: [0, 1, 2, 3], from: at(3, 0), to: at(3, 12) }],
    job: { job_name: 'llm-pretrain', job_user: 'alice' },
  },
  {
    host: 'gpu-b',
    labels: { cluster: 'train', provider: 'aws', job: 'eval-sweep', user: 'bob' },
    instanceId: 'i-0bbbbbbbbbbbbbbb2',
    provider: 'aws',
    instanceType: 'p5.48xlarge',
    from: at(1),
    to: at(DAYS + 1),
    idle: [{ gpus: [0, 1, 2, 3, 4, 5, 6, 7], from: at(25), to: at(26) }],
    lost: { gpu: 2, from: at(20, 10), to: at(20, 12) },
  },
  {
    host: 'gpu-c',
    labels: { cluster: 'infer', provider: 'aws', pricing: 'spot' },
    instanceId: 'i-0ccccccccccccccc3',
    provider: 'aws',
    instanceType: 'p5.48xlarge',
    from: at(1),
    to: at(DAYS + 1),
    silent: [at(27), at(28)],
  },
  {
    host: 'gpu-d',
    labels: { cluster: 'infer', provider: 'gcp' },
    instanceId: 'gpu-d',
    provider: 'gcp',
    instanceType: 'a3-highgpu-8g',
    from: at(1),
    to: at(2),
  },
];

const XID_FP = 'a1b2c3d4e5f60001';
const LOST_FP = 'a1b2c3d4e5f60002';
const IDLE_FP = 'a1b2c3d4e5f60003';
const THERMAL_FP = 'a1b2c3d4e5f60004';
const MAINTENANCE_EVENT = 'aws-health-event-0001';

function gpu(index: number, util: number, job?: HostDef['job']): GpuMetrics {
  return {
    index,
    uuid: `GPU-${index}`,
    pci_bus: null,
    name: 'NVIDIA H100 80GB HBM3',
    util_pct: util,
    mem_util_pct: null,
    mem_used_mib: null,
    mem_total_mib: null,
    temp_c: 60,
    mem_temp_c: null,
    power_w: null,
    power_limit_w: null,
    sm_clock_mhz: null,
    mem_clock_mhz: null,
    fan_pct: null,
    pcie_gen: null,
    pcie_gen_max: null,
    pcie_width: null,
    pcie_width_max: null,
    ecc_sbe_volatile: null,
    ecc_dbe_volatile: null,
    ecc_sbe_aggregate: null,
    ecc_dbe_aggregate: null,
    remap_pending: null,
    remap_failure: null,
    throttle: null,
    xid_last: null,
    nvlink_errors: null,
    processes: 1,
    ...(job ? { job } : {}),
  };
}

function alert(
  host: string,
  fp: string,
  status: 'firing' | 'resolved',
  severity: 'warning' | 'error' | 'critical',
  category: EnvelopeOf<'alert'>['data']['category'],
  gpuIndex: number | undefined,
  starts: number,
  ends?: number,
): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    host,
    source: 'engine/test',
    ts: iso((ends ?? starts) + 30_000),
    labels: {},
    data: {
      fingerprint: fp,
      status,
      severity,
      category,
      rule: category,
      summary: `${category} on ${host}`,
      starts_at: iso(starts),
      evidence: [`ev-${fp}`],
      ...(gpuIndex !== undefined ? { gpu: { index: gpuIndex } } : {}),
      ...(ends !== undefined ? { ends_at: iso(ends) } : {}),
    },
  });
}

/** Everything the month's recording holds besides samples, each at the time the pipeline would publish it. */
function events(): Envelope[] {
  const out: Envelope[] = [];
  for (const h of HOSTS) {
    out.push(
      newEnvelope({
        type: 'host.inventory',
        host: h.host,
        source: 'inventory/test',
        ts: iso(h.from),
        labels: h.labels,
        data: {
          gpu_model: 'NVIDIA H100 80GB HBM3',
          gpu_count: 8,
          driver_version: '550.54.15',
          cuda_version: '12.4',
          provider: h.provider,
          instance_id: h.instanceId,
          instance_type: h.instanceType,
          gpus: [],
        },
      }),
    );
  }
  // gpu-a GPU 5: an Xid, critical, day 10 06:00–09:30 (published 30 s after each edge, as the engine would).
  out.push(alert('gpu-a', XID_FP, 'firing', 'critical', 'xid', 5, at(10, 6)));
  out.push(alert('gpu-a', XID_FP, 'resolved', 'critical', 'xid', 5, at(10, 6), at(10, 9, 30)));
  // gpu-a GPU 1: a warning (hot), day 5 01:00–03:00: a warning is not broken.
  out.push(alert('gpu-a', THERMAL_FP, 'firing', 'warning', 'thermal', 1, at(5, 1)));
  out.push(alert('gpu-a', THERMAL_FP, 'resolved', 'warning', 'thermal', 1, at(5, 1), at(5, 3)));
  // gpu-b GPU 2 fell off the bus day 20 10:00–12:00; the engine's alert is the evidence.
  out.push(alert('gpu-b', LOST_FP, 'firing', 'critical', 'fallen_off_bus', 2, at(20, 10, 0.5)));
  out.push(alert('gpu-b', LOST_FP, 'resolved', 'critical', 'fallen_off_bus', 2, at(20, 10, 0.5), at(20, 12)));
  // gpu-b idle all of day 25: the idle-cost rule fires (warning, not broken) after 4 h.
  out.push(alert('gpu-b', IDLE_FP, 'firing', 'warning', 'idle_cost', undefined, at(25, 4)));
  // gpu-b: provider maintenance, announced on day 14 for day 15 02:00–06:00, completed at 06:00.
  const notice = (status: 'scheduled' | 'completed', ts: number) =>
    newEnvelope({
      type: 'provider.event',
      host: 'gpu-b',
      source: 'intake/test',
      ts: iso(ts),
      labels: {},
      data: {
        provider: 'aws',
        event_id: MAINTENANCE_EVENT,
        kind: 'maintenance',
        status,
        hosts: ['gpu-b'],
        window_start: iso(at(15, 2)),
        window_end: iso(at(15, 6)),
        description: 'instance-reboot',
        raw_id: 'raw-1',
      },
    });
  out.push(notice('scheduled', at(14, 9)));
  out.push(notice('completed', at(15, 6)));
  return out.sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
}

/** The month in event time: one sample per host per minute, the events between them. */
function* recording(): Generator<Envelope> {
  const extra = events();
  let next = 0;
  for (let t = T0; t < at(DAYS + 1); t += MIN) {
    while (next < extra.length && Date.parse(extra[next]!.ts) <= t) yield extra[next++]!;
    for (const h of HOSTS) {
      if (t < h.from || t >= h.to) continue;
      if (h.silent && t >= h.silent[0] && t < h.silent[1]) continue;
      const gpus: GpuMetrics[] = [];
      for (let i = 0; i < 8; i += 1) {
        if (h.lost && i === h.lost.gpu && t >= h.lost.from && t < h.lost.to) continue;
        const idle = h.idle?.some((s) => s.gpus.includes(i) && t >= s.from && t < s.to);
        gpus.push(gpu(i, idle ? 0 : 93, h.job));
      }
      yield newEnvelope({ type: 'gpu.sample', host: h.host, source: 'collector-gpu/test', ts: iso(t), labels: h.labels, data: { gpus } });
    }
  }
  while (next < extra.length) yield extra[next++]!;
}

/** The bill: AWS CUR 2.0 rows, one per instance-hour of June, for a, b and c, and an instance gpualert never saw. */
function curBill(): string {
  const header =
    'identity_line_item_id,identity_time_interval,line_item_line_item_type,line_item_usage_start_date,line_item_usage_end_date,line_item_product_code,line_item_usage_type,line_item_operation,line_item_resource_id,line_item_usage_amount,line_item_unblended_rate,line_item_unblended_cost,product_instance_type,pricing_unit';
  const rows = [header];
  const instances = [
    ['i-0aaaaaaaaaaaaaaa1', 720],
    ['i-0bbbbbbbbbbbbbbb2', 720],
    ['i-0ccccccccccccccc3', 720],
    ['i-0ddddddddddddddd4', 100],
  ] as const;
  let id = 0;
  for (const [instance, hours] of instances) {
    for (let hr = 0; hr < hours; hr += 1) {
      const s = T0 + hr * HOUR;
      rows.push(
        `li-${++id},${iso(s)}/${iso(s + HOUR)},Usage,${iso(s)},${iso(s + HOUR)},AmazonEC2,USE1-BoxUsage:p5.48xlarge,RunInstances,${instance},1,55.04,55.04,p5.48xlarge,Hrs`,
      );
    }
  }
  // Storage on the same instance: billed, but not instance-hours.
  rows.push(
    `li-${++id},${iso(T0)}/${iso(T0 + HOUR)},Usage,${iso(T0)},${iso(T0 + HOUR)},AmazonEC2,USE1-EBS:VolumeUsage.gp3,CreateVolume-Gp3,vol-0123,0.5,0.08,0.04,,GB-Mo`,
  );
  return `${rows.join('\n')}\n`;
}

const PRICES = `currency: USD
prices:
  - provider: aws
    instance_type: p5.48xlarge
    on_demand: 10
    spot: 4
  - provider: gcp
    on_demand: 5
`;

// ---- The expected figures, by hand. ----
const H = 1 / 60; // one minute in hours
// The last sample before a silence stands for 1.5 of its host's intervals (docs/usage.md): 90 s, so half a minute past it.
const SPILL = 0.5 * H;
const GPU_HOURS_MONTH = 8 * 24 * DAYS; // 5,760
const expected = {
  'gpu-a': { up: GPU_HOURS_MONTH, idle: 4 * 12, broken: 3.5, maintenance: 0 }, // GPUs 0–3 idle 12 h; GPU 5 broken 06:00–09:30
  'gpu-b': { up: GPU_HOURS_MONTH, idle: 8 * 24, broken: 2, maintenance: 8 * 4 }, // all 8 idle on day 25; GPU 2 lost 2 h; 8 GPUs × 4 h window
  'gpu-c': { up: 8 * (24 * (DAYS - 1) + SPILL), idle: 0, broken: 0, maintenance: 0 }, // silent 24 h, less the spill
  'gpu-d': { up: 8 * (24 + SPILL), idle: 0, broken: 0, maintenance: 0 }, // day 1, and the spill into day 2
} as const;

describe('usage rollups, report and reconciliation over a synthetic month', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-usage-'));
  const rollupsFile = join(dir, 'rollups.jsonl');
  const billFile = join(dir, 'cur.csv');
  const pricesFile = join(dir, 'prices.yaml');
  const range = { from: T0, to: at(DAYS + 1) };
  let rollups: EnvelopeOf<'usage.rollup'>[] = [];
  let digests: EnvelopeOf<'alert'>[] = [];
  let report: UsageReport;
  let rec: Reconciliation;

  beforeAll(() => {
    const accumulator = new UsageAccumulator({ busyThresholdPct: 2 });
    const digest = new IdleDigest(priceLookup(PricesFile.parse(parseYaml(PRICES))));
    for (const envelope of recording()) {
      if (envelope.type === 'alert') digest.alert(envelope);
      const closed = accumulator.push(envelope);
      rollups.push(...closed);
      digests.push(...digest.rollups(closed));
    }
    const last = accumulator.flush();
    rollups.push(...last);
    digests.push(...digest.rollups(last));
    // The report's input: the rollups, and the alerts beside them (they explain the broken hours).
    const alerts = events().filter((e) => e.type === 'alert');
    writeFileSync(rollupsFile, [...rollups, ...alerts].map((r) => JSON.stringify(r)).join('\n') + '\n');
    writeFileSync(billFile, curBill());
    writeFileSync(pricesFile, PRICES);
    const builder = new UsageReportBuilder({ ...range, by: 'host' }, priceLookup(PricesFile.parse(parseYaml(PRICES))), true);
    for (const r of rollups) builder.add(r);
    report = builder.build();
    rec = reconcile(parseBill('aws-cur', curBill(), 'cur.csv'), builder.hostHours, range);
  }, 120_000);

  it('emits one rollup per GPU per hour seen, each partitioning its up minutes into the four states', () => {
    // a, b: 720 h × 8; c: 696 h + the spill hour × 8; d: 24 h + the spill hour × 8 (plus a's, b's and c's spill into July).
    const inJune = rollups.filter((r) => Date.parse(r.data.hour) < range.to);
    expect(inJune).toHaveLength(8 * (720 + 720 + 697 + 25));
    const ids = new Set(rollups.map((r) => r.id));
    expect(ids.size).toBe(rollups.length);
    for (const r of rollups) {
      const m = r.data.minutes;
      expect(m.busy + m.idle + m.broken + m.maintenance).toBeCloseTo(m.up, 2);
    }
    const xidHour = rollups.find((r) => r.host === 'gpu-a' && r.data.gpu === 5 && r.data.hour === iso(at(10, 9)))!;
    expect(xidHour.data.minutes).toEqual({ up: 60, busy: 30, idle: 0, broken: 30, maintenance: 0 });
    expect(xidHour.data.evidence.alerts).toEqual([XID_FP]);
    expect(xidHour.labels).toMatchObject({
      provider: 'aws',
      instance_type: 'p5.48xlarge',
      instance_id: 'i-0aaaaaaaaaaaaaaa1',
      cluster: 'train',
      job: 'llm-pretrain',
      user: 'alice',
      gpu_model: 'NVIDIA H100 80GB HBM3',
    });
    const window = rollups.find((r) => r.host === 'gpu-b' && r.data.gpu === 0 && r.data.hour === iso(at(15, 3)))!;
    expect(window.data.minutes.maintenance).toBe(60);
    expect(window.data.evidence.provider_events).toEqual([MAINTENANCE_EVENT]);
  });

  it('the report gives the hours and costs worked out by hand, per host', () => {
    for (const [host, e] of Object.entries(expected)) {
      const g = report.groups.find((x) => x.key === host)!;
      expect(g.gpus, host).toBe(8);
      expect(g.hours.up, host).toBeCloseTo(e.up, 2);
      expect(g.hours.idle, host).toBeCloseTo(e.idle, 2);
      expect(g.hours.broken, host).toBeCloseTo(e.broken, 2);
      expect(g.hours.maintenance, host).toBeCloseTo(e.maintenance, 2);
      expect(g.hours.busy, host).toBeCloseTo(e.up - e.idle - e.broken - e.maintenance, 2);
    }
    // a and b on demand at 10/GPU-h, c on spot at 4, d (gcp) at 5.
    expect(report.total.idle_cost).toBeCloseTo((48 + 192) * 10, 2);
    expect(report.total.broken_cost).toBeCloseTo((3.5 + 2) * 10, 2);
    expect(report.total.cost).toBeCloseTo(2 * GPU_HOURS_MONTH * 10 + expected['gpu-c'].up * 4 + expected['gpu-d'].up * 5, 1);
    expect(report.top_idle_hosts.map((t) => [t.key, t.idle_hours])).toEqual([
      ['gpu-b', 192],
      ['gpu-a', 48],
    ]);
    expect(report.top_idle_jobs.map((t) => [t.key, t.user, t.idle_hours])).toEqual([
      ['eval-sweep', 'bob', 192],
      ['llm-pretrain', 'alice', 48],
    ]);
  });

  it('the bill against what was seen: hours billed while broken and in maintenance with their evidence, the silent day, orphans and the unbilled', () => {
    const a = rec.instances.find((i) => i.host === 'gpu-a')!;
    expect([a.billed_hours, a.seen_hours, a.billed_broken_hours, a.billed_maintenance_hours]).toEqual([720, 720, 3.5, 0]);
    expect(a.broken_cost).toBeCloseTo(3.5 * 55.04, 2);
    expect(a.broken_alerts).toEqual([XID_FP]);
    expect(a.bill_rows).toHaveLength(4); // the rows of hours 06, 07, 08 and 09 of day 10
    const b = rec.instances.find((i) => i.host === 'gpu-b')!;
    expect([b.billed_hours, b.seen_hours, b.billed_broken_hours, b.billed_maintenance_hours]).toEqual([720, 720, 2, 4]);
    expect(b.broken_alerts).toEqual([LOST_FP]);
    expect(b.maintenance_events).toEqual([MAINTENANCE_EVENT]);
    const c = rec.instances.find((i) => i.host === 'gpu-c')!;
    expect(c.billed_hours).toBe(720);
    expect(c.seen_hours).toBeCloseTo(696 + SPILL, 3);
    expect(c.billed_unseen_hours).toBeCloseTo(24 - SPILL, 3);
    expect(rec.orphans).toEqual([expect.objectContaining({ instance: 'i-0ddddddddddddddd4', billed_hours: 100 })]);
    expect(rec.unbilled).toEqual([{ host: 'gpu-d', instance: 'gpu-d', seen_hours: Math.round((24 + SPILL) * 1000) / 1000 }]);
    expect(rec.other_rows).toBe(1);
  });

  it('gpualert report usage reads the rollups from a file, prices them and reconciles the CUR bill (json)', async () => {
    const result = await runCli(
      [
        'report',
        'usage',
        '--from',
        iso(range.from),
        '--to',
        iso(range.to),
        '--input',
        rollupsFile,
        '--prices',
        pricesFile,
        '--bill',
        billFile,
        '--bill-format',
        'aws-cur',
        '--format',
        'json',
        '--by',
        'cluster',
      ],
      { env: cleanEnv() },
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const out = JSON.parse(result.stdout) as UsageReport & { reconciliation: Reconciliation };
    const train = out.groups.find((g) => g.key === 'train')!;
    expect(train.gpus).toBe(16);
    expect(train.hours.idle).toBeCloseTo(240, 2);
    expect(train.hours.broken).toBeCloseTo(5.5, 2);
    expect(train.hours.maintenance).toBeCloseTo(32, 2);
    expect(out.reconciliation.instances.map((i) => [i.host, i.billed_broken_hours, i.billed_maintenance_hours])).toEqual([
      ['gpu-a', 3.5, 0],
      ['gpu-b', 2, 4],
      ['gpu-c', 0, 0],
    ]);
    // Each alert behind broken hours, with when it fired and resolved and the events behind it.
    expect(out.reconciliation.alerts.map((a) => [a.fingerprint, a.gpu, a.starts_at, a.ends_at, a.evidence])).toEqual([
      [XID_FP, 5, iso(at(10, 6)), iso(at(10, 9, 30)), [`ev-${XID_FP}`]],
      [LOST_FP, 2, iso(at(20, 10, 0.5)), iso(at(20, 12)), [`ev-${LOST_FP}`]],
    ]);
    const md = await runCli(
      ['report', 'usage', '--from', iso(range.from), '--to', iso(range.to), '--input', rollupsFile, '--bill', billFile, '--bill-format', 'aws-cur'],
      { env: cleanEnv() },
    );
    expect(md.stdout).toMatch(/\| gpu-b \| 8 \| 5760\.00 \| [\d.]+ \| 192\.00 \| 2\.00 \| 32\.00 \|/);
    expect(md.stdout).toContain(`alerts ${LOST_FP}`);
    expect(md.stdout).toContain(`- alert ${XID_FP}: critical xid on gpu-a GPU 5, ${iso(at(10, 6))} – ${iso(at(10, 9, 30))}: xid on gpu-a; events ev-${XID_FP}`);
    expect(md.stdout).toMatch(/\| i-0ddddddddddddddd4 \| 100\.00 \|/);
  }, 60_000);

  it('a bad line costs that line, named with file and line; bad prices stop with file:line: field', async () => {
    const mixed = join(dir, 'mixed.jsonl');
    const good = JSON.stringify(rollups.find((r) => r.host === 'gpu-d')!);
    writeFileSync(mixed, `${good}\n{"type":"usage.rollup","id":"x"}\nnot json\n`);
    const result = await runCli(['report', 'usage', '--from', iso(range.from), '--to', iso(range.to), '--input', mixed, '--format', 'json'], {
      env: cleanEnv(),
    });
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(new RegExp(`${mixed}:2: `));
    expect(result.stderr).toMatch(new RegExp(`${mixed}:3: not JSON`));
    expect((JSON.parse(result.stdout) as UsageReport).rollups).toBe(1);
    const badPrices = join(dir, 'bad-prices.yaml');
    writeFileSync(badPrices, 'currency: USD\nprices:\n  - provider: aws\n    on_demand: lots\n');
    const bad = await runCli(['report', 'usage', '--from', iso(range.from), '--to', iso(range.to), '--input', mixed, '--prices', badPrices], {
      env: cleanEnv(),
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(new RegExp(`${badPrices}:4: prices\\.0\\.on_demand: `));
  }, 60_000);

  it("a daily idle-cost digest, routed as an alert, for each day with idle GPUs, naming the idle-cost rule's alerts", () => {
    // Idle GPU-hours by day: day 3 has a's 48, day 25 b's 192; no other day has any.
    expect(digests.map((d) => [d.labels.day, d.data.value])).toEqual([
      ['2026-06-03', 48],
      ['2026-06-25', 192],
    ]);
    const day25 = digests[1]!;
    expect(day25.type).toBe('alert');
    expect(day25.data).toMatchObject({ status: 'firing', severity: 'warning', category: 'idle_cost', rule: 'idle-cost-digest', evidence: [IDLE_FP] });
    // Day 25: a, b and c were up all day (3 × 8 × 24 = 576 GPU-hours); b's 192 idle at 10/GPU-h.
    expect(day25.data.summary).toBe('Idle GPUs on 2026-06-25: 192.0 of 576.0 GPU-hours up were idle costing 1920.00 USD');
  });

  it('the HTML report opens in headless Chromium and shows hours by state per day as a chart', async () => {
    const file = join(dir, 'usage.html');
    const result = await runCli(
      [
        'report',
        'usage',
        '--from',
        iso(range.from),
        '--to',
        iso(range.to),
        '--input',
        rollupsFile,
        '--prices',
        pricesFile,
        '--bill',
        billFile,
        '--bill-format',
        'aws-cur',
        '--format',
        'html',
        '--out',
        file,
      ],
      { env: cleanEnv() },
    );
    expect(result.code).toBe(0);
    const page = readFileSync(file, 'utf8');
    expect(page).not.toMatch(/<script|src="http|href="http/);
    const which = spawnSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' });
    const chromium = which.stdout.trim();
    if (!chromium) throw new Error("Debian's chromium is not installed (npm test provisions it: apt-get install chromium)");
    const args = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--window-size=1100,1400'];
    const dom = spawnSync(chromium, [...args, '--dump-dom', `file://${file}`], { encoding: 'utf8', timeout: 60_000 });
    expect(dom.status).toBe(0);
    // 30 days of bars; the days with idle, broken and maintenance hours show those states.
    expect(new Set([...dom.stdout.matchAll(/<rect class="bar" data-state="busy" data-start="([^"]+)"/g)].map((m) => m[1])).size).toBe(30);
    expect([...dom.stdout.matchAll(/data-state="idle" data-start="([^"]+)"/g)].map((m) => m[1]!.slice(0, 10))).toEqual(['2026-06-03', '2026-06-25']);
    expect([...dom.stdout.matchAll(/data-state="maintenance" data-start="([^"]+)"/g)].map((m) => m[1]!.slice(0, 10))).toEqual(['2026-06-15']);
    expect([...dom.stdout.matchAll(/data-state="broken" data-start="([^"]+)"/g)].map((m) => m[1]!.slice(0, 10))).toEqual(['2026-06-10', '2026-06-20']);
    const shot = join(dir, 'usage.png');
    const screenshot = spawnSync(chromium, [...args, `--screenshot=${shot}`, `file://${file}`], { encoding: 'utf8', timeout: 60_000 });
    expect(screenshot.status).toBe(0);
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    if (process.env.GPUALERT_KEEP_SCREENSHOT) writeFileSync(process.env.GPUALERT_KEEP_SCREENSHOT, readFileSync(shot));
  }, 120_000);
});
