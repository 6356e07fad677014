import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newEnvelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { envelopeMessage } from './bus.ts';
import { busConformance } from './bus-conformance.ts';
import { MemoryBus } from './memory-bus.ts';

busConformance('in-process (embedded mode)', async () => new MemoryBus({ partitions: 4, maxBatchSize: 50 }), 500);

describe('MemoryBus with a data directory', () => {
  it('keeps its log and the groups\' offsets across a restart, so a group resumes and the past can be read', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gpualert-embedded-'));
    const line = (seq: number) => envelopeMessage(newEnvelope({ type: 'kernel.line', host: `h${seq % 3}`, source: 't', data: { line: `seq ${seq}` } }));
    const first = new MemoryBus({ dataDir, partitions: 3 });
    await first.publish('t', [line(1), line(2), line(3)]);
    const seen: string[] = [];
    const sub = await first.consume({ group: 'g', topics: ['t'], handler: async (b) => void seen.push(...b.items.map((i) => i.envelope.type === 'kernel.line' ? i.envelope.data.line : '')) });
    while (seen.length < 3) await new Promise((r) => setTimeout(r, 10));
    await sub.stop();
    await first.close();

    const second = new MemoryBus({ dataDir, partitions: 3 });
    expect((await second.read('t')).length).toBe(3);
    await second.publish('t', [line(4)]);
    const after: string[] = [];
    const resumed = await second.consume({ group: 'g', topics: ['t'], handler: async (b) => void after.push(...b.items.map((i) => i.envelope.type === 'kernel.line' ? i.envelope.data.line : '')) });
    while (after.length < 1) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 50));
    await resumed.stop();
    expect(after).toEqual(['seq 4']);
  });
});
