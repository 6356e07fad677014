import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { redactSecrets } from '@gpualert/log';
import { must } from '@gpualert/schema';
import type { Bus, ConsumeOptions, IncomingMessage, OutgoingMessage, ReadOptions, Subscription } from './bus.ts';
import { partitionFor } from './partition-for.ts';
import { retryBatch } from './retry-batch.ts';
import { CAUGHT_UP_BEAT_MS, MAX_CAUGHT_UP_WAIT_MS } from './lane-progress.ts';

export interface MemoryBusOptions {
  readonly partitions?: number;
  readonly maxBatchSize?: number;
  /** Messages kept per partition; the oldest are dropped past it (the embedded log is bounded). */
  readonly retainPerPartition?: number;
  readonly onError?: (event: string, detail: Record<string, unknown>) => void;
  /**
   * Where the embedded log is kept (one JSONL file per topic, and the groups' offsets), so a
   * restart resumes and a timeline can be read afterwards. None: memory only.
   */
  readonly dataDir?: string;
}

/** One stored message: partition, offset, key, timestamp, headers, value (base64). */
interface StoredLine {
  p: number;
  o: number;
  k: string | null;
  t: number;
  h: Record<string, string>;
  v: string;
}

interface PartitionLog {
  /** Offset of messages[0]. */
  start: number;
  messages: IncomingMessage[];
}

interface Member {
  readonly id: number;
  /** The options of this member's lane: its topics, and no `onAssignment` (the consumer's is told once per rebalance). */
  readonly options: ConsumeOptions;
  /** The consumer it is a lane of, shared by its lanes: `onAssignment` and `caughtUp` look at them together. */
  readonly consumer: Consumer;
  assigned: { topic: string; partition: number }[];
  generation: number;
  alive: boolean;
  /** Where the next search for work starts, so one busy partition cannot starve the others. */
  cursor: number;
}

interface Consumer {
  readonly onAssignment: ConsumeOptions['onAssignment'];
  readonly lanes: Member[];
}

interface Group {
  readonly id: string;
  members: Member[];
  generation: number;
  readonly committed: Map<string, number>;
}

/**
 * The embedded bus: Kafka's semantics (partitions by key, consumer groups with committed offsets,
 * redelivery after a member dies, dead-lettering) inside one process, for `gpualert up`.
 */
export class MemoryBus implements Bus {
  readonly kind = 'memory' as const;
  private readonly topics = new Map<string, PartitionLog[]>();
  private readonly groups = new Map<string, Group>();
  private readonly partitions: number;
  private readonly maxBatchSize: number;
  private readonly retain: number;
  private readonly onError: NonNullable<MemoryBusOptions['onError']>;
  private wake: (() => void)[] = [];
  /** Batches waiting for another lane (caughtUp): only then does a commit wake the waiting. */
  private laneWaits = 0;
  private nextMemberId = 1;
  private closed = false;

  constructor(options: MemoryBusOptions = {}) {
    this.partitions = options.partitions ?? 4;
    this.maxBatchSize = options.maxBatchSize ?? 500;
    this.retain = options.retainPerPartition ?? 200_000;
    this.onError = options.onError ?? (() => {});
    this.dataDir = options.dataDir;
    if (this.dataDir) this.load(this.dataDir);
  }

  private readonly dataDir: string | undefined;

  private static fileOf(dir: string, topic: string): string {
    return join(dir, `${topic.replace(/[^A-Za-z0-9._-]/g, '_')}.jsonl`);
  }

