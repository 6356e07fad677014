import type { Bus, Subscription } from '@gpualert/bus';
import { TOPICS } from '@gpualert/schema';

const COLOR: Record<string, string> = { critical: '\x1b[1;31m', error: '\x1b[31m', warning: '\x1b[33m', info: '\x1b[36m' };

/**
 * The embedded mode's console: every alert transition as one line a person can read, until a
 * notifier routes them to chat, tickets and the pager.
 */
export function printAlerts(bus: Bus, out: NodeJS.WritableStream = process.stdout): Promise<Subscription> {
  const color = 'isTTY' in out && (out as { isTTY?: boolean }).isTTY === true;
  return bus.consume({
    group: 'gpualert-console',
    topics: [TOPICS.alerts],
    fromBeginning: false,
    handler: async (batch) => {
      for (const { envelope } of batch.items) {
        if (envelope.type !== 'alert') continue;
        const a = envelope.data;
        const severity = a.severity.toUpperCase().padEnd(8);
        const tag = color ? `${COLOR[a.severity] ?? ''}${severity}\x1b[0m` : severity;
        const status = a.status === 'resolved' ? 'RESOLVED ' : '';
        const flags = [a.expected ? 'expected (maintenance)' : '', a.incident ? `incident ${a.incident}` : ''].filter(Boolean).join(', ');
        out.write(`${envelope.ts.slice(11, 19)}  ${tag} ${status}${envelope.host}${a.gpu ? ` GPU ${a.gpu.index}` : ''}  [${a.category}]  ${a.summary}${flags ? `  (${flags})` : ''}\n`);
        if (a.status === 'firing' && a.action) out.write(`          → ${a.action}\n`);
      }
    },
  });
}
