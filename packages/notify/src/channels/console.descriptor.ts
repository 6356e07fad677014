import { defineChannel } from './channel-descriptor.ts';
import { consoleChannel } from './console.ts';

/** The embedded mode's channel: the message on stdout. */
export const consoleDescriptor = defineChannel({
  name: 'console',
  settings: {},
  sizeLimits: [],
  create: () => consoleChannel(),
});
