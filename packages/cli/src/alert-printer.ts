import type { Bus, Subscription } from '@gpualert/bus';
import { ENGINE_SOURCE } from '@gpualert/engine';
import { TOPICS, type EnvelopeOf } from '@gpualert/schema';

const COLOR = new Map<string, string>([
  ['critical', '\x1b[1;31m'],
  ['error', '\x1b[31m'],
  ['warning', '\x1b[33m'],
  ['info', '\x1b[36m'],
]);
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * Text from an alert as one inert line: a control character (an escape sequence that would clear
 * the screen or move the cursor, a newline that would forge a line of its own) shows as `\xNN`.
 */
export function printable(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Firing alerts whose incident the console remembers for their resolve line; past it the oldest go. */
export const MAX_REMEMBERED_INCIDENTS = 10_000;

/**
 * The incident of each alert line, the root's included. The engine names an alert's incident only
 * when it is another alert's (the root, whose fingerprint is the incident, carries none), and not
 * on a resolve: this reads it back as the engine means it (`incident ?? fingerprint` for its
 * alerts, maintenance and drift aside: they open none) and remembers it for the resolve.
 */
export class IncidentMemory {
  private readonly byFingerprint = new Map<string, string>();
  constructor(private readonly max = MAX_REMEMBERED_INCIDENTS) {}

  incidentOf(envelope: EnvelopeOf<'alert'>): string | undefined {
    const a = envelope.data;
    if (a.status === 'resolved') {
      const told = this.byFingerprint.get(a.fingerprint) ?? a.incident;
      this.byFingerprint.delete(a.fingerprint);
      return told;
    }
    const opensOne = envelope.source === ENGINE_SOURCE && a.category !== 'maintenance' && a.category !== 'drift';
    const incident = a.incident ?? (opensOne ? a.fingerprint : undefined);
    if (incident === undefined) return undefined;
    this.byFingerprint.delete(a.fingerprint); // re-inserted as the newest
    this.byFingerprint.set(a.fingerprint, incident);
    if (this.byFingerprint.size > this.max) {
      const oldest = this.byFingerprint.keys().next();
      if (!oldest.done) this.byFingerprint.delete(oldest.value);
    }
    return incident;
  }
}

/**
 * The embedded mode's console: every alert transition as one line a person can read, until a
 * notifier routes them to chat, tickets and the pager.
 */
export function printAlerts(bus: Bus, out: NodeJS.WritableStream = process.stdout): Promise<Subscription> {
  const color = 'isTTY' in out && out.isTTY === true;
  const incidents = new IncidentMemory();
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
        const incident = incidents.incidentOf(envelope);
        const flags = [
          a.expected ? 'expected (maintenance)' : '',
          incident ? `incident ${printable(incident)}` : '',
          a.root_cause ? `root cause ${printable(a.root_cause)}` : '',
        ]
          .filter(Boolean)
          .join(', ');
        out.write(
          `${envelope.ts.slice(11, 19)}  ${tag} ${status}${printable(envelope.host)}${a.gpu ? ` GPU ${a.gpu.index}` : ''}  [${a.category}]  ${printable(a.summary)}${flags ? `  (${flags})` : ''}\n`,
        );
        if (a.status === 'firing' && a.action) out.write(`          → ${printable(a.action)}\n`);
      }
    },
  });
}
