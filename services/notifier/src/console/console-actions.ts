import { envelopeMessage, type Bus } from '@gpualert/bus';
import { awaitsApproval, foldActions, MAX_APPROVAL_TIMEOUT_MS, newestFirst, type ActionView } from '@gpualert/remediation';
import { MAX_ACTION_TEXT_LENGTH, newEnvelope, parseEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';
import { firstIssue } from '../first-issue.ts';
import { SharedAnswer } from './shared-answer.ts';

/** One read of gpualert.actions serves every request within this long: a page refreshing every 5 s and a few people watching cost one read. */
export const ACTIONS_REUSE_MS = 2_000;
/** The console lists at most this many actions (newest first), the rest counted. */
export const MAX_CONSOLE_ACTIONS = 500;
/** What the notifier's approvals say they came from. */
export const CONSOLE_SOURCE = 'notifier/console';

/** `POST /v1/actions/{id}`: a person's word on an action waiting for one. */
export const DecisionBody = z.strictObject({
  decision: z.enum(['approved', 'denied']),
  // A name, not a message: no control characters, and nothing a chat would read as a mention or a link (Slack's `<!channel>`, `<@U…>`, `<url|text>`).
  by: z
    .string()
    .trim()
    .min(1)
    .max(256)
    .regex(/^[^\p{Cc}<>]+$/u, 'a name without control characters, < or >'),
  comment: z.string().max(MAX_ACTION_TEXT_LENGTH).optional(),
});

export interface ActionsAnswer {
  readonly status: number;
  readonly body: object;
}

/**
 * The first decision on an action, claimed in the store every notifier shares before it is
 * published: two people deciding at once (on one console or two replicas' consoles) are not both
 * told 200 while the remediator acts on whichever reached the topic first. Kept as long as an
 * approval may wait.
 */
export const DECISION_KEY = (id: string) => `notifier:action-decided:${id}`;
/** How long a claim holds before its decision is published (a publish times out well within it). */
const CLAIM_WHILE_PUBLISHING_MS = 60_000;
const Claimed = z.object({ decision: z.enum(['approved', 'denied']), by: z.string() });

const reads = new SharedAnswer<Bus, Map<string, ActionView>>(ACTIONS_REUSE_MS);

/** The actions of the last 7 days (the longest an approval may wait), folded; one read at a time, reused for ACTIONS_REUSE_MS after. */
function actionsOf(bus: Bus, now: number): Promise<Map<string, ActionView>> {
  return reads.get(bus, now, () =>
    bus.read(TOPICS.actions, { from: now - MAX_APPROVAL_TIMEOUT_MS }).then((messages) => {
      const envelopes: Envelope[] = [];
      for (const m of messages) {
        const parsed = parseEnvelope(m.value.toString('utf8'));
        if (parsed.ok) envelopes.push(parsed.value);
      }
      return foldActions(envelopes);
    }),
  );
}

/** `GET /v1/actions`: the newest MAX_CONSOLE_ACTIONS, those waiting for a person first, and how many wait in all. */
export async function listActions(bus: Bus, now: number): Promise<ActionsAnswer> {
  const all = newestFirst((await actionsOf(bus, now)).values());
  const waiting = all.filter(awaitsApproval);
  const shown = [...waiting, ...all.filter((v) => !awaitsApproval(v))].slice(0, MAX_CONSOLE_ACTIONS);
  return { status: 200, body: { actions: shown, waiting: waiting.length, total: all.length, omitted: all.length - shown.length } };
}

/**
 * `POST /v1/actions/{id}`: approve or deny an action that waits for a person, as `gpualert action
 * approve|deny` does: an `action.approval` envelope on gpualert.actions, which the remediator acts
 * on. 404 for an action not read, 409 for one no longer waiting (decided, expired, run) or that
 * another person decided first (the first decision counts; the answer names it).
 */
export async function decideAction(bus: Bus, store: StateStore, id: string, body: unknown, now: number): Promise<ActionsAnswer> {
  const checked = DecisionBody.safeParse(body);
  if (!checked.success) return { status: 400, body: { error: 'invalid_decision', message: firstIssue(checked.error, 'body') } };
  const view = (await actionsOf(bus, now)).get(id);
  if (!view) return { status: 404, body: { error: 'not_found', message: `no action ${JSON.stringify(id.slice(0, 80))} in the last 7 days` } };
  if (!awaitsApproval(view)) return { status: 409, body: { error: 'not_awaiting_approval', message: `action ${id} is ${view.state}, not awaiting approval` } };
  if (!awaitsApproval(view, now))
    return {
      status: 409,
      body: {
        error: 'approval_deadline_passed',
        message: `action ${id} passed its approval deadline ${view.approval_deadline ?? ''}: the timeout decides it (${view.on_timeout ?? 'deny'})`,
      },
    };
  const { decision, by, comment } = checked.data;
  const key = DECISION_KEY(id);
  const claim = JSON.stringify({ decision, by });
  // Held briefly while the decision is published, then for as long as an approval may wait: a
  // notifier that dies in between (or cannot release it) blocks the action for a minute, not a week.
  if (!(await store.compareAndSet(key, null, claim, { ttlMs: CLAIM_WHILE_PUBLISHING_MS }))) {
    const first = Claimed.safeParse(parseJson(await store.get(key)));
    const said = first.success ? `${first.data.decision} by ${first.data.by}` : 'decided';
    return { status: 409, body: { error: 'already_decided', message: `action ${id} was already ${said}: the first decision counts` } };
  }
  const envelope = newEnvelope({
    type: 'action.approval',
    host: view.host,
    source: CONSOLE_SOURCE,
    data: { action_id: id, decision, by, ...(comment ? { comment } : {}) },
  });
  try {
    await bus.publish(TOPICS.actions, [envelopeMessage(envelope)]);
  } catch (error) {
    // Not published: nobody decided; the next try may.
    await store.delete(key).catch(() => 0);
    throw error;
  }
  await store.set(key, claim, { ttlMs: MAX_APPROVAL_TIMEOUT_MS }).catch(() => undefined);
  // The next list reads the topic again and shows the decision.
  reads.forget(bus);
  return { status: 200, body: { ...view, state: decision, decided_by: by, ...(comment ? { comment } : {}) } };
}

function parseJson(text: string | null): unknown {
  try {
    return text === null ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}
