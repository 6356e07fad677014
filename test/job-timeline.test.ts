import { newEnvelope, type Envelope } from '@gpualert/schema';
import { buildTimeline, render } from '@gpualert/timeline';
import { describe, expect, it } from 'vitest';

const T0 = Date.parse('2026-06-01T02:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const gpu = (index: number, job?: string) => ({ index, temp_c: 60 + index, ...(job ? { job: { job, job_user: 'alice' } } : {}) }) as never;
const alert = (id: string, host: string, index: number | undefined, summary: string, s: number) =>
  newEnvelope({
    type: 'alert',
    id,
    host,
    source: 't',
    ts: at(s),
    data: {
      fingerprint: id,
      status: 'firing',
      severity: 'critical',
      category: 'xid',
      rule: 'xid',
      summary,
      starts_at: at(s).replace(/\.\d+Z$/, 'Z'),
      evidence: [],
      ...(index !== undefined ? { gpu: { index } } : {}),
    },
  });

/** Job 4242 runs on gpu-a's GPU 3 (per the samples) and on gpu-b (per its log, which names no GPU); job 77 shares gpu-a on GPU 4. */
function story(): Envelope[] {
  return [
    newEnvelope({ type: 'gpu.sample', id: 's1', host: 'gpu-a', source: 't', ts: at(0), data: { gpus: [gpu(3, '4242'), gpu(4, '77')] } }),
    newEnvelope({
      type: 'job.event',
      id: 'j1',
      host: 'gpu-a',
      source: 't',
      ts: at(5),
      data: { job: '4242', kind: 'step', rank: 0, gpu: 3, step: 41200, step_time_ms: 812, message: '' },
    }),
    newEnvelope({
      type: 'job.event',
      id: 'j2',
      host: 'gpu-a',
      source: 't',
      ts: at(6),
      data: { job: '4242', kind: 'checkpoint', checkpoint: 'ok', step: 41000, message: 'saved' },
    }),
    alert('a1', 'gpu-a', 3, 'Xid 79: GPU has fallen off the bus', 10),
    alert('a2', 'gpu-a', 4, 'GPU 4 too hot', 11),
    alert('a3', 'gpu-c', 0, 'elsewhere', 12),
    newEnvelope({
      type: 'job.event',
      id: 'j3',
      host: 'gpu-b',
      source: 't',
      ts: at(20),
      data: { job: '4242', kind: 'collective_timeout', rank: 5, message: 'Watchdog caught collective operation timeout' },
    }),
    newEnvelope({
      type: 'job.event',
      id: 'j4',
      host: 'gpu-a',
      source: 't',
      ts: at(21),
      data: { job: '77', kind: 'oom', gpu: 4, message: 'CUDA out of memory' },
    }),
  ];
}

describe('job events in timelines, and --job', () => {
  it('a fleet timeline tells job failures and checkpoints but not every step', () => {
    const t = buildTimeline(story(), { from: T0, to: T0 + 60_000 });
    expect(t.entries.map((e) => e.id)).toEqual(['j2', 'a1', 'a2', 'a3', 'j3', 'j4']);
    expect(t.entries.find((e) => e.id === 'j3')).toMatchObject({ source: 'job', severity: 'error', title: 'job 4242 rank 5: collective timeout' });
  });

  it("--job narrows to the job's events, steps included, and the alerts and metrics of its GPUs only", () => {
    const t = buildTimeline(story(), { from: T0, to: T0 + 60_000, job: '4242' });
    expect(t.entries.map((e) => [e.id, e.title])).toEqual([
      ['j1', 'job 4242 rank 0: step 41200 (812 ms/step)'],
      ['j2', 'job 4242: checkpoint saved at step 41000'],
      ['a1', 'FIRING critical: Xid 79: GPU has fallen off the bus'],
      ['j3', 'job 4242 rank 5: collective timeout'],
    ]);
    expect([...new Set(t.metrics.map((m) => `${m.host}/${m.gpu}`))]).toEqual(['gpu-a/3']);
    expect(render(t, 'md')).toContain('job 4242 rank 5: collective timeout');
  });

  it('a job called like a member of every object is only a name', () => {
    const envelopes = [newEnvelope({ type: 'job.event', id: 'p', host: 'h', source: 't', ts: at(1), data: { job: '__proto__', kind: 'oom', message: '' } })];
    expect(buildTimeline(envelopes, { from: T0, to: T0 + 60_000, job: '__proto__' }).entries.map((e) => e.id)).toEqual(['p']);
    expect(buildTimeline(envelopes, { from: T0, to: T0 + 60_000, job: 'constructor' }).entries).toEqual([]);
  });
});
