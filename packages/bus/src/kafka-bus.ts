import {
  Kafka,
  PartitionAssigners,
  logLevel as KafkaLogLevel,
  type Admin,
  type Consumer,
  type EachBatchPayload,
  type IHeaders,
  type Message,
  type Producer,
} from 'kafkajs';
import { randomUUID } from 'node:crypto';
import { redactSecrets } from '@gpualert/log';
import type { Bus, ConsumeOptions, IncomingMessage, OutgoingMessage, ReadOptions, Subscription, TopicPartition } from './bus.ts';
import { CoPartitionedAssigner, coPartitionedLanesAssigner, type LaneIdentity } from './co-partitioned-assigner.ts';
import { LaneProgress } from './lane-progress.ts';
import type { CaughtUp } from './process-batch.ts';
import { CONSUMER_STALL_MS, ConsumerWatch } from './consumer-watch.ts';
import { fixKafkajsCoordinatorLoss } from './kafkajs-coordinator-fix.ts';
import { fixKafkajsIdleLoop } from './kafkajs-idle-fix.ts';
import { KAFKA_PARTITIONER, kafkaPartitionOf } from './kafka-key-partition.ts';
import { RetriableError } from './infrastructure-error.ts';
import { retryBatch } from './retry-batch.ts';

export interface KafkaBusOptions {
  readonly brokers: readonly string[];
  readonly clientId?: string;
  /** Prepended to every topic name, so deployments (and tests) can share one cluster. */
  readonly topicPrefix?: string;
  readonly partitions?: number;
  /** Replicas of each topic it creates; absent: 3, or every broker of a smaller cluster (`min.insync.replicas` is the cluster's). */
  readonly replicationFactor?: number;
  /** How long a publish may keep retrying before it fails (the intake answers 503 then). */
  readonly publishTimeoutMs?: number;
  /** How long a fetch waits for data; small keeps latency in milliseconds. */
  readonly maxWaitMs?: number;
  readonly log?: (level: 'error' | 'warn' | 'info', event: string, detail: Record<string, unknown>) => void;
}

/** One member of a consumer: the consumer's only one, or one of its lanes. */
interface Lane {
  /** The partitions it holds now (logical topic names), as of its last join. */
  assigned: readonly TopicPartition[];
  /** In the group, or rebalancing after it was, for REBALANCE_GRACE_MS: readiness. */
  joined(): boolean;
  /** In the group now, not rebalancing: what it holds is what the group gave it. */
  settled(): boolean;
  stop(): Promise<void>;
}

/** Whether a lane holds this partition. */
function holds(lane: Lane, topic: string, partition: number): boolean {
  return lane.assigned.some((p) => p.topic === topic && p.partition === partition);
}

interface PendingSend {
  readonly topic: string;
  readonly messages: Message[];
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Kafka through kafkajs: an idempotent producer with acks from every in-sync replica, consumer
 * groups that commit only after a batch and all it produced are durable.
 */
export class KafkaBus implements Bus {
  readonly kind = 'kafka' as const;
  private readonly kafka: Kafka;
  private readonly producer: Producer;
  private readonly admin: Admin;
  private readonly prefix: string;
  private readonly options: KafkaBusOptions;
  private readonly subscriptions = new Set<Subscription>();
  private readonly knownTopics = new Set<string>();
  private connecting: Promise<void> | undefined;
  private queue: PendingSend[] = [];
  private sending = false;

