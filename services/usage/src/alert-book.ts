import type { EnvelopeOf } from '@gpualert/schema';

/** Alerts kept to explain a reconciliation's evidence: a month of a fleet's faults, not every alert ever. */
export const MAX_ALERT_BOOK = 10_000;
/** Evidence ids (kernel events, provider events, samples) kept per alert. */
const MAX_EVIDENCE_IDS = 16;

export interface AlertFacts {
  readonly fingerprint: string;
  readonly host: string;
  readonly gpu?: number;
  readonly severity: string;
  readonly category: string;
  readonly summary: string;
  readonly starts_at: string;
  ends_at?: string;
  /** The ids of the events behind the alert: the kernel lines and provider notices a support case quotes. */
  readonly evidence: string[];
}

/**
 * What each alert named in a reconciliation was: its summary, when it fired and resolved, and
 * the events behind it, read from the same recording or from `gpualert.alerts`.
 */
export class AlertBook {
  private readonly alerts = new Map<string, AlertFacts>();

  add(alert: EnvelopeOf<'alert'>): void {
    const d = alert.data;
    let facts = this.alerts.get(d.fingerprint);
    if (!facts) {
      if (this.alerts.size >= MAX_ALERT_BOOK) return;
      this.alerts.set(
        d.fingerprint,
        (facts = {
          fingerprint: d.fingerprint,
          host: alert.host,
          ...(d.gpu ? { gpu: d.gpu.index } : {}),
          severity: d.severity,
          category: d.category,
          summary: d.summary.slice(0, 512),
          starts_at: d.starts_at,
          evidence: [],
        }),
      );
    }
    if (d.status === 'resolved' && d.ends_at) facts.ends_at = d.ends_at;
    for (const id of d.evidence) {
      if (facts.evidence.length >= MAX_EVIDENCE_IDS) break;
      if (!facts.evidence.includes(id)) facts.evidence.push(id.slice(0, 256));
    }
  }

  get(fingerprint: string): AlertFacts | undefined {
    return this.alerts.get(fingerprint);
  }
}
