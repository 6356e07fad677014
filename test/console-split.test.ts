import { once } from 'node:events';
import { KafkaBus, envelopeMessage } from '@gpualert/bus';
import { emptyMetrics } from '@gpualert/gpu-metrics';
import { newEnvelope, TOPICS, type FleetSnapshot } from '@gpualert/schema';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { cleanEnv, startCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const TOKEN = 'console-split-token-0123456789';
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

describe('the console of a split deployment (gpualert engine and gpualert notifier apart)', () => {
  it('draws the fleet from the host states the engine saves to Redis and the samples on Kafka', async () => {
    const prefix = `${uniqueName('split')}.`;
    const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    cleanups.push(() => bus.close());
    const env = cleanEnv({
      KAFKA_BROKERS: inject('kafkaBrokers'),
      REDIS_URL: inject('redisUrl'),
      GPUALERT_TOPIC_PREFIX: prefix,
      GPUALERT_KEY_PREFIX: `${uniqueName('split')}:`,
      GPUALERT_PARTITIONS: '3',
      GPUALERT_ENGINE_PORT: '0',
      GPUALERT_ENGINE_LISTEN: '127.0.0.1',
      GPUALERT_NOTIFIER_PORT: '0',
      GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
      GPUALERT_NOTIFIER_TOKEN: TOKEN,
      GPUALERT_LOG_FORMAT: 'json',
      // Routes that need no vendor's credentials: what `up` uses.
      GPUALERT_ROUTES: new URL('../rules/routes.embedded.yaml', import.meta.url).pathname,
    });
    const engine = service(['engine'], env);
    const notifier = service(['notifier'], env);
    await waitFor(() => /notifier_listening/.test(notifier.output()) || notifier.exitCode !== null, 'gpualert notifier', 60_000);
    await waitFor(() => /group_joined/.test(engine.output()) || engine.exitCode !== null, 'gpualert engine', 60_000);
    const port = /"port":(\d+)[^\n]*notifier_listening|notifier_listening[^\n]*"port":(\d+)/.exec(notifier.output());
    expect(port, notifier.output()).not.toBeNull();
    const base = `http://127.0.0.1:${port![1] ?? port![2]}`;

    // Two hosts report, for a few seconds: the engine saves their state, the console reads both.
    const hosts = ['split-node-1', 'split-node-2'];
    const send = async () => {
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
    let fleet: FleetSnapshot | undefined;
    await waitFor(
      async () => {
        await send();
        const answer = await fetch(`${base}/v1/fleet`, { headers: { authorization: `Bearer ${TOKEN}` } });
        if (answer.status !== 200) return false;
        fleet = (await answer.json()) as FleetSnapshot;
        return hosts.every(
          (h) => fleet!.hosts.find((v) => v.host === h)?.gpus.length === 2 && fleet!.hosts.find((v) => v.host === h)?.gpus[1]?.metrics.temp_c.value === 62,
        );
      },
      `both hosts in the console's fleet (engine said:\n${engine.output().slice(-1500)}\nnotifier said:\n${notifier.output().slice(-1500)})`,
      60_000,
    );
    expect(fleet!.source).toBe('engine');
    expect((await fetch(`${base}/v1/fleet`)).status).toBe(401);
  }, 120_000);
});
