import { setTimeout as delay } from 'node:timers/promises';
import { redactSecrets } from '@gpualert/log';
import { errorCodeOf, must, TOPICS } from '@gpualert/schema';
import type { BatchHandler, DeadLetterHook, IncomingMessage, PoisonMessage } from './bus.ts';
import { deadletterMessages } from './bus-metrics.ts';
import { isInfrastructureError } from './infrastructure-error.ts';
import { raisePipelineAlert } from './pipeline-alert.ts';
import { deadletterOf, parseBatch, runHandler, type CaughtUp, type Publish } from './process-batch.ts';

/**
 * How often a batch is run before its messages are tried apart: a race or a cold cache clears
 * within a few tries, and 5 tries 50 to 400 ms apart hold a partition for under a second.
 */
export const MAX_HANDLER_ATTEMPTS = 5;

/**
 * How often a message that failed with its batch every time is run alone before it is
 * dead-lettered: once more is enough (a race would have cleared by now), and a host that sends
 * nothing but poison must cost its partition little time per message.
 */
export const MAX_ALONE_ATTEMPTS = 2;

/** A dead letter's reason is a Kafka header and a line of the pipeline alert: the gist, not a stack dump. */
export const MAX_DEADLETTER_REASON_CHARS = 1_000;

export interface BatchRun {
  readonly messages: readonly IncomingMessage[];
  readonly group: string;
  readonly handler: BatchHandler;
  readonly publish: Publish;
  /** Messages in the partition after this batch when it was fetched. */
  readonly lag: number;
  readonly onDeadLetter?: DeadLetterHook | undefined;
  /** Whether this member still owns the partition; when not, the run gives up uncommitted. */
  readonly stillOwned: () => boolean;
  /** Called while waiting between attempts: the member is busy, not dead (a Kafka heartbeat). */
  readonly keepAlive?: () => Promise<void>;
  readonly onError: (error: unknown, attempt: number) => void;
  /** `BatchContext.caughtUp` (default: nothing to wait for). */
  readonly caughtUp?: CaughtUp;
  /** How long to wait after failed attempt n; `outage` when the failure was the infrastructure's. */
  readonly backoffMs?: (attempt: number, outage: boolean) => number;
}

const LOST = 'lost' as const;
type Settled = { readonly ok: true } | { readonly ok: false; readonly error: unknown } | typeof LOST;

/**
 * Runs one fetched batch until it is done or the member no longer owns it; true when its offsets
 * may be committed. A retriable failure (a GpualertError that says so, or Kafka or Redis away: see
 * isInfrastructureError) is retried without limit, with
 * backoff, offsets uncommitted. Any other failure is retried MAX_HANDLER_ATTEMPTS times; then the
 * batch is split in halves, in order, until each failing message stands alone, and a message that
 * still fails alone MAX_ALONE_ATTEMPTS times goes to the dead-letter topic with the error, the
 * group and its original bytes, while the rest of the batch is handled: one bad message costs one
 * message, not its partition. `onDeadLetter` (default: a `pipeline` alert) is told of each.
 */
