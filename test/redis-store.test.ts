import { createServer, type AddressInfo, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { describe, expect, inject, it } from 'vitest';
import { RedisStore } from '../packages/state/src/redis-store.ts';
import { stateConformance } from '@gpualert/test-support';
import { runCli } from './infra/run-cli.ts';
import { uniqueName } from './infra/wait-for.ts';

stateConformance('Redis', async (prefix) => new RedisStore({ url: inject('redisUrl'), prefix }));

describe('names on one Redis', () => {
  it('are the prefix and the key, as before Redis Cluster was supported: no hash tag', async () => {
    const prefix = `${uniqueName('names')}:`;
    const store = new RedisStore({ url: inject('redisUrl'), prefix });
    const raw = new Redis(inject('redisUrl'));
    try {
      await store.hashSet('notifier:groups', { g: '1' });
      await store.set('engine:host:gpu-1', 'state');
      expect(await raw.hgetall(`${prefix}notifier:groups`)).toEqual({ g: '1' });
      expect(await raw.get(`${prefix}engine:host:gpu-1`)).toBe('state');
    } finally {
      raw.disconnect();
      await store.close();
    }
  });
});

describe('a Redis that is away or too slow', () => {
  it('is one retriable GA-INFRA-UNAVAILABLE that names Redis, not the client’s own error', async () => {
    // A port that was listening a moment ago and is closed now: refused.
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const store = new RedisStore({ url: `redis://127.0.0.1:${closed}` });
    try {
      const error: unknown = await store.get('k').catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'GA-INFRA-UNAVAILABLE', retriable: true });
      expect((error as Error).message).toMatch(/^Redis \(REDIS_URL\) is away: /);
    } finally {
      await store.close();
    }
  });

  it('that accepts and never answers is away once the command bound passes, instead of a hang', async () => {
    const sockets: Socket[] = [];
    const mute = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
    const store = new RedisStore({ url: `redis://127.0.0.1:${(mute.address() as AddressInfo).port}`, commandTimeoutMs: 300 });
    try {
      await expect(store.get('k')).rejects.toMatchObject({
        code: 'GA-INFRA-UNAVAILABLE',
        retriable: true,
        message: 'Redis (REDIS_URL): no answer within 0.3 s',
      });
    } finally {
      for (const socket of sockets) socket.destroy();
      mute.close();
      await store.close();
    }
  });

  it('ends a one-shot command with exit 75 and one line', async () => {
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const result = await runCli(['silence', 'list'], { env: { REDIS_URL: `redis://127.0.0.1:${closed}` } });
    expect(result.code).toBe(75);
    expect(result.stderr).toMatch(/^error\[GA-INFRA-UNAVAILABLE\]: Redis \(REDIS_URL\) is away: [^\n]*\n$/);
  });
});
