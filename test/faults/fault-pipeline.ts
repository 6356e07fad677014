import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envelopeMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { hostName, syntheticFleet } from '@gpualert/test-support';
import { newEnvelope, parseEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import { Redis } from 'ioredis';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { KafkaBroker, type KafkaNodes } from '../infra/kafka-broker.ts';
import { onFreePort } from '../infra/free-port.ts';
import { OwnRedis } from '../infra/redis-server.ts';
import { cleanEnv, startCli } from '../infra/run-cli.ts';
import { VendorReceivers } from '../infra/vendor-receivers.ts';
import { uniqueName, waitFor } from '../infra/wait-for.ts';
import { partitionsHeld } from '../infra/partitions-held.ts';

export const ROUTING_KEY = 'R'.repeat(32);
export const HOOK_SECRET = `whsec_${Buffer.from('the fault suite webhook secret!!').toString('base64')}`;

/** Critical alerts page, one page per fault; maintenance goes to a signed webhook; the rest is recorded. */
const ROUTES = `receivers:
  - name: pager
    channel: pagerduty
    settings: { url: "env:PD_URL", routing_key: "env:PD_KEY" }
  - name: hook
    channel: webhook
    settings: { url: "env:HOOK_URL", secret: "env:HOOK_SECRET" }
  - name: record
    channel: record
route:
  receiver: record
  group_by: [host, category]
  group_wait: 1s
  group_interval: 5m
  repeat_interval: 4h
  routes:
    - matchers: ['severity="critical"']
      receiver: pager
      page: true
    - matchers: ['category="maintenance"']
      receiver: hook
`;

export type Service = ReturnType<typeof startCli>;

/** The PCI address the synthetic fleet gives GPU `index`. */
export function pciOf(index: number): string {
  return `0000:${(0x18 + index * 0x11).toString(16).padStart(2, '0')}:00`;
}

/**
 * One whole gpualert on loopback for the fault suite: a Kafka broker and a Redis of its own (so
 * they can be stopped and wiped without touching anything else), loopback vendors, the services
 * as separate `gpualert` processes, a steady synthetic fleet publishing in real time, and Xid 79
 * faults injected on known GPUs whose pages are counted at the PagerDuty-shaped receiver.
 */
export class FaultPipeline {
  readonly services = new Map<string, Service>();
  readonly injected: { host: string; gpu: number }[] = [];
  readonly env: NodeJS.ProcessEnv;
  private loadRunning = false;
  private loadDone: Promise<void> = Promise.resolve();
  /** Samples Kafka acknowledged, and how often a publish failed and was retried. */
  published = 0;
  publishRetries = 0;
  /** The envelope ids of everything Kafka acknowledged (samples, inventories, faults, alerts): each must be on Kafka at the end. */
  readonly acked = new Set<string>();
  /** One admin client for the lag checks, which poll every few milliseconds. */
  private readonly admin: Admin;

  private constructor(
    readonly broker: KafkaBroker,
    readonly redis: OwnRedis,
    readonly vendors: VendorReceivers,
    readonly bus: KafkaBus,
    readonly prefix: string,
    readonly hosts: number,
  ) {
    this.admin = new Kafka({ brokers: broker.brokers.split(','), logLevel: logLevel.NOTHING }).admin();
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-faults-'));
    writeFileSync(join(dir, 'routes.yaml'), ROUTES);
    this.env = cleanEnv({
      KAFKA_BROKERS: broker.brokers,
      REDIS_URL: redis.url,
      GPUALERT_TOPIC_PREFIX: prefix,
      GPUALERT_KEY_PREFIX: `${prefix}:`,
      GPUALERT_PARTITIONS: '6',
      GPUALERT_ROUTES: join(dir, 'routes.yaml'),
      GPUALERT_NOTIFIER_PORT: '0',
      GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
      // Several engines on one machine: each its own free port for /metrics, on loopback.
      GPUALERT_ENGINE_PORT: '0',
      GPUALERT_ENGINE_LISTEN: '127.0.0.1',
      PD_URL: `${vendors.base}/pagerduty/v2/enqueue`,
      PD_KEY: ROUTING_KEY,
      HOOK_URL: `${vendors.base}/webhook/in`,
      HOOK_SECRET,
      GPUALERT_LOG_LEVEL: 'info',
    });
  }

  /** Kafka as production runs it by default: three nodes, replication 3, min ISR 2 (`brokers: 1` for a case that needs one). */
  static async start(options: { hosts?: number; brokers?: KafkaNodes } = {}): Promise<FaultPipeline> {
    const [broker, redis] = await Promise.all([KafkaBroker.create({ nodes: options.brokers ?? 3 }), onFreePort((port) => OwnRedis.start(port))]);
    const vendors = new VendorReceivers({ feishu: '', dingtalk: '', webhook: HOOK_SECRET, routingKey: ROUTING_KEY, opsgenie: '' });
    await vendors.start();
    const prefix = `${uniqueName('faults')}.`;
    // Publishes retry for up to a minute: the test's own producer rides out a broker outage the
    // way a collector does, and counts only what Kafka acknowledged.
    const bus = new KafkaBus({ brokers: broker.brokers.split(','), topicPrefix: prefix, partitions: 6, publishTimeoutMs: 5_000 });
    await bus.ensureTopics(Object.values(TOPICS));
    const pipeline = new FaultPipeline(broker, redis, vendors, bus, prefix, options.hosts ?? 48);
    await pipeline.admin.connect();
    return pipeline;
  }

  /** Starts `gpualert <args>` and waits until it has joined its consumer group (or says `ready`); `env` changes its settings (a Redis behind a proxy). */
  async startService(name: string, args: readonly string[], ready = 'group_joined', env: NodeJS.ProcessEnv = {}): Promise<Service> {
    const service = startCli(args, { ...this.env, ...env });
    this.services.set(name, service);
    const gone = () => service.exitCode !== null || service.signalCode !== null;
    await waitFor(() => service.output().includes(ready) || gone(), `${name} to be ready`, 60_000);
    if (gone()) throw new Error(`${name} exited with ${service.exitCode}: ${service.output().slice(-2000)}`);
    return service;
  }

  /** How many partitions an engine or notifier holds since its group's last rebalance: each lane's last `group_joined` line. */
  static partitionsHeld(service: Service): number {
    return partitionsHeld(service.output());
  }

  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const service = this.services.get(name);
    if (!service || service.exitCode !== null || service.signalCode !== null) return;
    const exited = once(service, 'exit');
    service.kill(signal);
    await exited;
  }

  /**
   * The fleet's samples, one scrape a second per host stamped with the wall clock, published as
   * their time comes; inventories first. A failed publish is retried until Kafka takes it.
   */
  startLoad(): void {
    const start = Date.now();
    const fleet = [...syntheticFleet({ hosts: this.hosts, gpusPerHost: 8, start, minutes: 15, intervalMs: 1_000, seed: 8 })];
    const inventories = fleet.filter((e) => e.type === 'host.inventory');
    const samples = fleet.filter((e) => e.type === 'gpu.sample');
    this.loadRunning = true;
    this.loadDone = (async () => {
      await this.publishDurably(TOPICS.hostInventory, inventories);
      let next = 0;
      while (this.loadRunning && next < samples.length) {
        const due: Envelope[] = [];
        while (next < samples.length && Date.parse(samples[next]!.ts) <= Date.now()) due.push(samples[next++]!);
        if (due.length > 0) {
          await this.publishDurably(TOPICS.gpuSamples, due);
          this.published += due.length;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }

  async stopLoad(): Promise<void> {
    this.loadRunning = false;
    await this.loadDone;
  }

  /** An Xid 79 on one GPU of one host of the fleet, as the kernel collector would publish it. */
  async injectXid(host: number, gpu: number): Promise<void> {
    const envelope: Envelope = newEnvelope({
      type: 'kernel.event',
      host: hostName(host),
      source: 'kernel/fault-suite',
      data: {
        kind: 'xid',
        xid: 79,
        pci_bus: pciOf(gpu),
        severity: 'critical',
        message: `NVRM: Xid (PCI:${pciOf(gpu)}): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.`,
        count: 1,
      },
    });
    this.injected.push({ host: hostName(host), gpu });
    await this.publishDurably(TOPICS.kernelEvents, [envelope]);
  }

  /** Publishes until Kafka acknowledges, as a collector does; counts the retries and remembers what was acked. */
  async publishDurably(topic: string, envelopes: readonly Envelope[]): Promise<void> {
    const messages = envelopes.map(envelopeMessage);
    for (;;) {
      try {
        await this.bus.publish(topic, messages);
        for (const e of envelopes) this.acked.add(e.id);
        return;
      } catch {
        this.publishRetries += 1;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /** Trigger events at the pager, by dedup key: how many, and for which host and GPU. */
  pages(): Map<string, { host: string; component: string; triggers: number }> {
    const out = new Map<string, { host: string; component: string; triggers: number }>();
    for (const r of this.vendors.of('pagerduty')) {
      if (r.body.event_action !== 'trigger') continue;
      const seen = out.get(r.body.dedup_key) ?? { host: r.body.payload.source, component: r.body.payload.component, triggers: 0 };
      seen.triggers += 1;
      out.set(r.body.dedup_key, seen);
    }
    return out;
  }

  /** What was paged, as `host GPU n` per distinct dedup key, sorted; what was injected, the same way. */
  pagedFaults(): string[] {
    return [...this.pages().values()].map((p) => `${p.host} ${p.component}`).sort();
  }

  expectedFaults(): string[] {
    return this.injected.map((f) => `${f.host} GPU ${f.gpu}`).sort();
  }

  async waitForPages(timeoutMs = 90_000): Promise<void> {
    const expected = new Set(this.expectedFaults());
    await waitFor(
      () => [...expected].every((f) => this.pagedFaults().includes(f)),
      `pages for ${[...expected].join(', ')} (paged: ${this.pagedFaults().join(', ') || 'none'})`,
      timeoutMs,
    ).catch(async (error: Error) => {
      // What a person needs to tell a stalled consumer from a lost page: each group's lag, what the pager got, each service's last lines.
      const lags = await Promise.all([
        this.lag('gpualert-engine', [TOPICS.gpuSamples, TOPICS.kernelEvents]).then(
          (n) => `engine lag ${n}`,
          (e: Error) => `engine lag unknown: ${e.message}`,
        ),
        this.lag('gpualert-notifier', [TOPICS.alerts]).then(
          (n) => `notifier lag ${n}`,
          (e: Error) => `notifier lag unknown: ${e.message}`,
        ),
      ]);
      const alerts = await this.bus.read(TOPICS.alerts).then(
        (m) => `${m.length} alerts on Kafka`,
        (e: Error) => `alerts unread: ${e.message}`,
      );
      const arrivals = `${this.vendors.arrivals.filter((a) => a.vendor === 'pagerduty').length} requests at the pager`;
      const outputs = [...this.services].map(([name, s]) => `--- ${name}:\n${s.output().slice(-4000)}`).join('\n');
      throw new Error(`${error.message}\n${[...lags, alerts, arrivals].join('; ')}\n${outputs}`);
    });
  }

  /**
   * How far each consumer group is behind the end of its topics: 0 everywhere means every
   * message Kafka acknowledged was judged and committed, nothing skipped.
   */
  async lag(group: string, topics: readonly string[]): Promise<number> {
    let lag = 0;
    for (const topic of topics) {
      const ends = await this.admin.fetchTopicOffsets(`${this.prefix}${topic}`);
      const [committed] = await this.admin.fetchOffsets({ groupId: `${this.prefix}${group}`, topics: [`${this.prefix}${topic}`] });
      for (const p of ends) {
        const at = Number(committed?.partitions.find((c) => c.partition === p.partition)?.offset ?? -1);
        lag += Number(p.high) - Math.max(0, at);
      }
    }
    return lag;
  }

  /** Waits until the engine and the notifier have judged and committed everything published. */
  async waitCaughtUp(timeoutMs = 60_000): Promise<void> {
    let last = '';
    await waitFor(
      async () => {
        const engine = await this.lag('gpualert-engine', [TOPICS.gpuSamples, TOPICS.kernelEvents]);
        const notifier = await this.lag('gpualert-notifier', [TOPICS.alerts]);
        last = `engine lag ${engine}, notifier lag ${notifier}`;
        return engine === 0 && notifier === 0;
      },
      `the engine and the notifier to catch up (${last})`,
      timeoutMs,
    );
  }

  /** A key of this deployment in its Redis. */
  async storeGet(key: string): Promise<string | null> {
    const client = new Redis(this.redis.url, { maxRetriesPerRequest: 1 });
    try {
      return await client.get(`${this.prefix}:${key}`);
    } finally {
      client.disconnect();
    }
  }

  /** Writes a key of this deployment in its Redis, as a crashed or older writer might have left it. */
  /** A hash where the engine expects a string: the store answers WRONGTYPE, every time. */
  async storeHashSet(key: string, field: string, value: string): Promise<void> {
    const client = new Redis(this.redis.url, { maxRetriesPerRequest: 1 });
    try {
      await client.hset(`${this.prefix}:${key}`, field, value);
    } finally {
      client.disconnect();
    }
  }

  /** The fields of a hash of this deployment in its Redis. */
  async storeHashGetAll(key: string): Promise<Record<string, string>> {
    const client = new Redis(this.redis.url, { maxRetriesPerRequest: 1 });
    try {
      return await client.hgetall(`${this.prefix}:${key}`);
    } finally {
      client.disconnect();
    }
  }

  async storeSet(key: string, value: string): Promise<void> {
    const client = new Redis(this.redis.url, { maxRetriesPerRequest: 1 });
    try {
      await client.set(`${this.prefix}:${key}`, value);
    } finally {
      client.disconnect();
    }
  }

  /** The alerts a rule raised, as `host firing|resolved`. */
  async alertsOf(rule: string): Promise<string[]> {
    return (await this.bus.read(TOPICS.alerts)).flatMap((m) => {
      const parsed = parseEnvelope(m.value);
      return parsed.ok && parsed.value.type === 'alert' && parsed.value.data.rule === rule ? [`${parsed.value.host} ${parsed.value.data.status}`] : [];
    });
  }

  async deadletters(): Promise<number> {
    return (await this.bus.read(TOPICS.deadletter)).length;
  }

  async close(): Promise<void> {
    await this.stopLoad().catch(() => {});
    for (const name of this.services.keys()) await this.kill(name, 'SIGKILL');
    await this.bus.close().catch(() => {});
    await this.admin.disconnect().catch(() => {});
    await this.vendors.stop();
    await Promise.all([this.broker.destroy(), this.redis.stop()]);
  }
}
