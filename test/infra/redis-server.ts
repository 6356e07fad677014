import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { PORT_TAKEN, PortTaken } from './free-port.ts';

async function answers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/** Whether the Redis at `url` answers and is the process `pid` (INFO's process_id). */
async function answersAs(url: string, pid: number | undefined): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return new RegExp(`^process_id:${pid}\\r?$`, 'm').test(await client.info('server'));
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * The machine's Redis (`REDIS_URL`, else 127.0.0.1:6379); when nothing answers there, a
 * `redis-server` started here and stopped by the returned function.
 */
export async function ensureRedis(): Promise<{ url: string; stop: () => Promise<void> }> {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (await answers(url)) return { url, stop: async () => {} };
  if (process.env.REDIS_URL) throw new Error(`REDIS_URL=${url} does not answer PING`);
  try {
    const own = await OwnRedis.start(6379);
    return { url, stop: () => own.stop() };
  } catch (error) {
    // Another run started the machine's Redis meanwhile: that is the one to use, as if it had answered first.
    if (error instanceof PortTaken && (await answers(url))) return { url, stop: async () => {} };
    throw error;
  }
}

/**
 * A `redis-server` of its own on a free loopback port, keeping nothing on disk, that fault tests
 * can stop and start again: it comes back on the same port with no data, as these machines' Redis
 * does after a restart.
 */
export class OwnRedis {
  private child: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly extra: readonly string[] = [],
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** `extra`: more arguments for redis-server (a replica's `--replicaof host port`). */
  static async start(port: number, extra: readonly string[] = []): Promise<OwnRedis> {
    const redis = new OwnRedis(port, extra);
    await redis.start();
    return redis;
  }

  async start(): Promise<void> {
    // Its own directory: a replica's full sync writes dump.rdb where it runs, and the repository is no place for it.
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-redis-'));
    const child = spawn('redis-server', ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...this.extra], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let said = '';
    const keep = (chunk: Buffer) => void (said = (said + chunk.toString()).slice(-4_000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const failed = new Promise<boolean>((_, reject) => child.once('error', (e) => reject(new Error(`cannot start redis-server: ${e.message}`))));
    const exited = new Promise<boolean>((resolve) => child.once('exit', () => resolve(false)));
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      // Another process's Redis answering on this port is not this one: the one answering must be this child.
      const up = await Promise.race([answersAs(this.url, child.pid), failed, exited]);
      if (child.exitCode !== null || child.signalCode !== null) {
        this.child = undefined;
        throw PORT_TAKEN.test(said) ? new PortTaken(this.port, said) : new Error(`redis-server on port ${this.port} exited: ${said.slice(-500)}`);
      }
      if (up) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
    throw new Error(`redis-server on port ${this.port} did not answer PING within 10 s`);
  }

  /** Kills the server (SIGKILL: nothing is saved anyway) and waits for it to be gone. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }
}
