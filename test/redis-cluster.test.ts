import { clusterKey, SLOT_GROUPS } from '@gpualert/state';
import { redisConnection, RedisStore } from '@gpualert/state/redis';
import { stateConformance } from '@gpualert/test-support';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIRING_KEY, GROUP_ALERTS_KEY, GROUPS_KEY, LEGACY_STATE_KEY, STATE_KEY } from '../services/notifier/src/notifier-state-store.ts';
import { engineHostKey } from '@gpualert/engine';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { onFreePort } from './infra/free-port.ts';
import { RedisCluster } from './infra/redis-cluster.ts';
import { OwnRedis } from './infra/redis-server.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

/**
 * The state store on Redis Cluster (three masters, a replica each, from this machine's
 * redis-server): the same conformance suite as a single Redis, the slot rule its keys keep, and a
 * master failing over under it.
 */
const run = promisify(execFile);

let cluster: RedisCluster;
beforeAll(async () => {
  cluster = await RedisCluster.start();
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
});

stateConformance('Redis Cluster (redis+cluster://)', async (prefix) => new RedisStore({ url: cluster.url, prefix }));

/** The keys the notifier deletes in one DEL (notifier-state-store.ts), and the rest of its state. */
const NOTIFIER_STATE = [GROUPS_KEY, GROUP_ALERTS_KEY, FIRING_KEY, STATE_KEY, LEGACY_STATE_KEY];

describe('keys on Redis Cluster', () => {
  it("the notifier's state keys share one slot through their hash tag; untagged, one DEL of them is refused CROSSSLOT", async () => {
    expect([...SLOT_GROUPS.keys()].sort()).toEqual([...NOTIFIER_STATE].sort());
    const prefix = `${uniqueName('slots')}:`;
    const tagged = NOTIFIER_STATE.map((key) => clusterKey(prefix, key));
    const plain = NOTIFIER_STATE.map((key) => `${prefix}${key}`);
    expect(new Set(await Promise.all(tagged.map((name) => cluster.slotOf(name)))).size).toBe(1);
    // The test sees the difference: without the tags the same keys fall in different slots.
    expect(new Set(await Promise.all(plain.map((name) => cluster.slotOf(name)))).size).toBeGreaterThan(1);

    const raw = new Cluster([{ host: '127.0.0.1', port: cluster.nodes[0]!.port }], { redisOptions: { maxRetriesPerRequest: 1 } });
    raw.on('error', () => {});
    try {
      for (const name of [...tagged, ...plain]) await raw.set(name, 'x');
      expect(await raw.del(...tagged)).toBe(tagged.length);
      await expect(raw.del(...plain)).rejects.toThrow(/CROSSSLOT/);
    } finally {
      raw.disconnect();
    }
  });

  it("the store deletes grouped and ungrouped keys in one call, and reads the notifier's state under the names it wrote", async () => {
    const store = new RedisStore({ url: cluster.url, prefix: `${uniqueName('delete')}:` });
    try {
      const hosts = Array.from({ length: 40 }, (_, i) => engineHostKey(`gpu-node-${i}`));
      for (const key of hosts) await store.set(key, '{}');
      for (const key of NOTIFIER_STATE) await store.hashSet(key, { f: key });
      expect(await store.hashGet(GROUPS_KEY, 'f')).toBe(GROUPS_KEY);
      expect(await store.delete(...hosts, 'engine:host:never-written', GROUPS_KEY, GROUP_ALERTS_KEY, FIRING_KEY)).toBe(hosts.length + 3);
      expect(await store.hashGetAll(FIRING_KEY)).toEqual({});
      expect(await store.hashGet(STATE_KEY, 'f')).toBe(STATE_KEY);
      expect(await store.get(hosts[0]!)).toBeNull();
    } finally {
      await store.close();
    }
  });
});

describe('a redis+cluster:// URL', () => {
  it('names the seed nodes and the password for every node; a broken one is one line naming REDIS_URL without the password', () => {
    expect(redisConnection('redis+cluster://:s3cret@10.0.0.1:7000,redis-2:7001')).toEqual({
      cluster: {
        seeds: [
          { host: '10.0.0.1', port: 7000 },
          { host: 'redis-2', port: 7001 },
        ],
        options: { enableOfflineQueue: true, redisOptions: { commandTimeout: 15_000, password: 's3cret' } },
      },
    });
    for (const bad of ['redis+cluster://:s3cret@', 'redis+cluster://:s3cret@h:7000/1', 'redis+cluster://:s3cret@h:99999']) {
      expect(() => redisConnection(bad), bad).toThrow(/^REDIS_URL: /);
      expect(() => redisConnection(bad)).not.toThrow(/s3cret/);
    }
  });
});

