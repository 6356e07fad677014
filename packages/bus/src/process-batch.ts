import { parseEnvelope, TOPICS } from '@gpualert/schema';
import {
  DEADLETTER_HEADERS, type BatchContext, type BatchHandler, type ConsumedEnvelope, type IncomingMessage,
  type OutgoingMessage,
} from './bus.ts';

export type Publish = (topic: string, messages: readonly OutgoingMessage[]) => Promise<void>;

/**
 * The part of consuming both adapters share: validate each message, send the bad ones to the
 * dead-letter topic with their original bytes and the reason, run the handler over the good ones,
 * and settle only when everything the batch produced is durable. The caller commits after this.
 */
export async function processBatch(
  messages: readonly IncomingMessage[],
  group: string,
  handler: BatchHandler,
  publish: Publish,
  lag = 0,
): Promise<void> {
  const first = messages[0];
  if (!first) return;
  const items: ConsumedEnvelope[] = [];
  const deadletters: OutgoingMessage[] = [];
  for (const message of messages) {
    const result = parseEnvelope(message.value);
    if (result.ok) {
      items.push({ message, envelope: result.value });
    } else {
      deadletters.push(deadletterOf(message, group, result.error.message));
    }
  }
  const produced: Promise<void>[] = [];
  if (deadletters.length > 0) produced.push(publish(TOPICS.deadletter, deadletters));
  const context: BatchContext = {
    publish(topic, out) {
      const pending = publish(topic, out);
      produced.push(pending);
      return pending;
    },
  };
  if (items.length > 0) {
    try {
      await handler({ topic: first.topic, partition: first.partition, items, lag }, context);
    } finally {
      // Even when the handler fails, nothing it started may be left dangling unobserved.
      await Promise.allSettled(produced);
    }
  }
  await Promise.all(produced);
}

export function deadletterOf(message: IncomingMessage, group: string, reason: string): OutgoingMessage {
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
    },
  };
}
