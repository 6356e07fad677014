import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { createLogger } from '@gpualert/log';
import { newEnvelope, parseEnvelope, TOPICS, type EnvelopeOf, type GpuMetrics } from '@gpualert/schema';
import {
  instanceKey,
  parseBill,
  readRollup,
  reconcile,
  renderUsage,
  startUsageService,
  UsageAccumulator,
  USAGE_FORMATS,
  UsageReportBuilder,
  type UsageReport,
} from '@gpualert/usage';
import { describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const FIXTURES = resolve(import.meta.dirname, 'fixtures/billing');
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8');
const HOUR = 3_600_000;
const iso = (t: number) => new Date(t).toISOString();
const DAY10 = Date.parse('2026-06-10T00:00:00Z');

describe("bills in the providers' export layouts (test/fixtures/billing, synthetic rows)", () => {
  it('AWS CUR 2.0: instance-hours per instance, per-second partial hours, spot; EBS, tax and credits are not hours', () => {
    const bill = parseBill('aws-cur', fixture('aws-cur2.csv'), 'aws-cur2.csv');
    expect(bill.errors).toEqual([]);
    const hours = new Map<string, number>();
    for (const l of bill.lines) hours.set(l.instance, (hours.get(l.instance) ?? 0) + l.hours);
    expect([...hours]).toEqual([
      ['i-0a1b2c3d4e5f60718', 3.5],
      ['i-0feedfacecafe0001', 2],
    ]);
    expect(bill.lines.filter((l) => l.key === 'i-0a1b2c3d4e5f60718').reduce((s, l) => s + (l.cost ?? 0), 0)).toBeCloseTo(3 * 55.04 + 27.52, 6);
    expect(bill.other_rows).toBe(3);
    expect(bill.lines[0]!.ref).toBe('aws-cur2.csv:2');
  });

  it('GCP detailed export (BigQuery JSON): GPU-SKU rows per instance in GPU-seconds; core and storage SKUs are not GPU hours', () => {
    const bill = parseBill('gcp-billing', fixture('gcp-billing-detailed.jsonl'), 'gcp.jsonl');
    expect(bill.errors).toEqual([]);
    expect(bill.lines.map((l) => [l.key, iso(l.start), l.hours, l.gpu_seconds])).toEqual([
      ['a3-node-1', '2026-06-10T06:00:00.000Z', 1, 28_800],
      ['a3-node-1', '2026-06-10T07:00:00.000Z', 1, 28_800],
      ['a3-node-1', '2026-06-10T08:00:00.000Z', 1, 14_400],
    ]);
    expect(bill.other_rows).toBe(4);
  });

  it('Azure cost details: daily Virtual Machines rows in hours (1 Hour and 10 Hours units); the disk is not', () => {
    const bill = parseBill('azure-cost', fixture('azure-cost-details.csv'), 'azure.csv');
    expect(bill.errors).toEqual([]);
    expect(bill.lines.map((l) => [l.key, iso(l.start), l.hours, l.cost])).toEqual([
      ['gpu-nd-01', '2026-06-10T00:00:00.000Z', 24, 2359.68],
      ['gpu-nd-01', '2026-06-11T00:00:00.000Z', 18, 1769.76],
    ]);
    expect(bill.other_rows).toBe(1);
  });

  it('plain CSV; and a broken bill costs its bad rows, each named by line', () => {
    expect(parseBill('csv', fixture('plain.csv'), 'plain.csv').lines.map((l) => [l.instance, l.hours])).toEqual([
      ['bm-gpu-17', 24],
      ['bm-gpu-18', 12],
    ]);
    const bad = parseBill(
      'csv',
      'instance_id,start,end,hours\nok,2026-06-10T00:00:00Z,2026-06-10T01:00:00Z,1\nx,yesterday,2026-06-10T01:00:00Z,1\ny,2026-06-10T00:00:00Z,2026-06-10T01:00:00Z,lots\n"z,2026',
      'bad.csv',
    );
    expect(bad.lines).toHaveLength(1);
    expect(bad.errors.map((e) => e.line)).toEqual([3, 4, 5]);
    expect(bad.errors[2]!.message).toMatch(/never closed/);
    expect(parseBill('aws-cur', 'a,b\n1,2\n', 'x.csv').errors[0]!.message).toMatch(/header lacks line_item_resource_id/);
    expect(instanceKey('arn:aws:ec2:us-east-1:111122223333:instance/i-0ABC')).toBe('i-0abc');
  });

  it("reconciles Azure's daily rows against hourly rollups: seen, broken and unseen hours of each day", () => {
    // gpu-nd-01 (8 GPUs) seen every hour of 06/10 and hours 00–11 of 06/11; GPU 4 broken 06/10 03:00–05:00 (alert f1).
    const builder = new UsageReportBuilder({ from: DAY10, to: DAY10 + 2 * 24 * HOUR, by: 'host' }, undefined, true);
    for (let h = 0; h < 36; h += 1) {
      for (let gpu = 0; gpu < 8; gpu += 1) {
        const broken = gpu === 4 && h >= 3 && h < 5 ? 60 : 0;
        builder.add(
          newEnvelope({
            type: 'usage.rollup',
            host: 'gpu-nd-01',
            source: 't',
            ts: iso(DAY10 + h * HOUR),
            labels: { provider: 'azure' },
            data: {
              gpu,
              hour: iso(DAY10 + h * HOUR),
              minutes: { up: 60, busy: 60 - broken, idle: 0, broken, maintenance: 0 },
              busy_threshold_pct: 2,
              evidence: { alerts: broken ? ['f1'] : [], provider_events: [] },
            },
          }),
        );
      }
    }
    const rec = reconcile(parseBill('azure-cost', fixture('azure-cost-details.csv'), 'azure.csv'), builder.hostHours, {
      from: DAY10,
      to: DAY10 + 2 * 24 * HOUR,
    });
    expect(rec.instances).toHaveLength(1);
    const r = rec.instances[0]!;
    // Billed 24 + 18 = 42 h; seen 24 + 12 = 36 h; the second day billed 18 but seen 12: 6 h billed unseen.
    expect([r.billed_hours, r.seen_hours, r.billed_unseen_hours, r.billed_broken_hours, r.broken_alerts]).toEqual([42, 36, 6, 2, ['f1']]);
    expect(r.broken_cost).toBeCloseTo(2 * 98.32, 2);
    expect(r.bill_rows).toEqual(['azure.csv:2']);
  });
});

describe('hostile and odd input', () => {
  it('a CSV report defuses spreadsheet formulas, and hosts named like Object members are only names', () => {
    const builder = new UsageReportBuilder({ from: DAY10, to: DAY10 + HOUR, by: 'job' });
    for (const [host, job] of [
      ['__proto__', '=HYPERLINK("http://x")'],
      ['constructor', 'toString'],
    ] as const) {
      const line = JSON.stringify(
        newEnvelope({
          type: 'usage.rollup',
          host,
          source: 't',
          ts: iso(DAY10),
          labels: { job },
          data: {
            gpu: 0,
            hour: iso(DAY10),
            minutes: { up: 60, busy: 0, idle: 60, broken: 0, maintenance: 0 },
            busy_threshold_pct: 2,
            evidence: { alerts: [], provider_events: [] },
          },
        }),
      );
      const read = readRollup(line);
      if (read.ok !== true) throw new Error('expected a rollup');
      builder.add(read.rollup);
    }
    const report = builder.build();
    expect(report.groups.map((g) => g.key).sort()).toEqual(['=HYPERLINK("http://x")', 'toString']);
    expect(report.top_idle_hosts.map((t) => t.key).sort()).toEqual(['__proto__', 'constructor']);
    const csv = renderUsage(report, undefined, 'csv');
    expect(csv).toContain('"\'=HYPERLINK(""http://x"")"');
    expect(csv).not.toMatch(/^=|,=/m);
    const html = renderUsage(report, undefined, 'html');
    expect(html).not.toContain('<script');
  });

  it('a bill of 200,000 rows of seen and unseen machines, hostile in every field, renders in every format; Markdown shows what it says and obeys none of it', () => {
    // Hosts and alerts named like attacks on a Markdown renderer: HTML, a link, an image, table pipes, an entity, emphasis.
    const hostile = ['<img src=x onerror=alert(1)>', '[x](javascript:alert(1))', 'a|b', '&#60;script&#62;', '![i](http://e/x.png)', '*bold*_u_`c`'];
    const builder = new UsageReportBuilder({ from: DAY10, to: DAY10 + 24 * HOUR, by: 'host' }, undefined, true);
    for (const [n, host] of hostile.entries()) {
      const read = readRollup(
        JSON.stringify(
          newEnvelope({
            type: 'usage.rollup',
            host,
            source: 't',
            ts: iso(DAY10),
            labels: { job: `<b>job</b>|${n}` },
            data: {
              gpu: 0,
              hour: iso(DAY10),
              minutes: { up: 60, busy: 0, idle: 30, broken: 30, maintenance: 0 },
              busy_threshold_pct: 2,
              evidence: { alerts: [`<script>${n}</script>`], provider_events: [] },
            },
          }),
        ),
      );
      if (read.ok !== true) throw new Error(`rollup of ${host}: ${read.ok === false ? read.reason : 'other'}`);
      builder.add(read.rollup);
    }
    // The bill names the instances in a CSV; a field with a comma, a quote or a newline is quoted.
    const q = (v: string) => `"${v.replace(/"/g, '""')}"`;
    const rows: string[] = [];
    for (let i = 0; i < 200_000; i += 1) {
      const seen = i % 2 === 0;
      const instance = seen ? hostile[(i / 2) % hostile.length]! : `i-${i}<i>`;
      rows.push(`${q(instance)},2026-06-10T00:00:00Z,2026-06-10T01:00:00Z,1,2,${q(`<a href=x>${i}</a>`)}`);
    }
    const bill = parseBill('csv', `instance_id,start,end,hours,cost,what\n${rows.join('\n')}\n`, 'big|<b>.csv');
    expect([bill.lines.length, bill.error_count]).toEqual([200_000, 0]);
    const report = builder.build();
    const rec = reconcile(bill, builder.hostHours, { from: DAY10, to: DAY10 + 24 * HOUR });
    expect([rec.instances.length, rec.orphans.length]).toEqual([hostile.length, 100_000]);
    expect(rec.instances.every((i) => i.billed_broken_hours > 0 && i.bill_rows.length > 0)).toBe(true);
    const out = Object.fromEntries(USAGE_FORMATS.map((f) => [f, renderUsage(report, rec, f)]));
    expect(JSON.parse(out.json!).reconciliation.orphans).toHaveLength(100_000);
    expect(out.csv!.split('\n').filter((l) => l.startsWith('orphan,'))).toHaveLength(100_000);
    expect(out.html!).not.toMatch(/<img|<script|<i>|<b>|<a /);
    const md = out.md!;
    expect(md.split('\n').filter((l) => /^\| i-\d+&lt;i&gt; \|/.test(l))).toHaveLength(100_000);
    // Nothing a renderer would obey: no tag, no link or image, no entity it would decode, no pipe that splits a cell.
    expect(md).not.toMatch(/<[a-z!/]/i);
    expect(md).not.toMatch(/[^\\]\]\(|[^\\]!\[/);
    expect(md).not.toMatch(/&#\d/);
    // Every row of a table has its header's cells: an unescaped pipe in a cell would add one.
    const wrong: string[] = [];
    let columns = 0;
    for (const line of md.split('\n')) {
      if (!line.startsWith('|')) {
        columns = 0;
        continue;
      }
      const cells = line.replace(/\\\|/g, '').split('|').length;
      if (columns === 0) columns = cells;
      else if (cells !== columns) wrong.push(line);
    }
    expect(wrong).toEqual([]);
    // …and it still says what the bill says, as text.
    expect(md).toContain('&lt;img src=x onerror=alert\\(1\\)&gt;');
    expect(md).toContain('a\\|b');
    expect(md).toContain('alerts &lt;script&gt;0&lt;/script&gt;');
  });

  it("the HTML chart of a long range's 200,000 daily buckets draws, scaled to the largest", () => {
    const report = new UsageReportBuilder({ from: DAY10, to: DAY10 + 24 * HOUR, by: 'host' }).build();
    const zero = { up: 0, busy: 0, idle: 0, broken: 0, maintenance: 0 };
    const series = Array.from({ length: 200_000 }, (_, i) => ({ start: iso(DAY10 + i * 24 * HOUR), hours: i === 7 ? { ...zero, up: 640, idle: 640 } : zero }));
    const html = renderUsage({ ...report, bucket: 'day', series }, undefined, 'html');
    expect(html.match(/<rect class="bar"[^>]*>/g)).toHaveLength(1);
    expect(html).toContain('text-anchor="end" font-size="11">640</text>');
  });

  it('a rollup whose states do not add up to its up minutes is refused, with the reason', () => {
    const bad = {
      type: 'usage.rollup',
      id: 'x',
      ts: iso(DAY10),
      host: 'h',
      labels: {},
      source: 't',
      data: {
        gpu: 0,
        hour: iso(DAY10),
        minutes: { up: 10, busy: 60, idle: 0, broken: 0, maintenance: 0 },
        busy_threshold_pct: 2,
        evidence: { alerts: [], provider_events: [] },
      },
    };
    const read = readRollup(JSON.stringify(bad));
    expect(read.ok).toBe(false);
    expect(read.ok === false && read.reason).toMatch(/busy \+ idle \+ broken \+ maintenance/);
    expect(parseEnvelope(JSON.stringify(bad)).ok).toBe(false);
  });
});

function gpus(util: number, count = 2): GpuMetrics[] {
  return Array.from({ length: count }, (_, index) => ({
    index,
    uuid: null,
    pci_bus: null,
    name: 'NVIDIA A100-SXM4-80GB',
    util_pct: util,
    mem_util_pct: null,
    mem_used_mib: null,
    mem_total_mib: null,
    temp_c: null,
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
    processes: 0,
  }));
}
const sample = (host: string, t: number, util: number) =>
  newEnvelope({ type: 'gpu.sample', host, source: 't', ts: iso(t), labels: { cluster: 'c1' }, data: { gpus: gpus(util) } });

describe("the accumulator's edges", () => {
  it('holds open hours only: what it keeps does not grow with the samples, and a late sample is counted, not credited', () => {
    const acc = new UsageAccumulator();
    const out: EnvelopeOf<'usage.rollup'>[] = [];
    for (let t = DAY10; t < DAY10 + 48 * HOUR; t += 60_000) out.push(...acc.push(sample('h1', t, 50)));
    out.push(...acc.push(sample('h1', DAY10 + 5 * HOUR, 50))); // a day and more late
    expect(acc.stats.late).toBe(1);
    // 47 hours closed (the 48th waits for its grace period), 2 GPUs each, 60 busy minutes apiece.
    expect(out).toHaveLength(47 * 2);
    expect(out.every((r) => r.data.minutes.busy === 60 && r.data.minutes.up === 60)).toBe(true);
    expect(acc.hostCount).toBe(1);
  });

  it('on the wall clock, a host that went silent has its hours closed; one whose samples still come is left to them', () => {
    const acc = new UsageAccumulator();
    const wall = DAY10 + 7 * 24 * HOUR; // received a week later: a backlog
    for (let t = DAY10; t < DAY10 + HOUR; t += 60_000) {
      acc.push(sample('silent', t, 50), wall);
      acc.push(sample('backlog', t, 50), wall + 20 * 60_000); // still arriving 20 min of wall time later
    }
    const before = acc.advance(wall + 5 * 60_000);
    expect(before).toEqual([]); // nothing heard-from is silent yet, within the grace period
    const later = acc.advance(wall + 25 * 60_000);
    // silent: quiet for 25 min of wall time, so its event time is 00:59 + 25 min, past 01:00 + 10 min grace
    expect(later.map((r) => [r.host, r.data.hour, r.data.minutes.up])).toEqual([
      ['silent', iso(DAY10), 60],
      ['silent', iso(DAY10), 60],
    ]);
  });

  it('a cancelled maintenance notice opens no window; a warning alert breaks nothing; an error alert does', () => {
    const acc = new UsageAccumulator();
    const notice = (status: 'scheduled' | 'cancelled', at: number) =>
      newEnvelope({
        type: 'provider.event',
        host: 'h1',
        source: 't',
        ts: iso(at),
        labels: {},
        data: {
          provider: 'gcp',
          event_id: 'm1',
          kind: 'maintenance',
          status,
          hosts: ['h1'],
          window_start: iso(DAY10 + HOUR),
          window_end: iso(DAY10 + 2 * HOUR),
          description: '',
          raw_id: 'r',
        },
      });
    const alert = (fp: string, severity: 'warning' | 'error', starts: number, ends: number) =>
      newEnvelope({
        type: 'alert',
        host: 'h1',
        source: 't',
        ts: iso(ends),
        labels: {},
        data: {
          fingerprint: fp,
          status: 'resolved',
          severity,
          category: 'thermal',
          rule: 'r',
          gpu: { index: 1 },
          summary: '',
          starts_at: iso(starts),
          ends_at: iso(ends),
          evidence: [],
        },
      });
    const rollups: EnvelopeOf<'usage.rollup'>[] = [];
    rollups.push(...acc.push(notice('scheduled', DAY10)), ...acc.push(notice('cancelled', DAY10 + 30 * 60_000)));
    for (let t = DAY10; t < DAY10 + 3 * HOUR; t += 60_000) rollups.push(...acc.push(sample('h1', t, 50)));
    rollups.push(...acc.push(alert('w', 'warning', DAY10, DAY10 + HOUR)), ...acc.push(alert('e', 'error', DAY10 + 2 * HOUR, DAY10 + 2 * HOUR + 15 * 60_000)));
    rollups.push(...acc.flush());
    const of = (gpu: number, h: number) => rollups.find((r) => r.data.gpu === gpu && r.data.hour === iso(DAY10 + h * HOUR))!.data;
    expect(of(0, 1).minutes.maintenance).toBe(0);
    expect(of(1, 0).minutes.broken).toBe(0);
    expect(of(1, 2).minutes).toMatchObject({ broken: 15, busy: 45 });
    expect(of(1, 2).evidence.alerts).toEqual(['e']);
    expect(of(0, 2).minutes.broken).toBe(0);
  });
});

describe('the usage service on the embedded bus, and the report from its log', () => {
  it('publishes rollups to gpualert.usage in the data directory, which `gpualert report usage --data-dir` reads', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gpualert-usage-bus-'));
    const bus = new MemoryBus({ dataDir });
    const service = await startUsageService({
      bus,
      log: createLogger({ name: 'usage', level: 'silent', format: 'json' }),
      clock: 'event',
      busyThresholdPct: 2,
    });
    try {
      const messages = [];
      // Two hosts, 3 hours: h1 busy, h2 idle; the third hour closes only after its grace period.
      for (let t = DAY10; t <= DAY10 + 3 * HOUR + 15 * 60_000; t += 60_000) {
        messages.push(envelopeMessage(sample('h1', t, 80)), envelopeMessage(sample('h2', t, 0)));
      }
      await bus.publish(TOPICS.gpuSamples, messages);
      await waitFor(async () => (await bus.read(TOPICS.usage)).length === 3 * 2 * 2, 'rollups of three hours of two hosts');
    } finally {
      await service.stop();
      await bus.close();
    }
    const result = await runCli(['report', 'usage', '--data-dir', dataDir, '--from', iso(DAY10), '--to', iso(DAY10 + 3 * HOUR), '--format', 'json'], {
      env: cleanEnv(),
    });
    expect(result.stderr).toBe('');
    const report = JSON.parse(result.stdout) as UsageReport;
    expect(report.groups.map((g) => [g.key, g.hours.busy, g.hours.idle])).toEqual([
      ['h1', 6, 0],
      ['h2', 0, 6],
    ]);
  }, 60_000);
});

describe('gpualert report usage from the real Kafka', () => {
  it("reads gpualert.usage by time under the deployment's topic prefix", async () => {
    const prefix = `${uniqueName('usage')}.`;
    const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    try {
      await bus.ensureTopics([TOPICS.usage, TOPICS.alerts]);
      const rollup = (host: string, h: number, idle: number) =>
        newEnvelope({
          type: 'usage.rollup',
          host,
          source: 't',
          ts: iso(DAY10 + h * HOUR),
          labels: { cluster: 'k' },
          data: {
            gpu: 0,
            hour: iso(DAY10 + h * HOUR),
            minutes: { up: 60, busy: 60 - idle, idle, broken: 0, maintenance: 0 },
            busy_threshold_pct: 2,
            evidence: { alerts: [], provider_events: [] },
          },
        });
      // Hours 0 and 1 in range; hour 5 is not.
      await bus.publish(TOPICS.usage, [rollup('k1', 0, 30), rollup('k2', 1, 60), rollup('k1', 5, 60)].map(envelopeMessage));
    } finally {
      await bus.close();
    }
    const result = await runCli(['report', 'usage', '--from', iso(DAY10), '--to', iso(DAY10 + 2 * HOUR), '--by', 'cluster', '--format', 'json'], {
      env: cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: prefix }),
    });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as UsageReport;
    expect([report.rollups, report.total.hours.idle, report.total.gpus]).toEqual([2, 1.5, 2]);
  }, 60_000);
});
