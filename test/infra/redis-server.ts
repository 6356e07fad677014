import { spawn, type ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';

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

/**
 * The machine's Redis (`REDIS_URL`, else 127.0.0.1:6379); when nothing answers there, a
 * `redis-server` started here and stopped by the returned function.
 */
export async function ensureRedis(): Promise<{ url: string; stop: () => Promise<void> }> {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  if (await answers(url)) return { url, stop: async () => {} };
  if (process.env.REDIS_URL) throw new Error(`REDIS_URL=${url} does not answer PING`);
  const child: ChildProcess = spawn('redis-server', ['--port', '6379', '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const spawned = new Promise<void>((_, reject) => child.once('error', (e) => reject(new Error(`cannot start redis-server: ${e.message}`))));
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const up = await Promise.race([answers(url), spawned.then(() => false)]);
    if (up) {
      return {
        url,
        stop: async () => {
          const exited = new Promise((r) => child.once('exit', r));
          child.kill('SIGTERM');
          await exited;
        },
      };
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  throw new Error('redis-server did not answer PING within 10 s');
}
