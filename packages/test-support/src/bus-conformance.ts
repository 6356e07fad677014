import {
  DEADLETTER_HEADERS,
  deadletterMessages,
  envelopeMessage,
  MAX_ALONE_ATTEMPTS,
  MAX_HANDLER_ATTEMPTS,
  pipelineFingerprint,
  RetriableError,
  type Batch,
  type Bus,
  type Subscription,
} from '@gpualert/bus';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from './wait-for.ts';

/** A fresh, isolated bus per test (its own topic prefix on a shared broker). */
export type BusFactory = () => Promise<Bus>;

interface Received {
  readonly host: string;
  readonly seq: number;
  readonly key: string | null;
}

function line(host: string, seq: number) {
  return envelopeMessage(newEnvelope({ type: 'kernel.line', host, source: 'conformance', data: { line: `seq ${seq}` } }));
}

function received(batch: Batch): Received[] {
  return batch.items.map(({ envelope, message }) => ({
    host: envelope.host,
    seq: envelope.type === 'kernel.line' ? Number(envelope.data.line.slice(4)) : -1,
    key: message.key,
  }));
}

const TOPIC = 'conformance.events';

type Held = readonly { readonly topic: string; readonly partition: number }[];

/** Whether every holder holds some partitions and, together, as many as `topics` topics have (partitions 0..max held). */
function holdEveryPartition(owned: readonly Held[], topics: number): boolean {
  return owned.every((p) => p.length > 0) && owned.reduce((n, p) => n + p.length, 0) === topics * Math.max(...owned.flat().map((p) => p.partition + 1));
}

/** The partition numbers of `topic` among `partitions`, in order. */
function partitionNumbers(partitions: Held, topic: string): number[] {
  return partitions
    .filter((p) => p.topic === topic)
    .map((p) => p.partition)
    .sort();
}

/**
 * How long a test waits for a group to settle after members join or die. A Kafka rebalance waits
 * up to the rebalance timeout (30 s) for every member to rejoin, more on a loaded machine; the
 * waits end as soon as the condition holds.
 */
const REBALANCE_MS = 120_000;
/** For a test that waits on a rebalance more than once. */
const REBALANCE_TEST_MS = 3 * REBALANCE_MS;

/**
 * One suite every Bus adapter passes: the embedded bus is a product feature held to the same
 * contract as Kafka, not a test double.
 */
