import type { Envelope } from '@gpualert/schema';

/** A message to publish; `key` is the host, so one host's messages stay in order. */
export interface OutgoingMessage {
  readonly key: string;
  readonly value: Uint8Array | string;
  readonly headers?: Readonly<Record<string, string>>;
  /** Milliseconds since the epoch; the bus's clock when absent. */
  readonly timestamp?: number;
}

export interface IncomingMessage {
  readonly topic: string;
  readonly partition: number;
  readonly offset: number;
  readonly key: string | null;
  readonly value: Buffer;
  readonly headers: Readonly<Record<string, string>>;
  readonly timestamp: number;
}

/** A valid envelope with the message it came in. */
export interface ConsumedEnvelope {
  readonly message: IncomingMessage;
  readonly envelope: Envelope;
}

/** The valid envelopes of one fetched batch of one partition, in offset order. */
export interface Batch {
  readonly topic: string;
  readonly partition: number;
  readonly items: readonly ConsumedEnvelope[];
  /** Messages already in the partition after this batch when it was fetched: 0 when caught up. */
  readonly lag: number;
}

/** One partition of a topic (logical name). */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

export interface BatchContext {
  /**
   * Publishes what the batch produced. The consumer commits the batch's offsets only after every
   * publish made through here is durable, so use it rather than the bus directly.
   */
  publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  /**
   * Resolves once this consumer has handled the batch's partition of `topic` up to where that
   * partition ended when asked (for Kafka, its high watermark then): what was published there
   * before, and a little after. It waits only for the other lane of this consumer (`fastTopics`),
   * and resolves to true when that lane has got there. Where it cannot tell, it resolves to false,
   * at once or when it stops waiting: one lane holds both, or no lane of this consumer holds that
   * partition, or a lane is not settled in its group, or the group rebalances (a heartbeat refused
   * says so) or the consumer stops meanwhile, or Kafka does not say where the partition ends
   * within 2 s, or 30 s have passed (the batches of one fetch are handed over together, so within
   * one lane there is nothing to wait for). A batch's retries and parts are told its first answer.
   */
  caughtUp(topic: string): Promise<boolean>;
}

export type BatchHandler = (batch: Batch, context: BatchContext) => Promise<void>;

export interface ConsumeOptions {
  /** The consumer group; an adapter scopes it by its deployment prefix as it does topics. */
  readonly group: string;
  readonly topics: readonly string[];
  readonly handler: BatchHandler;
  /** Where a group with no committed offset starts: the oldest message (default) or the next new one. */
  readonly fromBeginning?: boolean;
  /** A member silent for longer than this (a handler stuck or a process killed) loses its partitions. */
  readonly sessionTimeoutMs?: number;
  /**
   * How much one batch of one partition may hold (bytes; default 1 MB). Bigger batches let a
   * consumer that saves per-key state after each batch save each key less often when it is behind.
   */
  readonly maxBatchBytes?: number;
  /**
   * How many partitions' batches the handler may be given at once (default 1: one after another).
   * Above 1 the handler orders its own work: each partition's batches still come one at a time, in
   * order. The engine takes a whole fetch at once, so that a kernel event's batch can go before
   * the sample batches fetched with it. The in-process bus gives one batch at a time (a lane) whatever this says.
   */
  readonly concurrentBatches?: number;
  /**
   * Topics (of `topics`) read by a lane of their own, so that their batches never wait behind a
   * fetch of the others': on Kafka a second member of the group in this process, given partition
   * p of these topics whenever the first holds partition p of the others (its own fetch loop, as
   * KafkaJS fetches again only once every batch of a fetch is handled); in the process, a member
   * of its own. Each lane's batches still come in order, and `context.caughtUp` lets a batch wait
   * for the other lane.
   */
  readonly fastTopics?: readonly string[];
  /** Told the partitions this consumer owns after each rebalance (all of them, every lane's, not a difference). */
  readonly onAssignment?: (partitions: readonly TopicPartition[]) => void;
  /**
   * Told of the messages the handler could not process (each failed alone, past the retries) once
   * they are on the dead-letter topic; what it publishes is durable before the batch commits.
   * Default: `raisePipelineAlert`, an alert about gpualert itself on `gpualert.alerts`.
   */
  readonly onDeadLetter?: DeadLetterHook;
}

