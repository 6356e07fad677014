import { once } from 'node:events';
import { AssignerProtocol, Kafka, logLevel, Partitioners } from 'kafkajs';
import { envelopeMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { emptyMetrics } from '@gpualert/gpu-metrics';
import { newEnvelope, TOPICS, type FleetSnapshot } from '@gpualert/schema';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { cleanEnv, startCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const TOKEN = 'console-split-token-0123456789';
const PARTITIONS = 3;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function service(args: string[], env: NodeJS.ProcessEnv) {
  const child = startCli(args, env);
  cleanups.push(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
  return child;
}

/** Two hosts on each partition (as Kafka's producer places them by key): whichever partitions an engine is given, it owns hosts. */
function hostsOnEveryPartition(): string[] {
  const place = Partitioners.DefaultPartitioner();
  const partitionMetadata = Array.from({ length: PARTITIONS }, (_, partitionId) => ({
    partitionId,
    leader: 0,
    partitionErrorCode: 0,
    replicas: [0],
    isr: [0],
  }));
  const hosts: string[] = [];
  const per = new Map<number, number>();
  for (let i = 0; hosts.length < 2 * PARTITIONS; i += 1) {
    const host = `split-node-${i}`;
    const p = place({ topic: 't', partitionMetadata, message: { key: host, value: null } });
    if ((per.get(p) ?? 0) < 2) {
      per.set(p, (per.get(p) ?? 0) + 1);
      hosts.push(host);
    }
  }
  return hosts;
}

/** Each consumer group under the prefix with the topics its members are assigned, as Kafka says. */
async function groupTopics(brokers: string, prefix: string): Promise<Map<string, Set<string>>> {
  const admin = new Kafka({ brokers: [brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const ids = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(prefix));
    const out = new Map<string, Set<string>>();
    for (const group of (await admin.describeGroups(ids)).groups) {
      const topics = new Set<string>();
      for (const member of group.members) {
        const assignment = AssignerProtocol.MemberAssignment.decode(member.memberAssignment);
        for (const topic of Object.keys(assignment?.assignment ?? {})) topics.add(topic.slice(prefix.length));
      }
      out.set(group.groupId.slice(prefix.length), topics);
    }
    return out;
  } finally {
    await admin.disconnect();
  }
}

describe('the console of a split deployment (gpualert engine ×2 and gpualert notifier apart)', () => {
  it('draws every host and GPU by asking each engine for the hosts it owns and merging them; the notifier consumes no samples', async () => {
    const prefix = `${uniqueName('split')}.`;
    const brokers = inject('kafkaBrokers');
    const bus = new KafkaBus({ brokers: [brokers], topicPrefix: prefix, partitions: PARTITIONS });
    await bus.ensureTopics(Object.values(TOPICS));
    cleanups.push(() => bus.close());
    const env = cleanEnv({
      KAFKA_BROKERS: brokers,
      REDIS_URL: inject('redisUrl'),
      GPUALERT_TOPIC_PREFIX: prefix,
      GPUALERT_KEY_PREFIX: `${uniqueName('split')}:`,
      GPUALERT_PARTITIONS: String(PARTITIONS),
      GPUALERT_ENGINE_PORT: '0',
      GPUALERT_ENGINE_LISTEN: '127.0.0.1',
      GPUALERT_NOTIFIER_PORT: '0',
      GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
      GPUALERT_NOTIFIER_TOKEN: TOKEN,
      GPUALERT_LOG_FORMAT: 'json',
      // Routes that need no vendor's credentials: what `up` uses.
      GPUALERT_ROUTES: new URL('../rules/routes.embedded.yaml', import.meta.url).pathname,
    });
    const engines = [service(['engine'], env), service(['engine'], env)];
    const engineUrls: string[] = [];
    for (const engine of engines) {
      await waitFor(() => /engine_started/.test(engine.output()) || engine.exitCode !== null, 'gpualert engine', 60_000);
      const port = /"metrics_port":(\d+)/.exec(engine.output());
      expect(port, engine.output()).not.toBeNull();
      engineUrls.push(`http://127.0.0.1:${port![1]}`);
    }
    const notifier = service(['notifier'], { ...env, GPUALERT_NOTIFIER_ENGINES: engineUrls.join(',') });
    await waitFor(() => /notifier_listening/.test(notifier.output()) || notifier.exitCode !== null, 'gpualert notifier', 60_000);
    const port = /"port":(\d+)[^\n]*notifier_listening|notifier_listening[^\n]*"port":(\d+)/.exec(notifier.output());
    expect(port, notifier.output()).not.toBeNull();
    const base = `http://127.0.0.1:${port![1] ?? port![2]}`;

    // Six hosts, two on each partition, report for a few seconds: each engine judges the hosts of its partitions.
    const hosts = hostsOnEveryPartition();
    let sentAt = 0;
    const send = async () => {
      if (Date.now() - sentAt < 250) return; // a few samples a second, as hosts would
      sentAt = Date.now();
      const ts = new Date().toISOString();
      await bus.publish(
        TOPICS.gpuSamples,
        hosts.map((host) =>
          envelopeMessage(
            newEnvelope({
              type: 'gpu.sample',
              host,
              source: 'test',
              ts,
              labels: { cluster: 'split' },
              data: {
                gpus: [0, 1].map((index) => ({
                  ...emptyMetrics(index),
                  uuid: `GPU-${host}-${index}`,
                  name: 'NVIDIA H100 80GB HBM3',
                  util_pct: 90,
                  temp_c: 61 + index,
                  power_w: 500,
                })),
              },
            }),
          ),
        ),
      );
    };
    const owned = async (url: string) => ((await (await fetch(`${url}/v1/fleet`)).json()) as FleetSnapshot).hosts.map((h) => h.host);
    let fleet: FleetSnapshot | undefined;
    let split: string[][] = [];
    let seen = '';
    await waitFor(
      async () => {
        await send();
        seen = `${JSON.stringify(split)} ${JSON.stringify(fleet?.hosts.map((h) => [h.host, h.gpus.map((g) => [g.metrics.temp_c.value, g.metrics.temp_c.band])]))} ${JSON.stringify(fleet?.unavailable)}`;
        const answer = await fetch(`${base}/v1/fleet`, { headers: { authorization: `Bearer ${TOKEN}` } });
        if (answer.status !== 200) return false;
        fleet = (await answer.json()) as FleetSnapshot;
        split = await Promise.all(engineUrls.map(owned));
        const drawn = hosts.every((h) => {
          const view = fleet!.hosts.find((v) => v.host === h);
          return view?.gpus.length === 2 && view.gpus[1]?.metrics.temp_c.value === 62 && view.gpus[1].metrics.temp_c.band !== null;
        });
        // Both engines in the group, each owning part of the fleet (the second one's join moves partitions).
        return drawn && split.every((s) => s.length > 0) && split.flat().length === hosts.length;
      },
      `every host in the console's fleet from both engines (engines said:\n${engines.map((e) => e.output().slice(-800)).join('\n')}\nnotifier said:\n${notifier.output().slice(-1500)})`,
      90_000,
    ).catch(async (error: unknown) => {
      for (const url of engineUrls) {
        const text = await (await fetch(`${url}/metrics`)).text();
        seen += `\n${url}: ${text
          .split('\n')
          .filter((l) => /batch_duration_seconds_count|consumer_lag|gpualert_gpu_temp/.test(l))
          .join('\n')
          .slice(0, 2000)}`;
      }
      const said = engines.map(
        (e, i) =>
          `engine ${i}: ${e
            .output()
            .split('\n')
            .filter((l) => /group_joined|assign|failed|engine_started|"level":50/.test(l))
            .map((l) => l.slice(0, 300))
            .join('\n')}`,
      );
      throw new Error(`${String(error)}\nlast seen: ${seen}\n${said.join('\n')}`);
    });
    // Each engine served only its own hosts; the console shows them all, from the engines.
    expect(new Set(split.flat())).toEqual(new Set(hosts));
    expect(split[0]!.filter((h) => split[1]!.includes(h))).toEqual([]);
    expect(fleet!.hosts.map((h) => h.host)).toEqual([...hosts].sort());
    expect(fleet!.source).toBe('engine');
    expect(fleet!.unavailable).toBeUndefined();
    expect((await fetch(`${base}/v1/fleet`)).status).toBe(401);

    // A GPU's page carries its history, asked of the engine that owns its host.
    const gpu = (await (await fetch(`${base}/v1/fleet/${hosts[0]}/1`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as {
      history: { at: number[]; metrics: { temp_c: { values: (number | null)[] } } } | null;
    };
    expect(gpu.history?.metrics.temp_c.values.at(-1)).toBe(62);

    // Who reads the samples topic: the engines' group, and no group of the notifier's (which reads the alerts).
    const groups = await groupTopics(brokers, prefix);
    const readingSamples = [...groups].filter(([, topics]) => topics.has(TOPICS.gpuSamples)).map(([group]) => group);
    expect(readingSamples).toEqual(['gpualert-engine']);
    expect(groups.get('gpualert-notifier')).toEqual(new Set([TOPICS.alerts]));
  }, 150_000);
});
