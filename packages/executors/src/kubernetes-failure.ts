import { ApiException } from '@kubernetes/client-node';
import type { ExecutionOutcome } from '@gpualert/remediation';

/** What a failed request gave: the HTTP status (absent when none came back) and one line for a person. */
export interface RequestFailure {
  readonly status?: number;
  readonly detail: string;
}

/** Statuses below 500 a retry can change: a timeout, a conflict (another writer), throttling or a PDB (429). Every 5xx is retried too. */
const RETRIABLE_STATUSES = new Set([408, 409, 429]);
/** The longest detail kept from an answer. */
const MAX_DETAIL_LENGTH = 200;

/**
 * One line for a failed request, from its status and the API server's own message (a `Status`
 * object's `message`), never from the client's exception text (which holds response headers).
 * Anything that looks like a credential is blanked all the same.
 */
export function requestFailure(error: unknown): RequestFailure {
  if (error instanceof ApiException) {
    const code: unknown = error.code;
    const status = typeof code === 'number' ? code : undefined;
    return { ...(status !== undefined ? { status } : {}), detail: statusMessage(error.body) };
  }
  if (error instanceof Error) {
    const name = error.name === 'AbortError' ? 'timed out' : error.name;
    const code: unknown = Reflect.get(error, 'code');
    return { detail: typeof code === 'string' ? `${name}: ${code}` : `${name}: ${oneLine(error.message)}` };
  }
  return { detail: oneLine(String(error)) };
}

/** `what` failed on node `node`: retriable when no answer came or the status is one a retry can change. */
export function failedOutcome(what: string, node: string, failure: RequestFailure): ExecutionOutcome {
  const retriable = failure.status === undefined || failure.status >= 500 || RETRIABLE_STATUSES.has(failure.status);
  const status = failure.status !== undefined ? `HTTP ${failure.status}` : 'no answer';
  return { outcome: 'failed', retriable, error: `kubernetes: ${what} of node ${node}: ${status}${failure.detail ? `: ${failure.detail}` : ''}` };
}

function statusMessage(body: unknown): string {
  if (typeof body === 'string') {
    try {
      return statusMessage(JSON.parse(body) as unknown);
    } catch {
      return oneLine(body);
    }
  }
  if (typeof body !== 'object' || body === null) return '';
  const message: unknown = Reflect.get(body, 'message');
  const reason: unknown = Reflect.get(body, 'reason');
  return oneLine(typeof message === 'string' ? message : typeof reason === 'string' ? reason : '');
}

/** One printable line, bounded, with bearer tokens and anything after `token=` blanked. */
export function oneLine(text: string): string {
  return text
    .replace(/[\u0000-\u001f\u007f]+/g, ' ')
    .replace(/\b(Bearer|Basic)\s+\S+/gi, '$1 [redacted]')
    .replace(/\b(token|password|secret)=\S+/gi, '$1=[redacted]')
    .trim()
    .slice(0, MAX_DETAIL_LENGTH);
}
