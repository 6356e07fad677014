import type { Channel } from './channel.ts';
import { plainText, title } from './format.ts';

/** The embedded mode's channel: the message on a stream (stdout). */
export function consoleChannel(out: NodeJS.WritableStream = process.stdout): Channel {
  return {
    name: 'console',
    async send(notification, signal) {
      out.write(`${title(notification)}\n${plainText(notification).replace(/^/gm, '  ')}\n`);
      return { ok: true };
    },
  };
}

/** Record only: the decision lands on gpualert.notifications, nothing is sent. */
export function recordChannel(): Channel {
  return { name: 'record', send: async () => ({ ok: true, detail: 'recorded only' }) };
}
