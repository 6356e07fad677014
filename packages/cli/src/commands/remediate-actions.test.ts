import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { readActions } from './remediate.ts';

const DAY = 86_400_000;

function decided(id: string, at: number) {
  return newEnvelope({
    type: 'action',
    ts: new Date(at).toISOString(),
    host: `host-${id}`,
    source: 'remediator/test',
    data: { action_id: id, kind: 'drain', phase: 'awaiting_approval', policy_rule: 'bus', reason: 'gpualert: Xid 79' },
  });
}

describe('gpualert action list|approve|deny', () => {
  it('read only the last 7 days of gpualert.actions: an older action is neither listed nor found to approve', async () => {
    const bus = new MemoryBus();
    try {
      const now = Date.now();
      await bus.ensureTopics([TOPICS.actions]);
      await bus.publish(TOPICS.actions, [envelopeMessage(decided('old', now - 8 * DAY)), envelopeMessage(decided('recent', now - 6 * DAY))]);
      const views = await readActions(bus, now);
      expect([...views.keys()]).toEqual(['recent']);
    } finally {
      await bus.close();
    }
  });
});
