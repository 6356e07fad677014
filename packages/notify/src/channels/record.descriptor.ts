import { defineChannel } from './channel-descriptor.ts';
import { recordChannel } from './console.ts';

/** Record only: the decision lands on gpualert.notifications, nothing is sent. */
export const recordDescriptor = defineChannel({
  name: 'record',
  settings: {},
  sizeLimits: [],
  create: () => recordChannel(),
});
