import type { Bus, Subscription } from '@gpualert/bus';
import { TOPICS } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { instanceHostKey } from './handle-delivery.ts';

/** Keeps instance id → host from `host.inventory`, so provider events name gpualert's hosts. */
export function followInventory(bus: Bus, store: StateStore, group = 'gpualert-intake-inventory'): Promise<Subscription> {
  return bus.consume({
    group,
    topics: [TOPICS.hostInventory],
    handler: async (batch) => {
      for (const { envelope } of batch.items) {
        if (envelope.type === 'host.inventory' && envelope.data.instance_id && envelope.data.instance_id !== envelope.host) {
          await store.set(instanceHostKey(envelope.data.instance_id), envelope.host);
        }
      }
    },
  });
}