  constructor(options: KafkaBusOptions) {
    fixKafkajsIdleLoop();
    fixKafkajsCoordinatorLoss();
    this.options = options;
    this.prefix = options.topicPrefix ?? '';
    const log = options.log ?? (() => {});
    this.kafka = new Kafka({
      clientId: options.clientId ?? 'gpualert',
      brokers: [...options.brokers],
      connectionTimeout: 3_000,
      requestTimeout: 10_000,
      retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
      logLevel: KafkaLogLevel.WARN,
      logCreator:
        () =>
        ({ level, log: entry }) => {
          const { message, ...detail } = entry;
          // Limiting the idempotent producer's retries is deliberate: a publish must fail in
          // bounded time so the caller can answer 503 and the sender retries.
          if (message.includes('Limiting retries for the idempotent producer')) return;
          log(level === KafkaLogLevel.ERROR ? 'error' : 'warn', 'kafka', { message, ...detail });
        },
    });
    const publishTimeoutMs = options.publishTimeoutMs ?? 10_000;
    this.producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: KAFKA_PARTITIONER,
      retry: { retries: Math.max(1, Math.ceil(publishTimeoutMs / 1_000)), initialRetryTime: 100, maxRetryTime: 1_000 },
    });
    this.admin = this.kafka.admin();
  }

  topicName(topic: string): string {
    return `${this.prefix}${topic}`;
  }

  async ensureTopics(topics: readonly string[]): Promise<void> {
    await this.connect();
    const wanted = topics.map((t) => this.topicName(t)).filter((t) => !this.knownTopics.has(t));
    if (wanted.length === 0) return;
    const existing = new Set(await this.admin.listTopics());
    const missing = wanted.filter((t) => !existing.has(t));
    if (missing.length > 0) {
      const brokers = (await this.admin.describeCluster()).brokers.length;
      const replicationFactor = this.options.replicationFactor ?? Math.min(DEFAULT_REPLICATION_FACTOR, brokers);
      if (replicationFactor > brokers) {
        // Exit 75 (try again): the missing brokers may be on their way back; if not, the setting is too high.
        throw new RetriableError(`cannot create ${missing.join(', ')} with replication factor ${replicationFactor}: the cluster has ${brokers} broker(s) up`);
      }
      const numPartitions = this.options.partitions ?? 6;
      await this.admin.createTopics({ waitForLeaders: true, topics: missing.map((topic) => ({ topic, numPartitions, replicationFactor })) });
      this.options.log?.('info', 'topics_created', { topics: missing, partitions: numPartitions, replicationFactor });
    }
    for (const topic of wanted) this.knownTopics.add(topic);
  }

  async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (messages.length === 0) return;
    await this.connect();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ topic: this.topicName(topic), messages: messages.map(toKafkaMessage), resolve, reject });
      void this.flush();
    });
  }

  /**
   * Everything queued while a send is in flight goes out together in the next one: natural
   * batching with no added latency, and one in-flight request keeps the idempotent order.
   * Requests stay under half a megabyte, well below the broker's 1 MB record-batch limit,
   * however much one caller or many callers queue.
   */
  private async flush(): Promise<void> {
    if (this.sending) return;
    this.sending = true;
    try {
      while (this.queue.length > 0) {
        const sends: PendingSend[] = [];
        let bytes = 0;
        for (let send = this.queue[0]; send !== undefined && (sends.length === 0 || bytes + sizeOf(send.messages) <= MAX_REQUEST_BYTES); send = this.queue[0]) {
          this.queue.shift();
          sends.push(send);
          bytes += sizeOf(send.messages);
        }
        try {
          for (const request of requests(sends)) await this.producer.sendBatch({ acks: -1, topicMessages: request });
          for (const send of sends) send.resolve();
        } catch (error) {
          for (const send of sends) send.reject(error);
        }
      }
    } finally {
      this.sending = false;
    }
  }

  async consume(options: ConsumeOptions): Promise<Subscription> {
    await this.connect();
    // The fast topics in a lane of their own: a second member of the group, co-partitioned with the first by consumer.
    const fast = [...new Set((options.fastTopics ?? []).filter((t) => options.topics.includes(t)))];
    const consumer = randomUUID();
    const identities: LaneIdentity[] =
      fast.length > 0 && fast.length < options.topics.length
        ? [
            { consumer, fast: [] },
            { consumer, fast: fast.map((t) => this.topicName(t)) },
          ]
        : [{ consumer, fast: [] }];
    const progress = new LaneProgress();
    let running = true;
    const lanes: Lane[] = [];
    const told = () => {
      options.onAssignment?.(lanes.flatMap((lane) => lane.assigned));
    };
    const caughtUp = (of: Lane, keepAlive: () => Promise<void>) => (topic: string, partition: number) =>
      this.caughtUp(options.group, lanes, of, progress, { topic, partition }, keepAlive, () => running);
    // Joined together, so that a new group's first generation has every lane; each is in `lanes` before it joins.
    const joins = await Promise.allSettled(identities.map((identity) => this.joinLane(options, identity, lanes, progress, told, caughtUp, () => running)));
    const failed = joins.find((join): join is PromiseRejectedResult => join.status === 'rejected');
    if (failed) {
      // No lane left reading for a consumer its caller never got.
      running = false;
      await Promise.allSettled(lanes.map((lane) => lane.stop()));
      throw failed.reason;
    }
    const subscription: Subscription = {
      joined: () => lanes.every((lane) => lane.joined()),
      stop: async () => {
        running = false;
        progress.release();
        this.subscriptions.delete(subscription);
        await Promise.all(lanes.map((lane) => lane.stop()));
      },
    };
    this.subscriptions.add(subscription);
    return subscription;
  }

  /** One member of a consumer's group: the consumer's only one, or one of its lanes. */
  private async joinLane(
    options: ConsumeOptions,
    identity: LaneIdentity,
    lanes: Lane[],
    progress: LaneProgress,
    told: () => void,
    caughtUp: (lane: Lane, keepAlive: () => Promise<void>) => CaughtUp,
    running: () => boolean,
  ): Promise<void> {
    const sessionTimeout = options.sessionTimeoutMs ?? 30_000;
    const rebalanceTimeout = Math.max(sessionTimeout, 10_000);
    const consumer: Consumer = this.kafka.consumer({
      // Groups are scoped by the deployment's prefix like topics: two deployments (or tests) on
      // one cluster must never share a group, or one member is handed the other's partitions.
      groupId: `${this.prefix}${options.group}`,
      sessionTimeout,
      heartbeatInterval: Math.max(100, Math.min(1_000, Math.floor(sessionTimeout / 3))),
      rebalanceTimeout,
      maxWaitTimeInMs: this.options.maxWaitMs ?? 25,
      minBytes: 1,
      maxBytesPerPartition: options.maxBatchBytes ?? 1024 * 1024,
      maxBytes: Math.max(10 * 1024 * 1024, (options.maxBatchBytes ?? 0) * 8),
      retry: { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 100, maxRetryTime: 2_000 },
      // Co-partitioned by consumer first; by member while a rolling upgrade has members that know no
      // lanes; round-robin only while it still has older ones.
      partitionAssigners: [coPartitionedLanesAssigner(identity), CoPartitionedAssigner, PartitionAssigners.roundRobin],
    });
    try {
      await consumer.connect();
      // Every lane subscribes to every topic: the assigner says which lane reads what.
      await consumer.subscribe({ topics: options.topics.map((t) => this.topicName(t)), fromBeginning: options.fromBeginning ?? true });
    } catch (error) {
      await consumer.disconnect().catch(() => {});
      throw error;
    }
    const lane: Lane = {
      assigned: [],
      joined: () => joined && (rebalancingSince === undefined || Date.now() - rebalancingSince < REBALANCE_GRACE_MS),
      settled: () => joined && rebalancingSince === undefined,
      stop: async () => {
        clearInterval(watchTimer);
        await consumer.disconnect();
      },
    };
    lanes.push(lane);
    // In the group: joined, or rebalancing after it was (a rebalance counts as in for REBALANCE_GRACE_MS).
    let joined = false;
    let rebalancingSince: number | undefined;
    consumer.on(consumer.events.REBALANCING, () => {
      if (joined) rebalancingSince ??= Date.now();
      progress.release();
    });
    // A lane out of the group holds nothing: its partitions are no longer this consumer's through it.
    const left = () => {
      joined = false;
      rebalancingSince = undefined;
      progress.release();
      if (lane.assigned.length === 0) return;
      lane.assigned = [];
      // Stopping, the consumer is told nothing: it is going, not losing partitions to the others.
      if (running()) told();
    };
    consumer.on(consumer.events.CRASH, left);
    consumer.on(consumer.events.STOP, left);
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      joined = true;
      rebalancingSince = undefined;
      this.options.log?.('info', 'group_joined', {
        group: payload.groupId,
        partitions: Object.values(payload.memberAssignment).flat().length,
        ...(identity.fast.length > 0 ? { lane: 'fast' } : {}),
      });
      lane.assigned = Object.entries(payload.memberAssignment).flatMap(([topic, partitions]) =>
        partitions.map((partition) => ({ topic: topic.slice(this.prefix.length), partition })),
      );
      progress.release();
      told();
    });
    // A fetch loop that stops, or a batch stuck in its handler, is said out loud (KafkaJS says it at debug level only).
    // A rebalance may hold the fetch loop for up to its timeout: that alone is not a stall.
    const stallMs = Math.max(CONSUMER_STALL_MS, rebalanceTimeout + 10_000);
    const watch = new ConsumerWatch(options.group, (level, event, detail) => this.options.log?.(level, event, detail), Date.now(), stallMs);
    consumer.on(consumer.events.FETCH, () => watch.fetched(Date.now()));
    const watchTimer = setInterval(() => watch.check(Date.now()), CONSUMER_WATCH_EVERY_MS);
    watchTimer.unref();
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, Math.min(MAX_CONCURRENT_BATCHES, Math.floor(options.concurrentBatches ?? 1))),
      eachBatch: async (payload) => {
        const { topic, partition } = payload.batch;
        watch.batchStarted(topic, partition, Date.now());
        try {
          await this.handleBatch(
            payload,
            options,
            running,
            progress,
            // Unwrapped: a heartbeat refused (the group rebalancing) ends the wait.
            caughtUp(lane, () => payload.heartbeat()),
          );
        } finally {
          watch.batchEnded(topic, partition, Date.now());
        }
      },
    });
  }

  /**
   * `BatchContext.caughtUp` on Kafka: while another lane of this consumer holds the partition, waits
   * until it has handled the partition up to its high watermark when asked (what was published
   * there before, whatever each message's own time says), counting from the group's committed
   * offset where it has handled nothing since the last rebalance. False, at once or when the wait
   * ends, where it cannot tell: this lane holds the partition itself, no lane does, a lane is not
   * settled in the group, a rebalance or stop came (`LaneProgress`), Kafka did not answer within
   * KAFKA_ANSWER_MS, or MAX_CAUGHT_UP_WAIT_MS passed. The batch then goes on: its order is worth
   * less than its page.
   */
  private async caughtUp(
    group: string,
    lanes: readonly Lane[],
    of: Lane,
    progress: LaneProgress,
    { topic, partition }: { topic: string; partition: number },
    keepAlive: () => Promise<void>,
    running: () => boolean,
  ): Promise<boolean> {
    const key = `${topic}/${partition}`;
    const epoch = progress.epoch;
    if (!running() || holds(of, topic, partition) || !lanes.every((lane) => lane.settled())) return false;
    if (!lanes.some((lane) => holds(lane, topic, partition))) return false;
    const name = this.topicName(topic);
    const handled = progress.handledUpTo(key);
    const asked = Promise.all([
      this.admin.fetchTopicOffsets(name),
      handled === undefined ? this.admin.fetchOffsets({ groupId: `${this.prefix}${group}`, topics: [name] }) : undefined,
    ]);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), KAFKA_ANSWER_MS)));
    try {
      const answer = await Promise.race([asked, late]);
      if (answer === undefined) return false;
      const [ends, committed] = answer;
      const ofPartition = ends.find((p) => p.partition === partition);
      if (ofPartition === undefined) return false;
      let from = handled;
      if (from === undefined) {
        const offset = Number(committed?.flatMap((t) => t.partitions).find((p) => p.partition === partition)?.offset ?? -1);
        from = offset >= 0 ? offset : Number(ofPartition.low);
      }
      return await progress.until(key, Number(ofPartition.high), from, epoch, keepAlive);
    } catch (error) {
      this.options.log?.('warn', 'lane_wait_skipped', { topic, partition, error: redactSecrets(String(error)) });
      return false;
    } finally {
      clearTimeout(timer);
      asked.catch(() => {}); // answered after the race was lost: nobody waits for it
    }
  }

  async read(topic: string, options: ReadOptions = {}): Promise<IncomingMessage[]> {
    await this.connect();
    const name = this.topicName(topic);
    const offsets = await whileLeadersMove(() => this.admin.fetchTopicOffsets(name));
    const ends = new Map(offsets.map((p) => [p.partition, Number(p.high)]));
    const starts = new Map<number, number>();
    if (options.from === undefined) {
      for (const p of offsets) starts.set(p.partition, Number(p.low));
    } else {
      for (const p of await whileLeadersMove(() => this.admin.fetchTopicOffsetsByTimestamp(name, options.from))) {
        const offset = Number(p.offset);
        starts.set(p.partition, offset < 0 ? (ends.get(p.partition) ?? 0) : offset);
      }
    }
    if (options.key !== undefined) {
      // A key's messages are all on the partition the producer put them on: the others start at their end, unread.
      const only = kafkaPartitionOf(name, options.key, offsets.length);
      for (const [partition, end] of ends) if (partition !== only) starts.set(partition, end);
    }
    const pending = new Set([...ends].filter(([p, end]) => (starts.get(p) ?? end) < end).map(([p]) => p));
    if (pending.size === 0) return [];
    const to = options.to ?? Infinity;
    const key = options.key === undefined ? undefined : Buffer.from(options.key, 'utf8');
    const out: IncomingMessage[] = [];
    // kafkajs has no manual assignment: a throwaway group that never commits, seeked by hand.
    const group = `gpualert-reader-${randomUUID()}`;
    // Fetches of half a megabyte a partition: big enough to stream a day-long topic fast, small
    // enough that reading one hour pulls little past the hour's end.
    const consumer = this.kafka.consumer({
      groupId: group,
      maxWaitTimeInMs: 50,
      sessionTimeout: 10_000,
      heartbeatInterval: 3_000,
      maxBytesPerPartition: 512 * 1024,
    });
    let fetched = 0;
    let finish: () => void = () => {};
    const finished = new Promise<void>((resolve) => (finish = resolve));
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [name], fromBeginning: true });
      // Seek once the group is joined (seeking earlier throws); anything fetched before the seek
      // lands is filtered by offset below, so the seek only saves reading.
      consumer.on(consumer.events.GROUP_JOIN, () => {
        for (const [partition, offset] of starts) {
          try {
            consumer.seek({ topic: name, partition, offset: String(offset) });
          } catch {
            // the filter below still keeps the range exact
          }
        }
      });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          fetched += batch.messages.length;
          if (!pending.has(batch.partition)) return;
          const end = ends.get(batch.partition) ?? 0;
          const start = starts.get(batch.partition) ?? 0;
          for (const m of batch.messages) {
            const offset = Number(m.offset);
            const timestamp = Number(m.timestamp);
            if (offset < start) continue;
            if (offset >= end || timestamp > to) {
              pending.delete(batch.partition);
              break;
            }
            if (offset + 1 >= end) pending.delete(batch.partition);
            if (timestamp < (options.from ?? -Infinity)) continue;
            if (key !== undefined && (m.key === null || !key.equals(m.key))) continue;
            out.push({
              topic,
              partition: batch.partition,
              offset,
              key: m.key ? m.key.toString() : null,
              value: m.value ?? Buffer.alloc(0),
              headers: fromKafkaHeaders(m.headers),
              timestamp,
            });
          }
          if (pending.size === 0) finish();
        },
      });
      await finished;
    } finally {
      await consumer.disconnect();
      await this.admin.deleteGroups([group]).catch(() => {});
      options.fetched?.(fetched);
    }
    return out.sort((a, b) => a.timestamp - b.timestamp || a.partition - b.partition || a.offset - b.offset);
  }

  private async handleBatch(
    { batch, isRunning, isStale, resolveOffset, commitOffsetsIfNecessary, heartbeat }: EachBatchPayload,
    options: ConsumeOptions,
    running: () => boolean,
    progress: LaneProgress,
    caughtUp: CaughtUp,
  ): Promise<void> {
    const last = batch.messages.at(-1);
    if (last === undefined) return;
    const topic = batch.topic.slice(this.prefix.length);
    const messages = batch.messages.map((m): IncomingMessage => ({
      topic,
      partition: batch.partition,
      offset: Number(m.offset),
      key: m.key ? m.key.toString() : null,
      value: m.value ?? Buffer.alloc(0),
      headers: fromKafkaHeaders(m.headers),
      timestamp: Number(m.timestamp),
    }));
    const owned = (): boolean => running() && isRunning() && !isStale();
    const done = await retryBatch({
      messages,
      group: options.group,
      handler: options.handler,
      publish: (t, m) => this.publish(t, m),
      lag: Math.max(0, Number(batch.offsetLag())),
      caughtUp,
      onDeadLetter: options.onDeadLetter,
      stillOwned: owned,
      // Retries and isolating a poison message take seconds: the group must know this member lives.
      keepAlive: () => heartbeat().catch(() => {}),
      onError: (error, attempt) =>
        this.options.log?.('error', 'batch_failed', { topic, partition: batch.partition, attempt, error: redactSecrets(String(error)) }),
    });
    if (!done || isStale()) return;
    resolveOffset(last.offset);
    // Through the batch's own commit, which still works while a graceful stop drains this batch.
    await commitOffsetsIfNecessary({
      topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: String(Number(last.offset) + 1) }] }],
    });
    progress.handled(`${topic}/${batch.partition}`, Number(last.offset) + 1);
    // No explicit heartbeat here: the runner sends one between fetches at the configured interval,
    // and one more round trip per batch halves the rate of small batches.
  }

  /** Of these topics, the ones the cluster does not have (their full names, prefix included). */
  async missingTopics(topics: readonly string[]): Promise<string[]> {
    await this.connect();
    const existing = new Set(await this.admin.listTopics());
    return topics.map((t) => this.topicName(t)).filter((name) => !existing.has(name));
  }

  /** Kafka answers: a broker describes the cluster (the caller bounds the wait). */
  async ready(): Promise<string | undefined> {
    try {
      await this.connect();
      const cluster = await this.admin.describeCluster();
      return cluster.brokers.length > 0 ? undefined : 'Kafka answered with no brokers';
    } catch (error) {
      return `Kafka not reachable: ${error instanceof Error ? error.message : String(error)}`;
    }
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.subscriptions].map((s) => s.stop()));
    if (this.connecting) {
      await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect()]);
    }
    this.connecting = undefined;
  }

  private connect(): Promise<void> {
    if (!this.connecting) {
      const attempt = Promise.all([this.producer.connect(), this.admin.connect()]).then(() => undefined);
      // A failed first connection must not poison later calls: forget it so the next call retries.
      attempt.catch(() => {
        if (this.connecting === attempt) this.connecting = undefined;
      });
      this.connecting = attempt;
    }
    return this.connecting;
  }
}

