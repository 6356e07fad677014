import type { Bus, Subscription } from '@gpualert/bus';
import { TOPICS } from '@gpualert/schema';

const COLOR = new Map<string, string>([['critical', '\x1b[1;31m'], ['error', '\x1b[31m'], ['warning', '\x1b[33m'], ['info', '\x1b[36m']]);
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Text from an alert as one inert line: a control character (an escape sequence that would clear
 * the screen or move the cursor, a newline that would forge a line of its own) shows as `\xNN`.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

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
        const tag = color ? `${COLOR.get(a.severity) ?? ''}${severity}\x1b[0m` : severity;
        const status = a.status === 'resolved' ? 'RESOLVED ' : '';
        const flags = [a.expected ? 'expected (maintenance)' : '', a.incident ? `incident ${printable(a.incident)}` : '', a.root_cause ? `root cause ${printable(a.root_cause)}` : ''].filter(Boolean).join(', ');
        out.write(`${envelope.ts.slice(11, 19)}  ${tag} ${status}${printable(envelope.host)}${a.gpu ? ` GPU ${a.gpu.index}` : ''}  [${a.category}]  ${printable(a.summary)}${flags ? `  (${flags})` : ''}\n`);
        if (a.status === 'firing' && a.action) out.write(`          → ${printable(a.action)}\n`);
      }
    },
  });
}
