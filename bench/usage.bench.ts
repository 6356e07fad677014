import { createReadStream, createWriteStream, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { newEnvelope, stableId, type GpuMetrics } from '@gpualert/schema';
import { parseBill, priceLookup, readRollup, reconcile, renderUsage, UsageAccumulator, UsageReportBuilder } from '@gpualert/usage';
import { format } from './harness.ts';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-06-01T00:00:00Z');
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

/**
 * Issue 16's scale: a month of a 1,000-GPU fleet (125 hosts × 8 GPUs × 720 hours = 720,000
 * GPU-hour rollups) written as a JSONL file, then `report usage`'s whole path over it (stream,
 * parse, group, price, reconcile a CUR bill of 90,000 instance-hours, render). And the
 * accumulator's memory over a day of raw samples: flat, whatever the number of samples.
 * GPUALERT_BENCH_USAGE_HOURS shortens the month; NODE_OPTIONS=--expose-gc makes the heap figures
 * steady (a collection before each reading).
 */
export async function benchUsage(): Promise<void> {
  const hours = Number(process.env.GPUALERT_BENCH_USAGE_HOURS ?? 720);
  const hosts = 125;
  console.log(`\n## Usage: a report over ${format(hosts * 8 * hours)} GPU-hour rollups (${hosts} hosts × 8 GPUs × ${hours} h)`);
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-bench-usage-'));
  try {
    const file = join(dir, 'rollups.jsonl');
    const written = performance.now();
    await writeRollups(file, hosts, hours);
    console.log(`${'rollups written'.padEnd(58)} ${mib(statSync(file).size).padStart(12)} in ${format((performance.now() - written) / 1000)} s`);
    const billFile = join(dir, 'cur.csv');
    writeFileSync(billFile, curBill(hosts, hours));
    const prices = priceLookup({ currency: 'USD', default_term: 'on_demand', prices: [{ provider: 'aws', instance_type: 'p5.48xlarge', on_demand: 6.88 }] });

    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    let heapPeak = heapBefore;
    const started = performance.now();
    const builder = new UsageReportBuilder({ from: T0, to: T0 + hours * HOUR, by: 'host' }, prices, true);
    let n = 0;
    for await (const line of createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity })) {
      const read = readRollup(line);
      if (read.ok === true) builder.add(read.rollup);
      if (++n % 100_000 === 0) heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    }
    const report = builder.build();
    const readSeconds = (performance.now() - started) / 1000;
    const rec = reconcile(parseBill('aws-cur', readFileText(billFile), billFile), builder.hostHours, { from: T0, to: T0 + hours * HOUR });
    const text = renderUsage(report, rec, 'html');
    const seconds = (performance.now() - started) / 1000;
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    console.log(
      `${'report: read, parse and group every rollup'.padEnd(58)} ${format(readSeconds).padStart(12)} s  (${format(report.rollups / readSeconds)} rollups/s)`,
    );
    console.log(
      `${'report + reconcile the CUR bill + render HTML (limit 30 s)'.padEnd(58)} ${format(seconds).padStart(12)} s  (${format(rec.bill_lines)} bill rows, ${format(text.length)} characters of HTML)`,
    );
    console.log(
      `${'heap during the report, above what it started with'.padEnd(58)} ${mib(heapPeak - heapBefore).padStart(12)}  (peak sampled every 100,000 lines; the file is ${mib(statSync(file).size)})`,
    );
    if (report.rollups !== hosts * 8 * hours) throw new Error(`expected ${hosts * 8 * hours} rollups in the report, got ${report.rollups}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  await accumulatorMemory();
}

function readFileText(file: string): string {
  return readFileSync(file, 'utf8');
}

export async function writeRollups(file: string, hosts: number, hours: number): Promise<void> {
  const out = createWriteStream(file);
  const write = (text: string) => (out.write(text) ? Promise.resolve() : new Promise<void>((resolve) => out.once('drain', () => resolve())));
  for (let h = 0; h < hours; h += 1) {
    const hour = new Date(T0 + h * HOUR).toISOString();
    let chunk = '';
    for (let i = 0; i < hosts; i += 1) {
      const host = `gpu-node-${String(i).padStart(4, '0')}`;
      for (let gpu = 0; gpu < 8; gpu += 1) {
        const idle = (i * 7 + h + gpu) % 11 === 0 ? 60 : 0;
        const broken = (i + h) % 97 === 0 && gpu === 3 && idle === 0 ? 20 : 0;
        const minutes = { up: 60, busy: 60 - idle - broken, idle, broken, maintenance: 0 };
        chunk += `${JSON.stringify({
          id: stableId('usage.rollup', host, gpu, hour),
          type: 'usage.rollup',
          ts: hour,
          host,
          source: 'bench',
          labels: {
            provider: 'aws',
            cluster: `c${i % 4}`,
            gpu_model: 'NVIDIA H100 80GB HBM3',
            instance_type: 'p5.48xlarge',
            instance_id: `i-${(0x1000000 + i).toString(16)}`,
            job: `job-${(i + h) % 40}`,
            user: `user-${i % 9}`,
          },
          data: { gpu, hour, minutes, busy_threshold_pct: 2, evidence: { alerts: broken ? ['f00dfeed'] : [], provider_events: [] } },
        })}\n`;
      }
    }
    await write(chunk);
  }
  await new Promise<void>((resolve, reject) => out.end((error?: Error | null) => (error ? reject(error) : resolve())));
}

export function curBill(hosts: number, hours: number): string {
  const rows = [
    'line_item_line_item_type,line_item_usage_start_date,line_item_usage_end_date,line_item_product_code,line_item_usage_type,line_item_resource_id,line_item_usage_amount,line_item_unblended_cost',
  ];
  for (let i = 0; i < hosts; i += 1) {
    for (let h = 0; h < hours; h += 1) {
      const s = new Date(T0 + h * HOUR).toISOString();
      const e = new Date(T0 + (h + 1) * HOUR).toISOString();
      rows.push(`Usage,${s},${e},AmazonEC2,USE1-BoxUsage:p5.48xlarge,i-${(0x1000000 + i).toString(16)},1,55.04`);
    }
  }
  return `${rows.join('\n')}\n`;
}

/** The accumulator over raw samples (one per host per 10 s): its heap after 2 h and after 12 h of them. */
async function accumulatorMemory(): Promise<void> {
  const hosts = 125;
  console.log(`\n## Usage: the rollup accumulator over raw samples (${hosts} hosts × 8 GPUs, one sample per 10 s)`);
  const acc = new UsageAccumulator();
  const gpus = (util: number): GpuMetrics[] =>
    Array.from({ length: 8 }, (_, index) => ({
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
    }));
  const busy = gpus(90);
  const idle = gpus(0);
  let samples = 0;
  let rollups = 0;
  const heapAt: number[] = [];
  const started = performance.now();
  for (let t = T0; t < T0 + 12 * HOUR; t += 10_000) {
    const ts = new Date(t).toISOString();
    for (let i = 0; i < hosts; i += 1) {
      rollups += acc.push(
        newEnvelope({
          type: 'gpu.sample',
          id: `s${i}-${t}`,
          host: `gpu-node-${i}`,
          source: 'bench',
          ts,
          labels: { provider: 'aws' },
          data: { gpus: (i + t / 60_000) % 5 === 0 ? idle : busy },
        }),
      ).length;
      samples += 1;
    }
    if ((t - T0) % (2 * HOUR) === 0 && t > T0) {
      global.gc?.();
      heapAt.push(process.memoryUsage().heapUsed);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `${'samples through the accumulator'.padEnd(58)} ${format(samples / seconds).padStart(12)} samples/s  (${format(samples)} samples, ${format(rollups)} rollups)`,
  );
  console.log(`${'heap every 2 h of samples'.padEnd(58)} ${heapAt.map(mib).join(', ')}${global.gc ? '' : ' (NODE_OPTIONS=--expose-gc for steadier figures)'}`);
}
