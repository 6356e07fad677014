import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.ts';
import { OwnRedis } from './redis-server.ts';
import { waitFor } from './wait-for.ts';

/** The name the Sentinels know the master by. */
export const SENTINEL_MASTER = 'gpualert';

/**
 * A Redis master, one replica and three Sentinels (quorum 2), every one a `redis-server` of this
 * machine on a loopback port, keeping nothing on disk: what a production deployment runs to keep
 * Redis from being a single point. `kill master` lets the Sentinels fail over to the replica.
 */
export class SentinelGroup {
  private readonly sentinels: ChildProcess[] = [];
  private readonly dir = mkdtempSync(join(tmpdir(), 'gpualert-sentinel-'));
  readonly sentinelPorts: number[] = [];

  private constructor(
    readonly master: OwnRedis,
    readonly replica: OwnRedis,
  ) {}

  get url(): string {
    return `redis+sentinel://${this.sentinelPorts.map((p) => `127.0.0.1:${p}`).join(',')}/${SENTINEL_MASTER}`;
  }

  static async start(): Promise<SentinelGroup> {
    const master = await OwnRedis.start(await freePort());
    const replica = await OwnRedis.start(await freePort(), ['--replicaof', '127.0.0.1', String(master.port)]);
    const group = new SentinelGroup(master, replica);
    try {
      await waitFor(async () => /master_link_status:up/.test(await info(replica.url, 'replication')), 'the replica in sync', 20_000);
      for (let i = 0; i < 3; i += 1) await group.startSentinel();
      await waitFor(async () => /num-slaves=1|slaves=1/.test(await sentinelInfo(group.sentinelPorts[0]!)), 'the Sentinels to see the replica', 30_000);
    } catch (error) {
      await group.stop();
      throw error;
    }
    return group;
  }

  private async startSentinel(): Promise<void> {
    const port = await freePort();
    const conf = join(this.dir, `sentinel-${port}.conf`);
    // Short timeouts: a failover within seconds, not the default half minute.
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${this.dir}`,
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${this.master.port} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
        `sentinel failover-timeout ${SENTINEL_MASTER} 5000`,
        `sentinel parallel-syncs ${SENTINEL_MASTER} 1`,
        '',
      ].join('\n'),
    );
    const child = spawn('redis-server', [conf, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.sentinels.push(child);
    this.sentinelPorts.push(port);
    await waitFor(async () => (await sentinelInfo(port)) !== '' || child.exitCode !== null, `Sentinel on ${port}`, 10_000);
    if (child.exitCode !== null) throw new Error(`redis-server --sentinel on ${port} exited with ${child.exitCode}`);
  }

  /** The port of the server the Sentinels call master now. */
  async masterPort(): Promise<number> {
    const client = new Redis({ port: this.sentinelPorts[0]!, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0 });
    client.on('error', () => {});
    try {
      await client.connect();
      const [, port] = (await client.call('SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER)) as [string, string];
      return Number(port);
    } finally {
      client.disconnect();
    }
  }

  async stop(): Promise<void> {
    for (const child of this.sentinels) {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGKILL');
        await exited;
      }
    }
    await this.replica.stop();
    await this.master.stop();
  }
}

async function info(url: string, section: string): Promise<string> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.info(section);
  } catch {
    return '';
  } finally {
    client.disconnect();
  }
}

function sentinelInfo(port: number): Promise<string> {
  return info(`redis://127.0.0.1:${port}`, 'sentinel');
}
