import { newEnvelope, type Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { chartedGpus, render } from './formats.ts';
import { buildTimeline } from './timeline.ts';

const T0 = Date.parse('2026-06-01T03:00:00Z');
const at = (minute: number) => new Date(T0 + minute * 60_000).toISOString();

/** The demo's story: gpu-node-000's GPUs healthy, GPU 5 of gpu-node-001 running hot (warning), GPU 3 of gpu-node-002 lost (Xid 79). */
function incident(): Envelope[] {
  const samples = [0, 1, 2].flatMap((h) =>
    Array.from({ length: 10 }, (_, m) =>
      newEnvelope({
        type: 'gpu.sample',
        id: `s${h}-${m}`,
        host: `gpu-node-00${h}`,
        source: 't',
        ts: at(m),
        data: {
          gpus: Array.from({ length: 8 }, (_, gpu) => ({ index: gpu, temp_c: h === 1 && gpu === 5 ? 70 + m * 2 : 60, power_w: 400, util_pct: 90 }) as never),
        },
      }),
    ),
  );
  return [
    ...samples,
    newEnvelope({
      type: 'kernel.event',
      id: 'k',
      host: 'gpu-node-002',
      source: 't',
      ts: at(8),
      data: { kind: 'xid', xid: 79, gpu: 3, message: 'fallen off the bus', severity: 'critical', meaning: 'GPU has fallen off the bus' },
    }),
    newEnvelope({
      type: 'alert',
      id: 'a',
      host: 'gpu-node-001',
      source: 't',
      ts: at(6),
      data: {
        fingerprint: 'feedf00d',
        status: 'firing',
        severity: 'warning',
        category: 'thermal',
        rule: 'temp-baseline',
        gpu: { index: 5 },
        summary: 'GPU 5 runs hot',
        starts_at: at(6),
        evidence: ['temp_c 84 above its band'],
      },
    }),
  ];
}

describe("the exported timeline's chart", () => {
  it('draws the GPUs the incident is about (the lost one first, then the hot one), never a healthy GPU first in the list', () => {
    const timeline = buildTimeline(incident(), { from: T0 - 60_000, to: T0 + 11 * 60_000 });
    // Without the choice, the first GPU with samples is gpu-node-000 GPU 0, three flat lines.
    expect(timeline.metrics[0]).toMatchObject({ host: 'gpu-node-000', gpu: 0 });
    expect(chartedGpus(timeline)).toEqual([
      { host: 'gpu-node-002', gpu: 3 },
      { host: 'gpu-node-001', gpu: 5 },
    ]);
    const html = render(timeline, 'html');
    const figures = [...html.matchAll(/<figure data-host="([^"]+)" data-gpu="(\d+)">/g)].map((m) => `${m[1]}/${m[2]}`);
    expect(figures).toEqual(['gpu-node-002/3', 'gpu-node-001/5']);
    // Each chart carries its own GPU's series and its own events only.
    const hot = html.slice(html.indexOf('data-host="gpu-node-001"'));
    expect(hot.match(/class="series"/g)?.length).toBeGreaterThanOrEqual(3);
    expect(hot.slice(0, hot.indexOf('</figure>'))).not.toMatch(/data-source="kernel"/);
  });

  it('a quiet range charts its first GPU, and a GPU with no sample in range says so instead of empty axes', () => {
    const quiet = buildTimeline(
      incident().filter((e) => e.type === 'gpu.sample'),
      { from: T0 - 60_000, to: T0 + 11 * 60_000 },
    );
    expect(chartedGpus(quiet)).toEqual([{ host: 'gpu-node-000', gpu: 0 }]);
    const lost = buildTimeline(
      incident().filter((e) => e.type !== 'gpu.sample' || e.host !== 'gpu-node-002'),
      { from: T0 - 60_000, to: T0 + 11 * 60_000 },
    );
    expect(render(lost, 'html')).toContain('no samples from this GPU in the range');
  });
});