  /** Rebuilds the logs and the groups' committed offsets from the data directory. */
  private load(dir: string): void {
    mkdirSync(dir, { recursive: true });
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.jsonl'))) {
      const topic = file.slice(0, -'.jsonl'.length);
      const logs = this.logOf(topic);
      for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
        if (line === '') continue;
        let stored: StoredLine;
        try {
          stored = JSON.parse(line) as StoredLine;
        } catch {
          continue; // a line cut by a crash mid-write
        }
        while (logs.length <= stored.p) logs.push({ start: 0, messages: [] }); // written with more partitions
        const log = must(logs[stored.p], 'the partitions up to this one were just made');
        log.messages.push({
          topic,
          partition: stored.p,
          offset: stored.o,
          key: stored.k,
          value: Buffer.from(stored.v, 'base64'),
          headers: stored.h,
          timestamp: stored.t,
        });
        if (log.messages.length === 1) log.start = stored.o;
        if (log.messages.length > this.retain) {
          log.messages.shift();
          log.start += 1;
        }
      }
    }
    const groups = join(dir, 'groups.json');
    if (existsSync(groups)) {
      for (const [id, committed] of Object.entries(JSON.parse(readFileSync(groups, 'utf8')) as Record<string, Record<string, number>>)) {
        const group = this.groupOf(id);
        for (const [key, offset] of Object.entries(committed)) group.committed.set(key, offset);
      }
    }
  }

  private saveGroups(): void {
    if (!this.dataDir) return;
    const out: Record<string, Record<string, number>> = {};
    for (const [id, group] of this.groups) out[id] = Object.fromEntries(group.committed);
    writeFileSync(join(this.dataDir, 'groups.json'), JSON.stringify(out));
  }

  async ensureTopics(topics: readonly string[]): Promise<void> {
    for (const topic of topics) this.logOf(topic);
  }

  async publish(topic: string, messages: readonly OutgoingMessage[]): Promise<void> {
    if (this.closed) throw new Error('the bus is closed');
    const logs = this.logOf(topic);
    const created: IncomingMessage[] = [];
    for (const message of messages) {
      const partition = partitionFor(message.key, logs.length);
      const log = must(logs[partition], 'partitionFor picks one of the partitions');
      const stored: IncomingMessage = {
        topic,
        partition,
        offset: log.start + log.messages.length,
        key: message.key,
        value: Buffer.from(message.value),
        headers: { ...message.headers },
        timestamp: message.timestamp ?? Date.now(),
      };
      log.messages.push(stored);
      created.push(stored);
      if (log.messages.length > this.retain) {
        const drop = log.messages.length - this.retain;
        log.messages.splice(0, drop);
        log.start += drop;
      }
    }
    if (this.dataDir && created.length > 0) {
      // Durable before the publish resolves, as Kafka's acks are.
      const lines = created.map((m) =>
        JSON.stringify({ p: m.partition, o: m.offset, k: m.key, t: m.timestamp, h: m.headers, v: m.value.toString('base64') } satisfies StoredLine),
      );
      appendFileSync(MemoryBus.fileOf(this.dataDir, topic), `${lines.join('\n')}\n`);
    }
    this.notify();
  }

  async consume(options: ConsumeOptions): Promise<Subscription> {
    for (const topic of options.topics) this.logOf(topic);
    const group = this.groupOf(options.group);
    // A lane of its own for the fast topics (a member of the group in all but name), the rest in the other.
    const fast = new Set((options.fastTopics ?? []).filter((t) => options.topics.includes(t)));
    const slow = options.topics.filter((t) => !fast.has(t));
    const consumer: Consumer = { onAssignment: options.onAssignment, lanes: [] };
    for (const topics of [slow, [...fast]].filter((t) => t.length > 0)) {
      const { onAssignment: _told, ...laneOptions } = options;
      consumer.lanes.push({ id: this.nextMemberId++, consumer, options: { ...laneOptions, topics }, assigned: [], generation: 0, alive: true, cursor: 0 });
    }
    group.members.push(...consumer.lanes);
    this.rebalance(group);
    const loops = consumer.lanes.map((member) => this.run(group, member));
    return {
      // In the process, a member is in its group from the moment it joins until it stops.
      joined: () => consumer.lanes.every((member) => member.alive) && !this.closed,
      stop: async () => {
        for (const member of consumer.lanes) member.alive = false;
        this.notify();
        await Promise.all(loops);
        for (const member of consumer.lanes) this.leave(group, member);
      },
    };
  }

  async ready(): Promise<string | undefined> {
    return this.closed ? 'the bus is closed' : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const group of this.groups.values()) for (const member of group.members) member.alive = false;
    this.notify();
  }

  async read(topic: string, options: ReadOptions = {}): Promise<IncomingMessage[]> {
    const from = options.from ?? -Infinity;
    const to = options.to ?? Infinity;
    const out: IncomingMessage[] = [];
    let fetched = 0;
    for (const log of this.topics.get(topic) ?? []) {
      // Timestamps mostly rise along a log: find the first one in range, and stop well past the end.
      for (let i = firstAtOrAfter(log.messages, from), m = log.messages[i]; m !== undefined; m = log.messages[++i]) {
        fetched += 1;
        if (m.timestamp > to) break;
        if (m.timestamp >= from && (options.key === undefined || m.key === options.key)) out.push(m);
      }
    }
    options.fetched?.(fetched);
    return out.sort((a, b) => a.timestamp - b.timestamp || a.partition - b.partition || a.offset - b.offset);
  }

  private async run(group: Group, member: Member): Promise<void> {
    const sessionTimeoutMs = member.options.sessionTimeoutMs ?? 30_000;
    while (member.alive && !this.closed) {
      const work = this.nextBatch(group, member);
      if (!work) {
        await new Promise<void>((resolve) => this.wake.push(resolve));
        continue;
      }
      const { key, messages, generation, lag } = work;
      const owned = (): boolean => !this.closed && member.generation === generation && group.members.includes(member);
      // A member whose handler outlives the session without a sign of life between attempts is
      // taken for dead, like a Kafka member that stopped heartbeating: its partitions go to the
      // others and its late commit is refused.
      const session = sessionWatch(sessionTimeoutMs);
      const batch = retryBatch({
        messages,
        caughtUp: (topic, partition) =>
          this.caughtUp(group, member, { topic, partition }, owned, () => session.beat(), Math.min(CAUGHT_UP_BEAT_MS, sessionTimeoutMs / 3)),
        group: group.id,
        handler: member.options.handler,
        publish: (t, m) => this.publish(t, m),
        lag,
        onDeadLetter: member.options.onDeadLetter,
        stillOwned: owned,
        keepAlive: async () => session.beat(),
        onError: (error, attempt) => this.onError('batch_failed', { group: group.id, key, attempt, error: redactSecrets(String(error)) }),
      });
      const outcome = await Promise.race([batch, session.expired]);
      session.stop();
      if (outcome === 'timeout') {
        this.onError('member_session_timeout', { group: group.id, member: member.id });
        this.evict(group, member);
        await batch;
        return;
      }
      const last = messages.at(-1);
      if (outcome && owned() && last !== undefined) {
        group.committed.set(key, last.offset + 1);
        this.saveGroups();
        if (this.laneWaits > 0) this.notify(); // a lane waits for a partition (caughtUp)
      }
    }
  }

  /** `BatchContext.caughtUp`: waits while another lane of `member`'s consumer holds the partition and has not handled what it held when asked (at most MAX_CAUGHT_UP_WAIT_MS); true once it has. */
  private async caughtUp(
    group: Group,
    member: Member,
    { topic, partition }: { topic: string; partition: number },
    owned: () => boolean,
    beat: () => void,
    beatEveryMs: number,
  ): Promise<boolean> {
    const holder = member.consumer.lanes.find((lane) => lane.assigned.some((a) => a.topic === topic && a.partition === partition));
    const log = this.topics.get(topic)?.[partition];
    if (!holder || holder === member || !log) return false;
    const key = `${topic}/${partition}`;
    const end = log.start + log.messages.length;
    const reached = () => (group.committed.get(key) ?? log.start) >= end;
    const until = Date.now() + MAX_CAUGHT_UP_WAIT_MS;
    this.laneWaits += 1;
    try {
      while (owned() && holder.alive && holder.generation === member.generation && !reached() && Date.now() < until) {
        await new Promise<void>((resolve) => {
          const woken = () => {
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(() => {
            this.wake = this.wake.filter((w) => w !== woken);
            resolve();
          }, beatEveryMs);
          this.wake.push(woken);
        });
        beat();
      }
      return reached();
    } finally {
      this.laneWaits -= 1;
    }
  }

  private nextBatch(group: Group, member: Member) {
    const count = member.assigned.length;
    for (let i = 0; i < count; i += 1) {
      const { topic, partition } = must(member.assigned[(member.cursor + i) % count], 'i < count');
      const log = must(this.topics.get(topic)?.[partition], 'rebalance assigns only partitions that exist');
      const key = `${topic}/${partition}`;
      const end = log.start + log.messages.length;
      let position = group.committed.get(key);
      if (position === undefined) {
        position = member.options.fromBeginning === false ? end : log.start;
        group.committed.set(key, position);
      }
      position = Math.max(position, log.start);
      if (position < end) {
        const from = position - log.start;
        const messages = log.messages.slice(from, from + this.maxBatchSize);
        member.cursor = (member.cursor + i + 1) % count;
        return { key, messages, generation: member.generation, lag: end - (position + messages.length) };
      }
    }
    return undefined;
  }

  private rebalance(group: Group): void {
    group.generation += 1;
    const live = group.members;
    const topics = [...new Set(live.flatMap((m) => m.options.topics))].sort();
    for (const member of live) {
      member.assigned = [];
      member.generation = group.generation;
    }
    // Partition p of every topic to one member, as Kafka's co-partitioned assigner does: one host, one member.
    for (const topic of topics) {
      const count = this.topics.get(topic)?.length ?? 0; // consume made the topic's log
      const eligible = live.filter((m) => m.options.topics.includes(topic));
      for (let partition = 0; partition < count; partition += 1) eligible[partition % eligible.length]?.assigned.push({ topic, partition });
    }
    // Each consumer told once, of every lane's partitions.
    for (const consumer of new Set(live.map((m) => m.consumer)))
      consumer.onAssignment?.(consumer.lanes.filter((lane) => live.includes(lane)).flatMap((lane) => lane.assigned));
    this.notify();
  }

  private evict(group: Group, member: Member): void {
    member.alive = false;
    this.leave(group, member);
  }

  private leave(group: Group, member: Member): void {
    if (!group.members.includes(member)) return;
    group.members = group.members.filter((m) => m !== member);
    this.rebalance(group);
  }

  private logOf(topic: string): PartitionLog[] {
    let logs = this.topics.get(topic);
    if (!logs) {
      logs = Array.from({ length: this.partitions }, () => ({ start: 0, messages: [] }));
      this.topics.set(topic, logs);
    }
    return logs;
  }

  private groupOf(id: string): Group {
    let group = this.groups.get(id);
    if (!group) {
      group = { id, members: [], generation: 0, committed: new Map() };
      this.groups.set(id, group);
    }
    return group;
  }

  private notify(): void {
    const waiting = this.wake;
    this.wake = [];
    for (const resolve of waiting) resolve();
  }
}

/** Binary search over a log ordered (mostly) by timestamp, as Kafka's time index does. */
function firstAtOrAfter(messages: readonly IncomingMessage[], at: number): number {
  let low = 0;
  let high = messages.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    if (must(messages[mid], 'low <= mid < high <= length').timestamp < at) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** A session that expires `timeoutMs` after its last beat. */
function sessionWatch(timeoutMs: number): { beat(): void; stop(): void; expired: Promise<'timeout'> } {
  let last = Date.now();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<'timeout'>((resolve) => {
    const check = () => {
      const left = last + timeoutMs - Date.now();
      if (left <= 0) resolve('timeout');
      else (timer = setTimeout(check, left)).unref();
    };
    check();
  });
  return { beat: () => void (last = Date.now()), stop: () => clearTimeout(timer), expired };
}
