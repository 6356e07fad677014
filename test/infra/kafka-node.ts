import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';

/** Where one node listens and what cluster it belongs to. */
export interface KafkaNodeSpec {
  readonly nodeId: number;
  readonly port: number;
  readonly controllerPort: number;
  /** `controller.quorum.voters`: `id@127.0.0.1:port` of every controller of the cluster. */
  readonly voters: string;
  /** Replication of the internal topics and the default for new ones; min ISR is 2 from 3 replicas. */
  readonly replication: number;
  /** `-Xmx`: one node of three gets less than a node alone. */
  readonly heap: string;
}

/** `java` with Kafka's jars: its exit status and everything it said. */
export function runJava(classpath: string, args: readonly string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('java', ['-cp', classpath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, output }));
  });
}

/**
 * One Kafka JVM in KRaft mode, broker and controller in one process, on 127.0.0.1, started from
 * Apache Kafka's jars. `stop()` or `kill()` and `start()` again keep its data.
 */
export class KafkaNode {
  private process: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), 'gpualert-kafka-'));
  readonly address: string;
  /** The JVM's last output, whole once `closed` settles: tells a taken port from other failures. */
  recent = '';
  closed: Promise<void> = Promise.resolve();

  constructor(
    private readonly classpath: string,
    readonly spec: KafkaNodeSpec,
    /** The cluster id it is formatted with: how a readiness check tells this cluster from another one on its port. */
    readonly clusterId: string,
  ) {
    this.address = `127.0.0.1:${spec.port}`;
  }

  get logFile(): string {
    return join(this.dir, 'broker.log');
  }

  get running(): boolean {
    return this.process !== undefined && this.process.exitCode === null && this.process.signalCode === null;
  }

  async format(): Promise<void> {
    writeFileSync(join(this.dir, 'server.properties'), this.properties());
    const format = await runJava(this.classpath, ['kafka.tools.StorageTool', 'format', '-t', this.clusterId, '-c', join(this.dir, 'server.properties')]);
    if (format.status !== 0) throw new Error(`kafka storage format failed: ${format.output.slice(-2000)}`);
  }

  private properties(): string {
    const { nodeId, port, controllerPort, voters, replication } = this.spec;
    const minIsr = Math.min(2, replication);
    return [
      'process.roles=broker,controller',
      `node.id=${nodeId}`,
      `controller.quorum.voters=${voters}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${join(this.dir, 'data')}`,
      `default.replication.factor=${replication}`,
      `min.insync.replicas=${minIsr}`,
      `offsets.topic.replication.factor=${replication}`,
      'offsets.topic.num.partitions=4',
      `transaction.state.log.replication.factor=${replication}`,
      `transaction.state.log.min.isr=${minIsr}`,
      `share.coordinator.state.topic.replication.factor=${replication}`,
      `share.coordinator.state.topic.min.isr=${minIsr}`,
      'group.initial.rebalance.delay.ms=0',
      'group.min.session.timeout.ms=1000',
      'auto.create.topics.enable=false',
      'num.partitions=4',
      'log.flush.interval.messages=9223372036854775807',
      // Tests publish recordings with event times months in the past; time-based retention would
      // delete them under a running consumer. Keep everything for the broker's short life.
      'log.retention.ms=-1',
      'log.retention.bytes=-1',
      // Under the clock-ahead run (test/infra/clock-ahead.mjs) our producers stamp records two years
      // past the broker's own clock, which Kafka 4 refuses beyond an hour by default.
      ...(process.env.GPUALERT_CLOCK_OFFSET_MS ? ['log.message.timestamp.after.max.ms=9223372036854775807'] : []),
      '',
    ].join('\n');
  }

  /** Starts the JVM; `ready()` says when it answers. */
  launch(): void {
    if (this.process) return;
    const log = createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(
      'java',
      [
        '-Xms128m',
        `-Xmx${this.spec.heap}`,
        '-XX:+UseSerialGC',
        '-XX:TieredStopAtLevel=1',
        '-Dorg.slf4j.simpleLogger.defaultLogLevel=warn',
        '-cp',
        this.classpath,
        'kafka.Kafka',
        join(this.dir, 'server.properties'),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    const keep = (chunk: Buffer) => void (this.recent = (this.recent + chunk.toString()).slice(-65_536));
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.closed = new Promise((r) => child.once('close', () => r()));
    this.process = child;
  }

  /** Waits until this node answers an admin call as a member of its cluster (a cluster's node needs its quorum first). */
  async ready(timeoutMs = 90_000): Promise<void> {
    const child = this.process;
    if (!child) throw new Error(`kafka node ${this.spec.nodeId} is not started`);
    const deadline = Date.now() + timeoutMs;
    const admin = new Kafka({ brokers: [this.address], logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
    try {
      while (Date.now() < deadline) {
        if (child.exitCode !== null) {
          throw new Error(`kafka exited with ${child.exitCode}; see ${this.logFile}`);
        }
        try {
          await admin.connect();
          await admin.listTopics();
          // Another process's broker may answer on a port this one failed to bind: wait for this one's exit then.
          if ((await admin.describeCluster()).clusterId === this.clusterId) return;
          await new Promise((r) => setTimeout(r, 250));
        } catch {
          await new Promise((r) => setTimeout(r, 250));
        }
      }
      throw new Error(`kafka did not answer an admin call within ${timeoutMs / 1000} s; see ${this.logFile}`);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  /** SIGTERM (a clean shutdown), SIGKILL after 15 s; `signal` SIGKILL: a crash, at once. */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