const MAX_REQUEST_BYTES = 512 * 1024;
/** Replicas of a new topic when not set: what production runs (with `min.insync.replicas=2`, one broker may die). */
const DEFAULT_REPLICATION_FACTOR = 3;
/** How often a consumer's watch looks (CONSUMER_STALL_MS is how long it lets a stall go). */
const CONSUMER_WATCH_EVERY_MS = 5_000;
/** A rebalance of a group the consumer was in counts as in for this long (readiness): longer, it is stuck, not rebalancing. */
const REBALANCE_GRACE_MS = 30_000;
/** The most batches a handler is given at once (`concurrentBatches`). */
const MAX_CONCURRENT_BATCHES = 256;
/** How long `caughtUp` waits for Kafka to say where a partition stands before the batch goes on. */
const KAFKA_ANSWER_MS = 2_000;

/** How long a read waits for a partition's leader to settle (a topic just created, a broker just back). */
const LEADER_WAIT_ATTEMPTS = 20;
const LEADER_WAIT_MS = 250;

/**
 * An admin call retried while Kafka answers that a partition's leader is elsewhere or not known
 * yet (KafkaJS marks those `retriable`: NOT_LEADER_FOR_PARTITION, UNKNOWN_TOPIC_OR_PARTITION,
 * LEADER_NOT_AVAILABLE), at most LEADER_WAIT_ATTEMPTS × LEADER_WAIT_MS; any other error at once.
 */