export function busConformance(name: string, makeBus: BusFactory, sessionTimeoutMs: number): void {
  describe(`Bus conformance: ${name}`, () => {
    const open: Bus[] = [];
    const subscriptions: Subscription[] = [];
    async function bus(): Promise<Bus> {
      const b = await makeBus();
      open.push(b);
      await b.ensureTopics([TOPIC, TOPICS.deadletter]);
      return b;
    }
    afterEach(async () => {
      await Promise.allSettled(subscriptions.splice(0).map((s) => s.stop()));
      await Promise.allSettled(open.splice(0).map((b) => b.close()));
    });

    it('round-trips envelopes with their host as key', async () => {
      const b = await bus();
      const got: Received[] = [];
      subscriptions.push(await b.consume({ group: 'g1', topics: [TOPIC], handler: async (batch) => void got.push(...received(batch)) }));
      await b.publish(TOPIC, [line('h1', 1), line('h2', 2), line('h3', 3)]);
      await waitFor(() => got.length === 3, 'three messages');
      expect(got.map((r) => [r.host, r.key, r.seq]).sort()).toEqual([
        ['h1', 'h1', 1],
        ['h2', 'h2', 2],
        ['h3', 'h3', 3],
      ]);
    });

    it('keeps each host in order across many publishes', async () => {
      const b = await bus();
      const got: Received[] = [];
      subscriptions.push(await b.consume({ group: 'g1', topics: [TOPIC], handler: async (batch) => void got.push(...received(batch)) }));
      const hosts = ['a', 'b', 'c', 'd', 'e'];
      for (let round = 0; round < 20; round += 1) {
        await b.publish(
          TOPIC,
          hosts.flatMap((h) => [line(h, round * 2), line(h, round * 2 + 1)]),
        );
      }
      await waitFor(() => got.length === 200, '200 messages');
      for (const host of hosts) {
        expect(got.filter((r) => r.host === host).map((r) => r.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i));
      }
    });

    it(
      'shares partitions between two members of a group',
      async () => {
        const b = await bus();
        const byMember: Received[][] = [[], []];
        for (const member of [0, 1]) {
          subscriptions.push(await b.consume({ group: 'shared', topics: [TOPIC], handler: async (batch) => void byMember[member]!.push(...received(batch)) }));
        }
        const hosts = Array.from({ length: 24 }, (_, i) => `host-${i}`);
        let seq = 0;
        // Keep publishing until the group has settled and both members have work.
        await waitFor(
          async () => {
            await b.publish(
              TOPIC,
              hosts.map((h) => line(h, seq)),
            );
            seq += 1;
            return byMember[0]!.length > 0 && byMember[1]!.length > 0;
          },
          'both members to receive messages',
          REBALANCE_MS,
        );
        // Once settled, one host belongs to one member: a round published after both had work
        // (earlier ones may straddle the rebalance, and be handled again by the new owner).
        await b.publish(
          TOPIC,
          hosts.map((h) => line(h, seq)),
        );
        seq += 1;
        const all = new Set<string>();
        await waitFor(
          () => {
            for (const r of [...byMember[0]!, ...byMember[1]!]) all.add(`${r.host}/${r.seq}`);
            return all.size === hosts.length * seq;
          },
          'every message',
          REBALANCE_MS,
        );
        const late = (member: number) => new Set(byMember[member]!.filter((r) => r.seq === seq - 1).map((r) => r.host));
        expect([...late(0)].filter((h) => late(1).has(h))).toEqual([]);
      },
      REBALANCE_TEST_MS,
    );

    it(
      'tells each member which partitions it owns after every rebalance, and how far behind each batch is',
      async () => {
        const b = await bus();
        const owned: string[][][] = [[], []];
        const lags: number[] = [];
        const track = (member: number) => (partitions: readonly { topic: string; partition: number }[]) =>
          void owned[member]!.push(partitions.map((p) => `${p.topic}/${p.partition}`).sort());
        await b.publish(
          TOPIC,
          Array.from({ length: 1_200 }, (_, i) => line('one-host', i)),
        );
        subscriptions.push(
          await b.consume({ group: 'assigned', topics: [TOPIC], onAssignment: track(0), handler: async (batch) => void lags.push(batch.lag) }),
        );
        await waitFor(() => owned[0]!.length > 0 && lags.length > 0 && lags.at(-1) === 0, 'the first member to own partitions and catch up', REBALANCE_MS);
        const partitions = owned[0]!.at(-1)!.length;
        expect(partitions).toBeGreaterThan(1);
        // One host, one partition: its first batch saw what was left after it, the last saw nothing.
        expect(lags.at(-1)).toBe(0);
        expect(lags.length === 1 || lags[0]! > 0).toBe(true);
        subscriptions.push(await b.consume({ group: 'assigned', topics: [TOPIC], onAssignment: track(1), handler: async () => {} }));
        await waitFor(
          () => {
            const [a, c] = [owned[0]!.at(-1) ?? [], owned[1]!.at(-1) ?? []];
            return a.length > 0 && c.length > 0 && a.length + c.length === partitions && a.every((p) => !c.includes(p));
          },
          'the two members to split the partitions',
          REBALANCE_MS,
        );
      },
      REBALANCE_TEST_MS,
    );

    it(
      'gives one member partition p of every topic, so a host is never split between members',
      async () => {
        const b = await bus();
        const other = 'conformance.other';
        await b.ensureTopics([other]);
        const owned: (readonly { topic: string; partition: number }[])[] = [[], [], []];
        for (const member of [0, 1, 2]) {
          subscriptions.push(await b.consume({ group: 'co', topics: [TOPIC, other], onAssignment: (p) => void (owned[member] = p), handler: async () => {} }));
        }
        await waitFor(() => holdEveryPartition(owned, 2), 'three members to hold every partition', REBALANCE_MS);
        for (const partitions of owned) expect(partitionNumbers(partitions, TOPIC)).toEqual(partitionNumbers(partitions, other));
      },
      REBALANCE_TEST_MS,
    );

    it(
      "reads fast topics in a lane of their own: a fast topic's batch is handled while a batch of the others is still in the handler, and each consumer holds partition p of every topic",
      async () => {
        const b = await bus();
        const fast = 'conformance.fast';
        await b.ensureTopics([fast]);
        let release: () => void = () => {};
        const stuck = new Promise<void>((resolve) => (release = resolve));
        const slowGot: Received[] = [];
        const fastGot: Received[] = [];
        const owned: (readonly { topic: string; partition: number }[])[] = [[], []];
        for (const consumer of [0, 1]) {
          subscriptions.push(
            await b.consume({
              group: 'lanes',
              topics: [TOPIC, fast],
              fastTopics: [fast],
              concurrentBatches: 8,
              onAssignment: (p) => void (owned[consumer] = p),
              handler: async (batch) => {
                if (batch.topic === fast) return void fastGot.push(...received(batch));
                slowGot.push(...received(batch));
                await stuck;
              },
            }),
          );
        }
        // Every partition of both topics held, and by one consumer: partition p of each by the same one.
        await waitFor(() => holdEveryPartition(owned, 2), 'two consumers to hold every partition of both topics', REBALANCE_MS);
        for (const partitions of owned) {
          expect(partitionNumbers(partitions, TOPIC).length).toBeGreaterThan(0);
          expect(partitionNumbers(partitions, fast)).toEqual(partitionNumbers(partitions, TOPIC));
        }
        // No partition held by both.
        const [first, second] = owned.map((partitions) => new Set(partitions.map((p) => `${p.topic}/${p.partition}`)));
        expect([...first!].filter((p) => second!.has(p))).toEqual([]);
        await b.publish(TOPIC, [line('h1', 1)]);
        await waitFor(() => slowGot.length === 1, 'the slow batch to be in the handler', REBALANCE_MS);
        await b.publish(fast, [line('h1', 2)]);
        await waitFor(() => fastGot.length === 1, "the fast topic's batch, while the other is still held", REBALANCE_MS);
        expect(fastGot.map((r) => [r.host, r.seq])).toEqual([['h1', 2]]);
        release();
      },
      REBALANCE_TEST_MS,
    );

    it(
      "lets a fast lane's batch wait until the other lane has handled what its partition held when asked (caughtUp)",
      async () => {
        const b = await bus();
        const fast = 'conformance.fast';
        await b.ensureTopics([fast]);
        let release: () => void = () => {};
        const stuck = new Promise<void>((resolve) => (release = resolve));
        const events: string[] = [];
        subscriptions.push(
          await b.consume({
            group: 'caught-up',
            topics: [TOPIC, fast],
            fastTopics: [fast],
            handler: async (batch, context) => {
              if (batch.topic === fast) {
                events.push('fast asked');
                const caught = await context.caughtUp(TOPIC);
                return void events.push(`fast went on, caught up: ${caught}`);
              }
              events.push(
                `slow ${received(batch)
                  .map((r) => r.seq)
                  .join(',')} started`,
              );
              await stuck;
              events.push('slow handled');
            },
          }),
        );
        await b.publish(TOPIC, [line('h1', 1)]);
        await waitFor(() => events.length === 1, 'the slow batch to be in the handler', REBALANCE_MS);
        await b.publish(fast, [line('h1', 2)]);
        await waitFor(() => events.includes('fast asked'), 'the fast batch to ask', REBALANCE_MS);
        // Time enough for a wait that does not wait to be seen going on before the slow batch is done.
        await new Promise((resolve) => setTimeout(resolve, 500));
        release();
        await waitFor(() => events.some((e) => e.startsWith('fast went on')), 'the fast batch to go on', REBALANCE_MS);
        expect(events).toEqual(['slow 1 started', 'fast asked', 'slow handled', 'fast went on, caught up: true']);
      },
      REBALANCE_TEST_MS,
    );

    it(
      'redelivers the batch of a member that died mid-batch to the survivor, losing nothing',
      async () => {
        const b = await bus();
        let release: () => void = () => {};
        const stuck = new Promise<void>((resolve) => (release = resolve));
        const held: Received[] = [];
        const survivor: Received[] = [];
        subscriptions.push(
          await b.consume({
            group: 'crash',
            topics: [TOPIC],
            sessionTimeoutMs,
            handler: async (batch) => {
              held.push(...received(batch));
              await stuck; // never returns while the test runs: this member is dead to the group
            },
          }),
        );
        subscriptions.push(
          await b.consume({ group: 'crash', topics: [TOPIC], sessionTimeoutMs, handler: async (batch) => void survivor.push(...received(batch)) }),
        );
        const hosts = Array.from({ length: 16 }, (_, i) => `host-${i}`);
        const published = new Set<string>();
        let seq = 0;
        await waitFor(
          async () => {
            await b.publish(
              TOPIC,
              hosts.map((h) => line(h, seq)),
            );
            for (const h of hosts) published.add(`${h}/${seq}`);
            seq += 1;
            return held.length > 0;
          },
          'the doomed member to take a batch',
          REBALANCE_MS,
        );
        await waitFor(
          () => {
            const seen = new Set(survivor.map((r) => `${r.host}/${r.seq}`));
            return [...published].every((id) => seen.has(id));
          },
          "the survivor to receive every message, the dead member's batch included",
          sessionTimeoutMs * 10 + REBALANCE_MS,
        );
        const seen = new Set(survivor.map((r) => `${r.host}/${r.seq}`));
        for (const r of held) expect(seen.has(`${r.host}/${r.seq}`)).toBe(true);
        release();
      },
      REBALANCE_TEST_MS,
    );

    it('sends a malformed message to the dead-letter topic with its reason and goes on', async () => {
      const b = await bus();
      const got: Received[] = [];
      subscriptions.push(await b.consume({ group: 'dl', topics: [TOPIC], handler: async (batch) => void got.push(...received(batch)) }));
      const broken = JSON.stringify({ ...JSON.parse(String(line('h1', 0).value)), ts: 'yesterday' });
      await b.publish(TOPIC, [line('h1', 1), { key: 'h1', value: Buffer.from([0x7b, 0x22, 0xff]) }, { key: 'h1', value: broken }, line('h1', 2)]);
      await waitFor(() => got.length === 2, 'the two valid messages');
      expect(got.map((r) => r.seq)).toEqual([1, 2]);
      let dead = await b.read(TOPICS.deadletter);
      await waitFor(async () => (dead = await b.read(TOPICS.deadletter)).length === 2, 'two dead letters');
      dead.sort((x, y) => Number(x.headers[DEADLETTER_HEADERS.offset]) - Number(y.headers[DEADLETTER_HEADERS.offset]));
      expect([...dead[0]!.value]).toEqual([0x7b, 0x22, 0xff]);
      expect(dead[0]!.headers[DEADLETTER_HEADERS.reason]).toMatch(/^message: expected UTF-8 text/);
      expect(dead[0]!.headers[DEADLETTER_HEADERS.topic]).toBe(TOPIC);
      expect(dead[0]!.key).toBe('h1');
      expect(dead[1]!.value.toString()).toBe(broken);
      expect(dead[1]!.headers[DEADLETTER_HEADERS.reason]).toBe('ts: expected an ISO-8601 timestamp, got string "yesterday"');
    });

    it('sets aside a message the handler fails on: the rest is handled in order, the poison is dead-lettered with the error, and a pipeline alert fires once', async () => {
      const b = await bus();
      await b.ensureTopics([TOPICS.alerts]);
      const group = 'poison';
      const got: Received[] = [];
      const counted = async () =>
        (await deadletterMessages.get()).values.find((v) => v.labels.group === group && v.labels.reason === 'handler_failed')?.value ?? 0;
      const before = await counted();
      subscriptions.push(
        await b.consume({
          group,
          topics: [TOPIC],
          handler: async (batch) => {
            const bad = batch.items.find(({ envelope }) => envelope.type === 'kernel.line' && envelope.data.line.startsWith('poison'));
            if (bad) throw new TypeError(`Cannot read properties of undefined (reading 'gpus') at ${bad.envelope.host}`);
            got.push(...received(batch));
          },
        }),
      );
      const poisonA = line('h1', 0);
      const poisonB = line('h2', 0);
      const bad = (m: typeof poisonA, seq: number) => ({ ...m, value: String(m.value).replace(`"seq ${0}"`, `"poison ${seq}"`) });
      await b.publish(TOPIC, [line('h1', 1), bad(poisonA, 2), line('h1', 3), line('h2', 4), bad(poisonB, 5), line('h2', 6), line('h3', 7)]);
      await waitFor(() => got.length === 5, 'the five good messages', 60_000);
      // A later message on the same partitions goes through: nothing is stalled.
      await b.publish(TOPIC, [line('h1', 8), line('h2', 9)]);
      await waitFor(() => got.length === 7, 'the messages after the poison');
      expect(got.filter((r) => r.host === 'h1').map((r) => r.seq)).toEqual([1, 3, 8]);
      expect(got.filter((r) => r.host === 'h2').map((r) => r.seq)).toEqual([4, 6, 9]);
      let dead = await b.read(TOPICS.deadletter);
      await waitFor(async () => (dead = await b.read(TOPICS.deadletter)).length === 2, 'two dead letters');
      dead.sort((x, y) => x.key!.localeCompare(y.key!));
      expect(dead.map((d) => d.value.toString())).toEqual([bad(poisonA, 2).value, bad(poisonB, 5).value]);
      for (const d of dead) {
        expect(d.headers[DEADLETTER_HEADERS.reason]).toMatch(
          /^handler of poison failed: TypeError: Cannot read properties of undefined \(reading 'gpus'\) at h[12]$/,
        );
        expect(d.headers[DEADLETTER_HEADERS.group]).toBe(group);
        expect(d.headers[DEADLETTER_HEADERS.topic]).toBe(TOPIC);
        expect(Number(d.headers[DEADLETTER_HEADERS.attempts])).toBeGreaterThanOrEqual(MAX_HANDLER_ATTEMPTS + MAX_ALONE_ATTEMPTS);
      }
      let alerts = await b.read(TOPICS.alerts);
      await waitFor(async () => (alerts = await b.read(TOPICS.alerts)).length === 2, 'a pipeline alert per poison message');
      const fired = alerts.map(
        (m) => JSON.parse(m.value.toString()) as { host: string; data: { category: string; severity: string; status: string; fingerprint: string } },
      );
      // One fingerprint for the (group, topic): the notifier pages it once, however many messages follow.
      expect(new Set(fired.map((a) => a.data.fingerprint))).toEqual(new Set([pipelineFingerprint(group, TOPIC)]));
      expect(fired.every((a) => a.data.category === 'pipeline' && a.data.severity === 'error' && a.data.status === 'firing' && a.host === 'gpualert')).toBe(
        true,
      );
      expect(await counted()).toBe(before + 2);
    });

    it('retries an infrastructure failure past the limit for poison, and dead-letters nothing', async () => {
      const b = await bus();
      await b.ensureTopics([TOPICS.alerts]);
      const got: Received[] = [];
      let failures = 0;
      subscriptions.push(
        await b.consume({
          group: 'outage',
          topics: [TOPIC],
          handler: async (batch) => {
            // Redis away for longer than a poison message is given.
            if (failures <= MAX_HANDLER_ATTEMPTS) {
              failures += 1;
              throw new RetriableError('the state store is unreachable');
            }
            got.push(...received(batch));
          },
        }),
      );
      await b.publish(TOPIC, [line('h1', 1), line('h1', 2)]);
      await waitFor(() => got.length === 2, 'the messages once the outage is over', 60_000);
      expect(failures).toBe(MAX_HANDLER_ATTEMPTS + 1);
      expect(got.map((r) => r.seq)).toEqual([1, 2]);
      expect(await b.read(TOPICS.deadletter)).toEqual([]);
      expect(await b.read(TOPICS.alerts)).toEqual([]);
    });

    it('commits only after what the batch produced is durable, so a restart resumes where it stopped', async () => {
      const b = await bus();
      const out = 'conformance.out';
      await b.ensureTopics([out]);
      const first: Received[] = [];
      const sub = await b.consume({
        group: 'resume',
        topics: [TOPIC],
        handler: async (batch, context) => {
          first.push(...received(batch));
          await context.publish(
            out,
            batch.items.map(({ envelope }) => envelopeMessage(envelope)),
          );
        },
      });
      await b.publish(TOPIC, [line('h1', 1), line('h1', 2)]);
      await waitFor(() => first.length === 2, 'the first two');
      await sub.stop();
      expect((await b.read(out)).length).toBe(2);
      await b.publish(TOPIC, [line('h1', 3)]);
      const second: Received[] = [];
      subscriptions.push(await b.consume({ group: 'resume', topics: [TOPIC], handler: async (batch) => void second.push(...received(batch)) }));
      await waitFor(() => second.length >= 1, 'the message published while stopped');
      expect(second.map((r) => r.seq)).toEqual([3]);
    });

    it('reads a topic by time range without joining a group', async () => {
      const b = await bus();
      const base = Date.parse('2026-06-01T00:00:00Z');
      await b.publish(
        TOPIC,
        [0, 1, 2, 3, 4].map((i) => ({ ...line(`h${i}`, i), timestamp: base + i * 60_000 })),
      );
      const range = await b.read(TOPIC, { from: base + 60_000, to: base + 3 * 60_000 });
      expect(range.map((m) => m.timestamp - base)).toEqual([60_000, 120_000, 180_000]);
    });

    it("reads one key's messages out of a topic, the others on its partition passed over", async () => {
      const b = await bus();
      const base = Date.parse('2026-06-01T00:00:00Z');
      const keys = ['gpu-a', 'gpu-b', 'gpu-c'];
      await b.publish(
        TOPIC,
        [0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => ({ ...line(keys[i % 3]!, i), timestamp: base + i * 60_000 })),
      );
      let fetched = 0;
      const mine = await b.read(TOPIC, { from: base + 60_000, key: 'gpu-a', fetched: (n) => (fetched = n) });
      expect(mine.map((m) => [m.key, m.timestamp - base])).toEqual([
        ['gpu-a', 180_000],
        ['gpu-a', 360_000],
      ]);
      // the others on its partition were read and passed over, not skipped unseen (Kafka fetches
      // only the key's partition: of 4, its partitioner puts gpu-c on gpu-a's)
      const range = await b.read(TOPIC, { from: base + 60_000 });
      const partition = range.find((m) => m.key === 'gpu-a')?.partition;
      expect(fetched).toBeGreaterThanOrEqual(range.filter((m) => m.partition === partition).length);
      expect(await b.read(TOPIC, { key: 'gpu-d' })).toEqual([]);
    });

    it('takes publishes far larger than one broker request, from many callers at once', async () => {
      const b = await bus();
      const padding = 'x'.repeat(3_000);
      const big = (caller: number) =>
        Array.from({ length: 700 }, (_, i) =>
          envelopeMessage(newEnvelope({ type: 'kernel.line', host: `h${i % 7}`, source: `c${caller}`, data: { line: `${i} ${padding}` } })),
        );
      await Promise.all([0, 1, 2, 3].map((c) => b.publish(TOPIC, big(c)))); // 4 × 2 MB
      expect((await b.read(TOPIC)).length).toBe(2_800);
    });

    it('reads only what a range needs from a large topic, not the whole of it', async () => {
      const b = await bus();
      const base = Date.parse('2026-06-01T00:00:00Z');
      // a day of one message a minute from each of 10 hosts: 14,400 messages
      for (let minute = 0; minute < 1_440; minute += 60) {
        await b.publish(
          TOPIC,
          Array.from({ length: 600 }, (_, i) => ({
            ...line(`h${i % 10}`, minute + Math.floor(i / 10)),
            timestamp: base + (minute + Math.floor(i / 10)) * 60_000,
          })),
        );
      }
      let fetched = 0;
      const hour = await b.read(TOPIC, { from: base + 12 * 3_600_000, to: base + 13 * 3_600_000 - 1, fetched: (n) => (fetched = n) });
      expect(hour).toHaveLength(600);
      // Reading from the start would fetch the 7,200 messages before hour 12 alone; seeking by
      // timestamp and stopping at the hour's end leaves only what one fetch overshoots.
      expect(fetched).toBeLessThan(14_400 / 2);
    });
  });
}
