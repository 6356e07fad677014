import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newEnvelope } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { busConformance, waitFor } from '@gpualert/test-support';
import { envelopeMessage } from './bus.ts';
import { MemoryBus } from './memory-bus.ts';

busConformance('in-process (embedded mode)', async () => new MemoryBus({ partitions: 4, maxBatchSize: 50 }), 500);

describe('MemoryBus with a data directory', () => {
  it("keeps its log and the groups' offsets across a restart, so a group resumes and the past can be read", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gpualert-embedded-'));
    const line = (seq: number) => envelopeMessage(newEnvelope({ type: 'kernel.line', host: `h${seq % 3}`, source: 't', data: { line: `seq ${seq}` } }));
    const first = new MemoryBus({ dataDir, partitions: 3 });
    await first.publish('t', [line(1), line(2), line(3)]);
    const seen: string[] = [];
    const sub = await first.consume({
      group: 'g',
      topics: ['t'],
      handler: async (b) => void seen.push(...b.items.map((i) => (i.envelope.type === 'kernel.line' ? i.envelope.data.line : ''))),
    });
    await waitFor(() => seen.length === 3, 'the three messages', 10_000);
    await sub.stop();
    await first.close();

    const second = new MemoryBus({ dataDir, partitions: 3 });
    expect((await second.read('t')).length).toBe(3);
    // One message of each of the three hosts (keys) after the restart: each comes after anything
    // redelivered on its partition, so once all three are here, a redelivery would be too.
    await second.publish('t', [line(4), line(5), line(6)]);
    const after: string[] = [];
    const resumed = await second.consume({
      group: 'g',
      topics: ['t'],
      handler: async (b) => void after.push(...b.items.map((i) => (i.envelope.type === 'kernel.line' ? i.envelope.data.line : ''))),
    });
    await waitFor(() => ['seq 4', 'seq 5', 'seq 6'].every((l) => after.includes(l)), 'the messages published after the restart', 10_000);
    await resumed.stop();
    expect(after.sort()).toEqual(['seq 4', 'seq 5', 'seq 6']);
  });
});