async function whileLeadersMove<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      const retriable = (error as { retriable?: unknown }).retriable === true;
      if (!retriable || attempt >= LEADER_WAIT_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, LEADER_WAIT_MS));
    }
  }
}

function sizeOf(messages: readonly Message[]): number {
  let bytes = 0;
  for (const m of messages)
    bytes += (m.value ? Buffer.byteLength(m.value as string | Buffer) : 0) + (m.key ? Buffer.byteLength(m.key as string | Buffer) : 0) + 64;
  return bytes;
}

/** The sends cut into produce requests of at most MAX_REQUEST_BYTES, messages kept in order. */
function requests(sends: readonly PendingSend[]): { topic: string; messages: Message[] }[][] {
  const out: { topic: string; messages: Message[] }[][] = [];
  let current = new Map<string, Message[]>();
  let bytes = 0;
  for (const send of sends) {
    for (const message of send.messages) {
      const size = sizeOf([message]);
      if (bytes > 0 && bytes + size > MAX_REQUEST_BYTES) {
        out.push([...current].map(([topic, messages]) => ({ topic, messages })));
        current = new Map();
        bytes = 0;
      }
      const list = current.get(send.topic) ?? [];
      list.push(message);
      current.set(send.topic, list);
      bytes += size;
    }
  }
  if (bytes > 0) out.push([...current].map(([topic, messages]) => ({ topic, messages })));
  return out;
}

function toKafkaMessage(message: OutgoingMessage): Message {
  const out: Message = {
    key: message.key,
    value: typeof message.value === 'string' ? message.value : Buffer.from(message.value),
  };
  if (message.headers) out.headers = { ...message.headers };
  if (message.timestamp !== undefined) out.timestamp = String(message.timestamp);
  return out;
}

function fromKafkaHeaders(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.map(String).join(',') : String(value);
  }
  return out;
}
