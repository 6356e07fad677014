import { newEnvelope, stableId, type Envelope, type EnvelopeOf } from '@gpualert/schema';

/**
 * What people must hear about remediation, as alerts the notifier routes like any other: an
 * action waiting for approval (firing until someone or the timeout decides; its message names the
 * commands that approve or deny it) and a circuit breaker that tripped (critical: it pages, and
 * the page resolves when the breaker closes again).
 */
export function actionAlerts(envelopes: readonly Envelope[], source: string, consoleUrl?: string): EnvelopeOf<'alert'>[] {
  const out: EnvelopeOf<'alert'>[] = [];
  for (const e of envelopes) {
    if (e.type === 'action' && e.data.phase === 'awaiting_approval') {
      const id = e.data.action_id;
      const link = consoleUrl === undefined ? undefined : actionLink(consoleUrl, id);
      const commands = `\`gpualert action approve ${id}\` or deny with \`gpualert action deny ${id}\``;
      out.push(
        alert(e, source, 'firing', {
          rule: 'remediation-approval',
          category: 'other',
          severity: 'warning',
          fingerprint: approvalFingerprint(id),
          summary: `${e.data.kind} of ${e.host} waits for approval until ${e.data.approval_deadline ?? '?'} (then ${e.data.on_timeout ?? 'deny'}): gpualert action approve ${id}`,
          action: link ? `Approve or deny in the console: ${link} (or approve with ${commands}).` : `Approve with ${commands}.`,
          annotations: {
            action_id: id,
            approve: `gpualert action approve ${id}`,
            deny: `gpualert action deny ${id}`,
            ...(link ? { approve_url: link } : {}),
            reason: e.data.reason.slice(0, 4_000),
          },
        }),
      );
    } else if (e.type === 'action.approval') {
      out.push(
        alert(e, source, 'resolved', {
          rule: 'remediation-approval',
          category: 'other',
          severity: 'warning',
          fingerprint: approvalFingerprint(e.data.action_id),
          summary: `action ${e.data.action_id} ${e.data.decision} by ${e.data.by}`,
          annotations: { action_id: e.data.action_id },
        }),
      );
    } else if (e.type === 'action' && e.data.breaker_tripped === true) {
      out.push(
        alert(e, source, 'firing', {
          rule: 'remediation-breaker',
          category: 'pipeline',
          severity: 'critical',
          fingerprint: breakerFingerprint(e.data.action_id),
          summary: `remediation stopped in partition ${e.data.partition ?? '?'}: ${e.data.reason.slice(0, 300)}`,
          action: 'gpualert takes no more hosts of this partition out of service until the window passes; look at what is failing across it.',
          annotations: { action_id: e.data.action_id },
        }),
      );
    } else if (e.type === 'action' && e.data.breaker_closed === true) {
      out.push(
        alert(e, source, 'resolved', {
          rule: 'remediation-breaker',
          category: 'pipeline',
          severity: 'critical',
          fingerprint: breakerFingerprint(e.data.action_id),
          summary: e.data.reason.slice(0, 300),
          annotations: { action_id: e.data.action_id },
        }),
      );
    }
  }
  return out;
}

/**
 * The console's page for one action (`#/actions/ID`): opening it decides nothing, a person reads
 * the action there and presses Approve or Deny. `consoleUrl` is where people reach the notifier
 * (`GPUALERT_CONSOLE_URL`), checked at start: http(s), no credentials.
 */
export function actionLink(consoleUrl: string, actionId: string): string {
  return `${consoleUrl.replace(/\/+$/, '')}/console/#/actions/${encodeURIComponent(actionId)}`;
}

/** One page per trip: the tripping action's id names it, and the breaker closing resolves it. */
function breakerFingerprint(actionId: string): string {
  return stableId('remediation-breaker', actionId).replace(/-/g, '').slice(0, 16);
}

function approvalFingerprint(actionId: string): string {
  return stableId('remediation-approval', actionId).replace(/-/g, '').slice(0, 16);
}

interface AlertFields {
  readonly rule: string;
  readonly category: 'other' | 'pipeline';
  readonly severity: 'warning' | 'critical';
  readonly fingerprint: string;
  readonly summary: string;
  readonly action?: string;
  readonly annotations: Record<string, string>;
}

function alert(e: Envelope, source: string, status: 'firing' | 'resolved', f: AlertFields): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: stableId('remediation-alert', f.fingerprint, status, e.id),
    ts: e.ts,
    host: e.host,
    labels: e.labels,
    source,
    data: {
      fingerprint: f.fingerprint,
      status,
      severity: f.severity,
      category: f.category,
      rule: f.rule,
      summary: f.summary,
      ...(f.action !== undefined ? { action: f.action } : {}),
      starts_at: e.ts,
      ...(status === 'resolved' ? { ends_at: e.ts } : {}),
      evidence: [e.id],
      annotations: f.annotations,
    },
  });
}
