import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { newEnvelope, type EnvelopeOf } from '@gpualert/schema';
import { MAX_BILL_ROW_COST, parseBill, readRollup, UsageReportBuilder, type UsageReport } from '@gpualert/usage';
import { describe, expect, it } from 'vitest';
import { cleanEnv, runCli } from './infra/run-cli.ts';

const HOUR = 3_600_000;
const FROM = Date.parse('2026-06-01T00:00:00Z');
const iso = (t: number) => new Date(t).toISOString();
const dir = mkdtempSync(join(tmpdir(), 'usage-hostile-'));
const file = (name: string, content: string | Buffer) => {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
};
const range = ['--from', iso(FROM), '--to', iso(FROM + 24 * HOUR)];

/** The attack's repro line (synthetic): one GPU-hour of gpu-node-07, all idle, with a fixed id. */
const ROLLUP =
  '{"id":"3b0c3a52-0000-4000-8000-000000000001","type":"usage.rollup","ts":"2026-06-01T01:00:00.000Z","host":"gpu-node-07","labels":{"provider":"aws","instance_type":"p5.48xlarge","gpu_model":"NVIDIA H100 80GB HBM3"},"source":"x","data":{"gpu":0,"hour":"2026-06-01T00:00:00.000Z","minutes":{"up":60,"busy":0,"idle":60,"broken":0,"maintenance":0},"busy_threshold_pct":2,"evidence":{"alerts":[],"provider_events":[]}}}';

function rollup(minutes: { busy: number; idle: number }, gpu = 0, hour = FROM): EnvelopeOf<'usage.rollup'> {
  return newEnvelope({
    type: 'usage.rollup',
    host: 'gpu-node-07',
    source: 't',
    ts: iso(hour),
    labels: { provider: 'aws' },
    data: {
      gpu,
      hour: iso(hour),
      minutes: { up: minutes.busy + minutes.idle, ...minutes, broken: 0, maintenance: 0 },
      busy_threshold_pct: 2,
      evidence: { alerts: [], provider_events: [] },
    },
  });
}

describe('a rollup read more than once (a redelivery, a recording concatenated twice)', () => {
  it('counts each GPU-hour once, the first copy read winning, and says how many copies it ignored', () => {
    const read = readRollup(ROLLUP);
    if (read.ok !== true) throw new Error('expected a rollup');
    const builder = new UsageReportBuilder({ from: FROM, to: FROM + 24 * HOUR, by: 'host' }, undefined, true);
    for (let i = 0; i < 3; i += 1) builder.add(read.rollup);
    // Another id for the same GPU and hour (another producer, a replay with other input): still that GPU-hour, still counted once.
    builder.add(rollup({ busy: 60, idle: 0 }));
    // The same GPU in the next hour and another GPU in the same hour are other GPU-hours.
    builder.add(rollup({ busy: 60, idle: 0 }, 0, FROM + HOUR));
    builder.add(rollup({ busy: 60, idle: 0 }, 1));
    const report = builder.build();
    expect([report.rollups, report.duplicates]).toEqual([3, 3]);
    expect(report.total.hours).toEqual({ up: 3, busy: 2, idle: 1, broken: 0, maintenance: 0 });
    expect(report.total.gpus).toBe(2);
    expect(builder.hostHours.get('gpu-node-07')!.hours.get(FROM)!.gpus).toBe(2);
  });

  it("gpualert report usage over the attack's file (one rollup three times): 1 GPU-hour, not 3", async () => {
    const input = file('dup.jsonl', `${ROLLUP}\n${ROLLUP}\n${ROLLUP}\n`);
    const result = await runCli(['report', 'usage', ...range, '--input', input, '--format', 'json', '--prices', 'rules/prices.yaml'], { env: cleanEnv() });
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as UsageReport;
    expect([report.rollups, report.total.hours.up, report.total.hours.idle]).toEqual([1, 1, 1]);
    expect(report.total.cost).toBeCloseTo(20.64 / 3, 2);
    expect(result.stderr).toMatch(/2 rollups of a GPU-hour already counted were ignored/);
  }, 60_000);
});