/** A message the handler failed on alone, past the retries: a bug, not an outage. */
export interface PoisonMessage {
  readonly group: string;
  readonly message: IncomingMessage;
  readonly envelope: Envelope;
  /** The dead-letter reason: the handler's error, redacted and bounded. */
  readonly reason: string;
  /** The error's code (docs/errors.md). */
  readonly code: string;
}

export type DeadLetterHook = (
  poison: readonly PoisonMessage[],
  publish: (topic: string, messages: readonly OutgoingMessage[]) => Promise<void>,
) => Promise<void>;

export interface ReadOptions {
  readonly from?: number;
  /** Stop after messages with a timestamp past this (ms since the epoch). */
  readonly to?: number;
  /** Told how many messages were fetched to answer (in range or not): what the read cost. */
  readonly fetched?: (count: number) => void;
  /**
   * Only messages with this key are kept (every message is keyed by its host): one host's out of a
   * fleet's topic, the others passed over, never held, so a read's memory is the host's. Kafka
   * fetches only the partition the producer puts the key on, so a read costs that partition's
   * messages, not the topic's (partitions added to a topic later would leave a key's older
   * messages on its old partition, unread: gpualert never adds them, see docs/architecture.md);
   * the embedded bus looks through every partition in memory.
   */
  readonly key?: string;
}

export interface Subscription {
  /** Stops fetching, lets the batch in flight finish and commit, and leaves the group. */
  stop(): Promise<void>;
  /** Whether the consumer is in its group now (joined, not joining or rebalancing): readiness. */
  joined(): boolean;
}

/**
 * The port every service talks to. Topic names are the logical ones from the schema; an adapter
 * may prefix them per deployment.
 */
export interface Bus {
  readonly kind: 'kafka' | 'memory';
  /** Creates the topics that do not exist yet. */
  ensureTopics(topics: readonly string[]): Promise<void>;
  /** Resolves only once every message is durable (for Kafka: acked by all in-sync replicas). */
  publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void>;
  /** Joins a consumer group; messages that are not valid envelopes go to the dead-letter topic. */
  consume(options: ConsumeOptions): Promise<Subscription>;
  /**
   * Reads a topic's raw messages from `from` (ms since the epoch, by message timestamp; the
   * oldest when absent) up to what it held when the call began, without joining a group.
   */
  read(topic: string, options?: ReadOptions): Promise<IncomingMessage[]>;
  /** Whether the bus answers now: undefined, or why not (readiness; bounded by the caller). */
  ready(): Promise<string | undefined>;
  close(): Promise<void>;
}

/** Headers of a dead-letter record; its value is the original bytes, untouched. */
export const DEADLETTER_HEADERS = {
  reason: 'gpualert-reason',
  topic: 'gpualert-topic',
  partition: 'gpualert-partition',
  offset: 'gpualert-offset',
  group: 'gpualert-group',
  /** How many times the handler ran the message before it was set aside (handler failures only). */
  attempts: 'gpualert-attempts',
  /** The error's code (docs/errors.md): the handler's GpualertError's, GA-INTERNAL for any other error, GA-ENVELOPE-INVALID for bytes that are no envelope. */
  code: 'gpualert-error-code',
} as const;

/** Builds an outgoing message from an envelope, keyed by its host. */
export function envelopeMessage(envelope: Envelope): OutgoingMessage {
  return { key: envelope.host, value: JSON.stringify(envelope), timestamp: Date.parse(envelope.ts) };
}
