import { newEnvelope, type Envelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { buildTimeline } from './timeline.ts';

const T0 = Date.parse('2026-06-01T00:00:00Z');
const NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty'];

describe('a timeline over hosts named like members of every object', () => {
  it("tells each host's story and summarises its GPUs, touching no prototype", () => {
    const envelopes: Envelope[] = NAMES.flatMap((host, i) => [
      newEnvelope({
        type: 'gpu.sample',
        id: `s${i}`,
        host,
        source: 't',
        ts: new Date(T0 + i).toISOString(),
        data: { gpus: [{ index: 0, temp_c: 60 + i } as never] },
      }),
      newEnvelope({
        type: 'kernel.event',
        id: `k${i}`,
        host,
        source: 't',
        ts: new Date(T0 + 10 + i).toISOString(),
        data: { kind: 'xid', xid: 79, gpu: 0, message: 'fallen off the bus', severity: 'critical', meaning: 'GPU has fallen off the bus' },
      }),
    ]);
    const timeline = buildTimeline(envelopes, { from: T0 - 1, to: T0 + 60_000 });
    expect(timeline.entries.map((e) => e.host).sort()).toEqual([...NAMES].sort());
    expect(timeline.metrics.filter((m) => m.metric === 'temp_c').map((m) => [m.host, m.max])).toEqual([...NAMES.map((h, i) => [h, 60 + i])].sort());
    const narrowed = buildTimeline(envelopes, { from: T0 - 1, to: T0 + 60_000, host: '__proto__' });
    expect(narrowed.entries.map((e) => e.id)).toEqual(['k0']);
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain('0');
  });
});

describe("a timeline with the remediator's actions", () => {
  it('tells what was proposed, who approved it and what the scheduler answered, in order, for the post-mortem', () => {
    const at = (s: number) => new Date(T0 + s * 1_000).toISOString();
    const envelopes: Envelope[] = [
      newEnvelope({
        type: 'action.result',
        id: 'r1',
        host: 'gpu-node-7',
        source: 'remediator',
        ts: at(90),
        data: { action_id: 'act-1', kind: 'drain', outcome: 'succeeded', attempt: 2, executor: 'slurm' },
      }),
      newEnvelope({
        type: 'action',
        id: 'a1',
        host: 'gpu-node-7',
        source: 'remediator',
        ts: at(1),
        data: { action_id: 'act-1', kind: 'drain', phase: 'awaiting_approval', policy_rule: 'xid-79', reason: 'Xid 79: GPU has fallen off the bus', gpu: 3 },
      }),
      newEnvelope({
        type: 'action.approval',
        id: 'p1',
        host: 'gpu-node-7',
        source: 'cli',
        ts: at(60),
        data: { action_id: 'act-1', decision: 'approved', by: 'ana' },
      }),
    ];
    const timeline = buildTimeline(envelopes, { from: T0, to: T0 + 120_000 });
    expect(timeline.entries.map((e) => [e.source, e.title])).toEqual([
      ['action', 'drain awaiting approval (act-1)'],
      ['action', 'act-1 approved by ana'],
      ['action', 'drain succeeded on slurm (act-1, attempt 2)'],
    ]);
    expect(timeline.entries[0]).toMatchObject({ gpu: 3, detail: 'Xid 79: GPU has fallen off the bus' });
  });
});