describe('a cluster nobody answers', () => {
  it('a command fails within its bound, retriable and without the password, rather than waiting for a node without end', async () => {
    const store = new RedisStore({ url: 'redis+cluster://:s3cret@127.0.0.1:9', prefix: 'x:' });
    try {
      const error = await store.get('k').then(
        () => undefined,
        (e: unknown) => e as Error & { retriable?: unknown },
      );
      expect(error?.message).toMatch(/^Redis Cluster \(REDIS_URL\): no answer within 15 s$/);
      expect(error?.retriable).toBe(true);
    } finally {
      await store.close();
    }
  }, 90_000);
});

describe('moving a deployment from one Redis to a cluster', () => {
  it("redis-cli --cluster import carries every key under its name but the notifier's state, which starts empty there", async () => {
    const prefix = `${uniqueName('moved')}:`;
    const single = await onFreePort((port) => OwnRedis.start(port));
    const before = new RedisStore({ url: single.url, prefix });
    const after = new RedisStore({ url: cluster.url, prefix });
    try {
      await before.set(engineHostKey('gpu-1'), 'state of gpu-1');
      await before.hashSet('notifier:pages', { fp: 'told' });
      await before.hashSet(GROUPS_KEY, { g: 'group' });
      await run('redis-cli', ['--cluster', 'import', `127.0.0.1:${cluster.nodes[0]!.port}`, '--cluster-from', `127.0.0.1:${single.port}`, '--cluster-copy'], {
        timeout: 60_000,
      });
      expect(await after.get(engineHostKey('gpu-1'))).toBe('state of gpu-1');
      expect(await after.hashGetAll('notifier:pages')).toEqual({ fp: 'told' });
      expect(await after.hashGetAll(GROUPS_KEY)).toEqual({});
    } finally {
      await before.close();
      await after.close();
      await single.stop();
    }
  });
});

// Last: it leaves the cluster with one master's replica in its place.
describe('the state store when a cluster master fails', () => {
  it('the master killed: its replica takes its slots over, the store follows by itself, and what was written before is still there', async () => {
    const prefix = `${uniqueName('failover')}:`;
    const store = new RedisStore({ url: cluster.url, prefix });
    try {
      const hosts = Array.from({ length: 30 }, (_, i) => `gpu-node-${i}`);
      for (const host of hosts) await store.set(engineHostKey(host), `state of ${host}`);
      await store.hashSet(GROUPS_KEY, { g: 'group' });
      await store.set(STATE_KEY, 'rest');
      const slot = await cluster.slotOf(clusterKey(prefix, GROUPS_KEY));
      const victim = await cluster.masterOf(slot);
      const replica = (await cluster.layout()).find((n) => n.masterId === victim.id);
      expect(replica).toBeDefined();
      const servedByVictim: string[] = [];
      for (const host of hosts)
        if ((await cluster.masterOf(await cluster.slotOf(`${prefix}${engineHostKey(host)}`))).id === victim.id) servedByVictim.push(host);
      expect(servedByVictim.length).toBeGreaterThan(0);
      await cluster.replicated(victim);

      await cluster.kill(victim.port);
      await waitFor(async () => (await cluster.masterOf(slot).catch(() => undefined))?.id === replica?.id, 'the replica promoted to serve the slots', 60_000);
      await waitFor(
        async () =>
          await store.set('after', 'written').then(
            () => true,
            () => false,
          ),
        'a write after the failover',
        60_000,
      );
      for (const host of hosts) expect(await store.get(engineHostKey(host))).toBe(`state of ${host}`);
      expect(await store.hashGetAll(GROUPS_KEY)).toEqual({ g: 'group' });
      expect(await store.get(STATE_KEY)).toBe('rest');
      expect(await store.get('after')).toBe('written');
    } finally {
      await store.close();
    }
  }, 180_000);
});
