import { parseEnvelope } from '@gpualert/schema';
import { DEADLETTER_HEADERS, type BatchContext, type BatchHandler, type ConsumedEnvelope, type IncomingMessage, type OutgoingMessage } from './bus.ts';
import { RetriableError } from './infrastructure-error.ts';

export type Publish = (topic: string, messages: readonly OutgoingMessage[]) => Promise<void>;

/** `BatchContext.caughtUp` for a batch of `partition`. */
export type CaughtUp = (topic: string, partition: number) => Promise<boolean>;

const NOTHING_TO_WAIT_FOR: CaughtUp = () => Promise.resolve(false);

/** A fetched batch split into valid envelopes and dead letters for the ones that are not. */
export interface ParsedBatch {
  readonly items: readonly ConsumedEnvelope[];
  readonly invalid: readonly OutgoingMessage[];
}

/** Validates each message; a bad one becomes a dead letter with its original bytes and the reason. */
export function parseBatch(messages: readonly IncomingMessage[], group: string): ParsedBatch {
  const items: ConsumedEnvelope[] = [];
  const invalid: OutgoingMessage[] = [];
  for (const message of messages) {
    const result = parseEnvelope(message.value);
    if (result.ok) items.push({ message, envelope: result.value });
    else invalid.push(deadletterOf(message, group, result.error.message, undefined, 'GA-ENVELOPE-INVALID'));
  }
  return { items, invalid };
}

/**
 * Runs the handler over some of a partition's envelopes (in offset order) and settles only when
 * everything it published is durable. A publish that failed makes the whole run an infrastructure
 * failure, whatever the handler threw: Kafka was away, the messages were not at fault.
 */
export async function runHandler(
  items: readonly ConsumedEnvelope[],
  handler: BatchHandler,
  publish: Publish,
  lag: number,
  caughtUp: CaughtUp = NOTHING_TO_WAIT_FOR,
): Promise<void> {
  const first = items[0];
  if (!first) return;
  const produced: Promise<void>[] = [];
  const context: BatchContext = {
    caughtUp: (topic) => caughtUp(topic, first.message.partition),
    publish(topic, out) {
      const pending = publish(topic, out);
      produced.push(pending);
      return pending;
    },
  };
  try {
    await handler({ topic: first.message.topic, partition: first.message.partition, items, lag }, context);
  } catch (error) {
    // Even when the handler fails, nothing it started may be left dangling unobserved.
    const published = await Promise.allSettled(produced);
    const lost = published.find((p): p is PromiseRejectedResult => p.status === 'rejected');
    if (lost) throw new RetriableError(`publishing the batch's output failed: ${String(lost.reason)}`, { cause: lost.reason });
    throw error;
  }
  try {
    await Promise.all(produced);
  } catch (error) {
    throw new RetriableError(`publishing the batch's output failed: ${String(error)}`, { cause: error });
  }
}

export function deadletterOf(message: IncomingMessage, group: string, reason: string, attempts?: number, code?: string): OutgoingMessage {
  return {
    key: message.key ?? '',
    value: message.value,
    timestamp: message.timestamp,
    headers: {
      ...message.headers,
      [DEADLETTER_HEADERS.reason]: reason,
      [DEADLETTER_HEADERS.topic]: message.topic,
      [DEADLETTER_HEADERS.partition]: String(message.partition),
      [DEADLETTER_HEADERS.offset]: String(message.offset),
      [DEADLETTER_HEADERS.group]: group,
      ...(attempts === undefined ? {} : { [DEADLETTER_HEADERS.attempts]: String(attempts) }),
      ...(code === undefined ? {} : { [DEADLETTER_HEADERS.code]: code }),
    },
  };
}
