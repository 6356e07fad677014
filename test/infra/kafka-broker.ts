import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { freePort, onFreePort, PORT_TAKEN, PortTaken } from './free-port.ts';
import { KafkaNode } from './kafka-node.ts';
import { waitFor } from './wait-for.ts';

const ROOT = resolve(import.meta.dirname, '../..');
const POM = join(ROOT, 'tools/kafka/pom.xml');

/** The Kafka version the pom pins, so the jar cache is keyed by it. */
export function kafkaVersion(): string {
  const match = /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(readFileSync(POM, 'utf8'));
  if (!match?.[1]) throw new Error(`no <kafka.version> in ${POM}`);
  return match[1];
}

/** Apache Kafka's own jars, resolved through Maven once and cached. */
export function kafkaClasspath(): string {
  const version = kafkaVersion();
  const dir = join(process.env.GPUALERT_CACHE ?? join(homedir(), '.cache', 'gpualert'), `kafka-${version}`);
  const marker = join(dir, '.complete');
  if (!existsSync(marker)) {
    mkdirSync(dir, { recursive: true });
    const mvn = spawnSync('mvn', ['-q', '-B', '-f', POM, 'dependency:copy-dependencies', `-DoutputDirectory=${dir}`, '-DincludeScope=runtime'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
    if (mvn.status !== 0) {
      throw new Error(`mvn could not resolve Apache Kafka ${version}: ${(mvn.stdout + mvn.stderr).slice(-2000)}`);
    }
    writeFileSync(marker, new Date().toISOString());
  }
  return `${dir}/*`;
}

export { freePort } from './free-port.ts';

/** How many nodes: one (what most tests need: cheapest), or three (production's shape: replication 3, min ISR 2). */
export type KafkaNodes = 1 | 3;

/** A cluster id as Kafka's `StorageTool random-uuid` makes one (16 random bytes, base64url), without a JVM start. */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/**
 * Apache Kafka in KRaft mode on 127.0.0.1, from Apache Kafka's jars: one node (broker and
 * controller in one JVM), or three such nodes that are the three voters of one quorum, with
 * replication 3 and `min.insync.replicas=2` for every topic (the internal ones included).
 * `stop()` and `start()` again keep the data, so fault tests can take Kafka away and bring it
 * back; `kill(nodeId)` and `restart(nodeId)` do it to one node of three.
 */
export class KafkaBroker {
  readonly brokers: string;

  private constructor(private readonly nodes: readonly KafkaNode[]) {
    this.brokers = nodes.map((n) => n.address).join(',');
  }

  /** Started and answering, every node in the cluster; on fresh ports when another process took one before a JVM bound it. */
  static async create(options: { nodes?: KafkaNodes } = {}): Promise<KafkaBroker> {
    const classpath = kafkaClasspath();
    const count = options.nodes ?? 1;
    return onFreePort(async (firstPort) => {
      const ports = [firstPort, ...(await Promise.all(Array.from({ length: count * 2 - 1 }, () => freePort())))];
      const controllerPorts = ports.slice(count);
      const voters = controllerPorts.map((port, i) => `${i + 1}@127.0.0.1:${port}`).join(',');
      const id = clusterId();
      const nodes = Array.from(
        { length: count },
        (_, i) =>
          new KafkaNode(
            classpath,
            { nodeId: i + 1, port: ports[i]!, controllerPort: controllerPorts[i]!, voters, replication: count, heap: count === 1 ? '768m' : '384m' },
            id,
          ),
      );
      const broker = new KafkaBroker(nodes);
      try {
        await Promise.all(nodes.map((n) => n.format()));
        await broker.start();
        return broker;
      } catch (error) {
        await Promise.all(nodes.map((n) => n.stop()));
        await Promise.all(nodes.map((n) => n.closed));
        const taken = nodes.find((n) => PORT_TAKEN.test(n.recent));
        await broker.destroy();
        throw taken ? new PortTaken(taken.spec.port, taken.recent) : error;
      }
    });
  }

  /** The node ids, 1 to 3. */
  get nodeIds(): number[] {
    return this.nodes.map((n) => n.spec.nodeId);
  }

  /** Where the node's log is (the JVM's own output). */
  get logFile(): string {
    return this.nodes[0]!.logFile;
  }

  /** Starts every node that is not running; resolves when the cluster answers with all of them. */
  async start(): Promise<void> {
    const starting = this.nodes.filter((n) => !n.running);
    for (const node of starting) node.launch();
    await Promise.all(starting.map((n) => n.ready()));
    await this.allRegistered();
  }

  /** Stops every node (SIGTERM: a clean shutdown). */
  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }

  /** One node crashes: SIGKILL, nothing flushed, no leadership handed over. */
  async kill(nodeId: number): Promise<void> {
    await this.node(nodeId).stop('SIGKILL');
  }

  /** A killed or stopped node starts again on its data; resolves when it is back in the cluster. */
  async restart(nodeId: number): Promise<void> {
    const node = this.node(nodeId);
    node.launch();
    await node.ready();
    await this.allRegistered();
  }

  /** The node that listens on `address` (`127.0.0.1:port`, as Kafka's metadata names its brokers). */
  nodeAt(address: string): number | undefined {
    return this.nodes.find((n) => n.address === address)?.spec.nodeId;
  }

  async destroy(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.destroy()));
  }

  private node(nodeId: number): KafkaNode {
    const node = this.nodes.find((n) => n.spec.nodeId === nodeId);
    if (!node) throw new Error(`no Kafka node ${nodeId} (nodes ${this.nodeIds.join(', ')})`);
    return node;
  }

  /** Every running node registered with the controller: a topic of replication 3 can be created then. */
  private async allRegistered(): Promise<void> {
    const running = this.nodes.filter((n) => n.running).length;
    if (running <= 1) return;
    const admin = new Kafka({ brokers: this.brokers.split(','), logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
    try {
      await waitFor(
        async () => {
          try {
            await admin.connect();
            return (await admin.describeCluster()).brokers.length >= running;
          } catch {
            return false;
          }
        },
        `${running} Kafka brokers registered`,
        60_000,
      );
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }
}