export async function retryBatch(run: BatchRun): Promise<boolean> {
  const { items, invalid } = parseBatch(run.messages, run.group);
  // An outage is waited out up to 5 s apart; a bug is retried quickly, it will not go away by waiting.
  const backoff =
    run.backoffMs ?? ((attempt: number, outage: boolean) => (outage ? Math.min(5_000, 50 * 2 ** Math.min(attempt, 7)) : Math.min(1_000, 25 * 2 ** attempt)));
  // How many failed runs each message was part of, for its dead letter.
  const failedRuns = new Array<number>(items.length).fill(0);

  /** Runs `work` until it succeeds: infrastructure failures without limit, others up to `limit` times. */
  const settle = async (work: () => Promise<void>, limit: number, range?: [number, number]): Promise<Settled> => {
    let failures = 0;
    for (let attempt = 1; ; attempt += 1) {
      try {
        await work();
        return { ok: true };
      } catch (error) {
        run.onError(error, attempt);
        if (!run.stillOwned()) return LOST;
        const outage = isInfrastructureError(error);
        if (!outage) {
          failures += 1;
          if (range) for (let i = range[0]; i < range[1]; i += 1) failedRuns[i] = (failedRuns[i] ?? 0) + 1;
        }
        if (failures >= limit) return { ok: false, error };
        await run.keepAlive?.();
        await delay(backoff(attempt, outage));
        await run.keepAlive?.();
        if (!run.stillOwned()) return LOST;
      }
    }
  };
  // A wait for another lane is waited once a batch: its retries and parts are told the first answer.
  const asked = new Map<string, Promise<boolean>>();
  const ask = run.caughtUp;
  const caughtUp: CaughtUp | undefined =
    ask &&
    ((topic, partition) => {
      const key = `${topic}/${partition}`;
      let answer = asked.get(key);
      if (answer === undefined) asked.set(key, (answer = ask(topic, partition)));
      return answer;
    });
  // Items [start, end) of the batch; a part's lag counts the batch's messages after it.
  const handle = (start: number, end: number) => () => runHandler(items.slice(start, end), run.handler, run.publish, run.lag + items.length - end, caughtUp);

  const poison: { index: number; error: unknown }[] = [];
  if (items.length > 0) {
    const whole = await settle(handle(0, items.length), MAX_HANDLER_ATTEMPTS, [0, items.length]);
    if (whole === LOST) return false;
    if (!whole.ok && items.length === 1) poison.push({ index: 0, error: whole.error });
    if (!whole.ok && items.length > 1) {
      // Parts are handled in offset order, so each host's messages still arrive in order.
      const parts: [number, number][] = halves(0, items.length);
      for (let part = parts.shift(); part !== undefined; part = parts.shift()) {
        const [start, end] = part;
        const alone = end - start === 1;
        const outcome = await settle(handle(start, end), alone ? MAX_ALONE_ATTEMPTS : 1, [start, end]);
        if (outcome === LOST) return false;
        if (outcome.ok) continue;
        if (alone) poison.push({ index: start, error: outcome.error });
        else parts.unshift(...halves(start, end));
      }
    }
  }
  if (invalid.length === 0 && poison.length === 0) return true;

  const poisonMessages: PoisonMessage[] = [];
  const letters = [...invalid];
  for (const { index, error } of poison) {
    const { message, envelope } = must(items[index], 'a poison index is inside the batch');
    const poisoned: PoisonMessage = { group: run.group, message, envelope, reason: reasonOf(run.group, error), code: errorCodeOf(error) };
    poisonMessages.push(poisoned);
    letters.push(deadletterOf(message, run.group, poisoned.reason, failedRuns[index], poisoned.code));
  }
  const stored = await settle(() => run.publish(TOPICS.deadletter, letters), Number.POSITIVE_INFINITY);
  if (stored === LOST) return false;
  if (invalid.length > 0) deadletterMessages.inc({ group: run.group, reason: 'invalid' }, invalid.length);
  if (poisonMessages.length === 0) return true;
  deadletterMessages.inc({ group: run.group, reason: 'handler_failed' }, poisonMessages.length);
  // The dead letters are durable: a hook that keeps failing costs its alert, never the partition.
  const hook = run.onDeadLetter ?? raisePipelineAlert;
  const told = await settle(() => hook(poisonMessages, run.publish), MAX_HANDLER_ATTEMPTS);
  return told !== LOST;
}

function halves(start: number, end: number): [number, number][] {
  const middle = start + Math.ceil((end - start) / 2);
  return [
    [start, middle],
    [middle, end],
  ];
}

/** What a person reading the dead letter needs: who failed and the error, with no secret in it. */
function reasonOf(group: string, error: unknown): string {
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const reason = redactSecrets(`handler of ${group} failed: ${message}`);
  return reason.length <= MAX_DEADLETTER_REASON_CHARS ? reason : `${reason.slice(0, MAX_DEADLETTER_REASON_CHARS - 1)}…`;
}
