import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { freePort, onFreePort } from './free-port.ts';
import { OwnRedis } from './redis-server.ts';
import { waitFor } from './wait-for.ts';

const run = promisify(execFile);

/** How long a master may be silent before the others fail it over to its replica: seconds, not the default 15. */
const NODE_TIMEOUT_MS = 1_000;

/** One node as CLUSTER NODES describes it. */
export interface ClusterNode {
  readonly id: string;
  readonly port: number;
  readonly master: boolean;
  /** A replica's master; undefined for a master. */
  readonly masterId: string | undefined;
  readonly failed: boolean;
  /** Slot ranges served (`0-5460`), a master's only. */
  readonly slots: readonly (readonly [number, number])[];
}

/**
 * A Redis Cluster of this machine's `redis-server`: three masters and a replica each, on loopback
 * ports, keeping nothing on disk, made one cluster by `redis-cli --cluster create`. Killing a
 * master lets its replica take its slots over.
 */
export class RedisCluster {
  private constructor(readonly nodes: readonly OwnRedis[]) {}

  /** The store's URL: the masters as first created are its seeds. */
  get url(): string {
    return `redis+cluster://${this.nodes
      .slice(0, 3)
      .map((n) => `127.0.0.1:${n.port}`)
      .join(',')}`;
  }

  static async start(masters = 3): Promise<RedisCluster> {
    const nodes: OwnRedis[] = [];
    const cluster = new RedisCluster(nodes);
    try {
      for (let i = 0; i < masters * 2; i += 1) {
        // The cluster bus listens on a port of its own: both free, or both taken again.
        const busPort = await freePort();
        nodes.push(
          await onFreePort((port) =>
            OwnRedis.start(port, ['--cluster-enabled', 'yes', '--cluster-node-timeout', String(NODE_TIMEOUT_MS), '--cluster-port', String(busPort)]),
          ),
        );
      }
      // redis-cli gives the first `masters` nodes the slots and the others to them as replicas.
      const addresses = nodes.map((n) => `127.0.0.1:${n.port}`);
      await run('redis-cli', ['--cluster', 'create', ...addresses, '--cluster-replicas', '1', '--cluster-yes'], { timeout: 60_000 }).catch((error: unknown) => {
        const e = error as { stdout?: string; stderr?: string; message: string };
        throw new Error(`redis-cli --cluster create failed: ${`${e.stdout ?? ''}${e.stderr ?? ''}`.slice(-1_000) || e.message}`);
      });
      await waitFor(async () => (await cluster.ready()) === '', 'the cluster to agree (cluster_state:ok everywhere, every replica in sync)', 60_000).catch(
        async (error: unknown) => {
          throw new Error(`${String(error)}: ${await cluster.ready()}`);
        },
      );
    } catch (error) {
      await cluster.stop();
      throw error;
    }
    return cluster;
  }

  /** What keeps the cluster from being ready, or '' once every node says ok and every replica is in sync. */
  private async ready(): Promise<string> {
    for (const node of this.nodes) {
      const info = await ask(node.port, ['CLUSTER', 'INFO']).catch(() => '');
      if (!/cluster_state:ok/.test(info)) return `node ${node.port}: not cluster_state:ok`;
      if (!new RegExp(`cluster_known_nodes:${this.nodes.length}\\b`).test(info)) return `node ${node.port}: does not know every node yet`;
    }
    const layout = await this.layout();
    if (layout.filter((n) => n.master).length * 2 !== this.nodes.length) return 'masters and replicas not yet paired';
    for (const replica of layout.filter((n) => !n.master)) {
      if (!/master_link_status:up/.test(await ask(replica.port, ['INFO', 'replication']).catch(() => ''))) return `replica ${replica.port}: not in sync`;
    }
    return '';
  }

  /** The cluster's nodes as a live node sees them. */
  async layout(): Promise<ClusterNode[]> {
    return parseClusterNodes(await this.askAny(['CLUSTER', 'NODES']));
  }

  /** The slot Redis hashes a key (as the server names it) to. */
  async slotOf(name: string): Promise<number> {
    return Number(await this.askAny(['CLUSTER', 'KEYSLOT', name]));
  }

  /** One command to the first node that answers. */
  private async askAny(command: readonly [string, ...string[]]): Promise<string> {
    for (const node of this.nodes) {
      const answer = await ask(node.port, command).catch(() => undefined);
      if (answer !== undefined) return answer;
    }
    throw new Error('no cluster node answers');
  }

  /** The live master serving a slot. */
  async masterOf(slot: number): Promise<ClusterNode> {
    const master = (await this.layout()).find((n) => n.master && !n.failed && n.slots.some(([from, to]) => from <= slot && slot <= to));
    if (!master) throw new Error(`no live master serves slot ${slot}`);
    return master;
  }

  /** Waits until a master's replica has everything the master was sent so far (replication is asynchronous). */
  async replicated(master: ClusterNode): Promise<void> {
    const offset = Number(/master_repl_offset:(\d+)/.exec(await ask(master.port, ['INFO', 'replication']))?.[1]);
    await waitFor(
      async () => {
        const replicas = /slave\d+:[^\r\n]*offset=(\d+)/.exec(await ask(master.port, ['INFO', 'replication']));
        return replicas !== null && Number(replicas[1]) >= offset;
      },
      `the replica of ${master.port} to reach offset ${offset}`,
      30_000,
    );
  }

  /** Kills one node (SIGKILL: nothing saved). */
  async kill(port: number): Promise<void> {
    const node = this.nodes.find((n) => n.port === port);
    if (!node) throw new Error(`no node on ${port}`);
    await node.stop();
  }

  async stop(): Promise<void> {
    for (const node of this.nodes) await node.stop();
  }
}

/** One command to one node, on a connection of its own that never follows a redirection. */
async function ask(port: number, command: readonly [string, ...string[]]): Promise<string> {
  const client = new Redis({ port, host: '127.0.0.1', lazyConnect: true, connectTimeout: 3_000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return String(await client.call(...command));
  } finally {
    client.disconnect();
  }
}

/** CLUSTER NODES: `id host:port@bus flags master-id ping pong epoch link slot…`, one node a line. */
export function parseClusterNodes(text: string): ClusterNode[] {
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const [id = '', address = '', flags = '', masterId = '-', , , , , ...slots] = line.trim().split(' ');
      const flagSet = new Set(flags.split(','));
      return {
        id,
        port: Number(/:(\d+)@/.exec(address)?.[1]),
        master: flagSet.has('master'),
        masterId: masterId === '-' ? undefined : masterId,
        failed: flagSet.has('fail') || flagSet.has('fail?') || flagSet.has('noaddr'),
        slots: slots
          .filter((s) => /^\d+(-\d+)?$/.test(s))
          .map((s) => {
            const [from, to = from] = s.split('-').map(Number);
            return [from!, to!] as const;
          }),
      };
    });
}
