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