describe('a hostile bill', () => {
  it('a quoted field with text after its closing quote ("a"b) is one error naming its line, not a phantom instance', () => {
    const bill = parseBill(
      'csv',
      'instance_id,start,end,hours\n"a"b,2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,1\nok,2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,2\n',
      'junk.csv',
    );
    expect(bill.errors).toEqual([{ line: 2, message: expect.stringMatching(/text after the closing quote of a field/) as unknown as string }]);
    expect(bill.lines.map((l) => [l.instance, l.hours, l.ref])).toEqual([['ok', 2, 'junk.csv:3']]);
    // A doubled quote inside a quoted field is still a quote, and a quoted field may end the line or the file.
    expect(
      parseBill('csv', 'instance_id,start,end,hours\n"a""b",2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,"1"', 'q.csv').lines.map((l) => [l.instance, l.hours]),
    ).toEqual([['a"b', 1]]);
  });

  it('an amount no bill row can hold (1e308, past the bound) is refused with its line; the report never says Infinity', async () => {
    const bill = parseBill(
      'csv',
      `instance_id,start,end,hours,cost\nx,2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,1,1e308\ny,2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,1e308,1\nz,2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,1,${MAX_BILL_ROW_COST}\n`,
      'big.csv',
    );
    expect(bill.errors.map((e) => [e.line, e.message])).toEqual([
      [2, expect.stringMatching(/^cost: expected an amount of at most/)],
      [3, expect.stringMatching(/^hours: expected a number/)],
    ]);
    expect(bill.lines.map((l) => l.instance)).toEqual(['z']);
    const input = file('one.jsonl', `${ROLLUP}\n`);
    const hostile = file(
      'bill-hostile.csv',
      [
        'instance_id,start,end,hours,cost,what',
        'gpu-node-07,2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,1000,1e308,more hours than the period',
        'gpu-node-07,2026-06-01T00:00:00Z,2026-06-01T01:00:00Z,1,2,fine',
      ].join('\n'),
    );
    for (const format of ['md', 'csv', 'json']) {
      const result = await runCli(['report', 'usage', ...range, '--input', input, '--bill', hostile, '--bill-format', 'csv', '--format', format], {
        env: cleanEnv(),
      });
      expect(result.code, format).toBe(0);
      expect(result.stderr, format).toMatch(/bill-hostile\.csv:2: cost: expected an amount of at most/);
      // JSON writes Infinity as null: what the instance was billed is the one row kept.
      if (format === 'json')
        expect(
          (JSON.parse(result.stdout) as { reconciliation: { instances: { billed_hours: number; billed_cost: number }[] } }).reconciliation.instances.map(
            (i) => [i.billed_hours, i.billed_cost],
          ),
        ).toEqual([[1, 2]]);
      else expect(result.stdout, format).not.toMatch(/Infinity|e\+308/);
    }
  }, 60_000);

  it('a truncated gzip bill, or one that unpacks past the bound, is a usage error naming the file (exit 2), not GA-INTERNAL', async () => {
    const input = file('one.jsonl', `${ROLLUP}\n`);
    const truncated = file('bill-bad.csv.gz', Buffer.from('\x1f\x8b\x08\x00garbage', 'latin1'));
    const cut = file('cut.csv.gz', gzipSync('instance_id,start,end,hours\n'.repeat(1000)).subarray(0, 60));
    // Gzip members one after another unpack as one stream: 257 members of 1 MiB of zeros unpack to 257 MiB from a few hundred KB.
    const member = gzipSync(Buffer.alloc(1024 * 1024));
    const bomb = file('bomb.csv.gz', Buffer.concat(Array.from({ length: 257 }, () => member)));
    for (const [bill, reason] of [
      [truncated, /not a complete gzip file/],
      [cut, /not a complete gzip file/],
      [bomb, /unpacks to more than 268435456 bytes/],
    ] as const) {
      const result = await runCli(['report', 'usage', ...range, '--input', input, '--bill', bill, '--bill-format', 'aws-cur'], { env: cleanEnv() });
      expect(result.code, bill).toBe(2);
      expect(result.stderr, bill).toMatch(new RegExp(`^error\\[GA-CLI-USAGE\\]: gpualert report usage: ${bill.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: `, 'm'));
      expect(result.stderr, bill).toMatch(reason);
    }
  }, 60_000);
});
