import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { freePort, onFreePort, PORT_TAKEN, PortTaken } from './free-port.ts';

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

/**
 * A single-node Kafka in KRaft mode (broker and controller in one JVM) on 127.0.0.1, started
 * from Apache Kafka's jars. `stop()` and `start()` again keep its data, so fault tests can take
 * the broker away and bring it back.
 */
export class KafkaBroker {
  private process: ChildProcess | undefined;
  private readonly dir: string;
  private readonly classpath: string;
  readonly brokers: string;
  private readonly port: number;
  private readonly controllerPort: number;
  /** The cluster id it was formatted with: how a readiness check tells this broker from another one on its port. */
  private clusterId = '';
  /** The JVM's last output, whole once `closed` settles: tells a taken port from other failures. */
  private recent = '';
  private closed: Promise<void> = Promise.resolve();

  private constructor(classpath: string, port: number, controllerPort: number) {
    this.classpath = classpath;
    this.port = port;
    this.controllerPort = controllerPort;
    this.brokers = `127.0.0.1:${port}`;
    this.dir = mkdtempSync(join(tmpdir(), 'gpualert-kafka-'));
  }

  /** A formatted, started broker; on fresh ports when another process took one before the JVM bound it. */
  static async create(): Promise<KafkaBroker> {
    const classpath = kafkaClasspath();
    return onFreePort(async (port) => {
      const broker = new KafkaBroker(classpath, port, await freePort());
      broker.format();
      try {
        await broker.start();
        return broker;
      } catch (error) {
        await broker.stop();
        await broker.closed;
        const said = broker.recent;
        await broker.destroy();
        throw PORT_TAKEN.test(said) ? new PortTaken(port, said) : error;
      }
    });
  }

  get logFile(): string {
    return join(this.dir, 'broker.log');
  }

  private format(): void {
    writeFileSync(join(this.dir, 'server.properties'), this.properties());
    const java = (args: string[]) => spawnSync('java', ['-cp', this.classpath, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const uuid = java(['kafka.tools.StorageTool', 'random-uuid']).stdout.trim().split('\n').pop() ?? '';
    this.clusterId = uuid;
    const format = java(['kafka.tools.StorageTool', 'format', '-t', uuid, '-c', join(this.dir, 'server.properties')]);
    if (format.status !== 0) throw new Error(`kafka storage format failed: ${format.stderr.slice(-2000)}`);
  }

  private properties(): string {
    return [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${this.controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${this.port},CONTROLLER://127.0.0.1:${this.controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${this.port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${join(this.dir, 'data')}`,
      'offsets.topic.replication.factor=1',
      'offsets.topic.num.partitions=4',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'share.coordinator.state.topic.replication.factor=1',
      'share.coordinator.state.topic.min.isr=1',
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

  async start(): Promise<void> {
    if (this.process) return;
    const log = createWriteStream(this.logFile, { flags: 'a' });
    const child = spawn(
      'java',
      [
        '-Xms256m',
        '-Xmx768m',
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
    await this.waitUntilReady(child);
  }

  private async waitUntilReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + 90_000;
    const admin = new Kafka({ brokers: [this.brokers], logLevel: logLevel.NOTHING, retry: { retries: 0 } }).admin();
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
      throw new Error(`kafka did not answer an admin call within 90 s; see ${this.logFile}`);
    } finally {
      await admin.disconnect().catch(() => {});
    }
  }

  async stop(): Promise<void> {
    const child = this.process;
    if (!child) return;
    this.process = undefined;
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
