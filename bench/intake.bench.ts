import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import { resolve } from 'node:path';
import { MemoryBus } from '@gpualert/bus';
import { handleDelivery, sign, type IntakeDeps } from '@gpualert/intake';
import { MAX_HOSTS_PER_PROVIDER_EVENT, parseEnvelope, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { KafkaBroker } from '../test/infra/kafka-broker.ts';
import { ensureRedis } from '../test/infra/redis-server.ts';
import { format, median, percentile, residentMb } from './harness.ts';

const SECRET = `whsec_${Buffer.from('benchmark secret, thirty-two by!').toString('base64')}`;

function post(agent: Agent, port: number, body: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolvePost, reject) => {
    const req = request(
      { agent, host: '127.0.0.1', port, method: 'POST', path: '/v1/events/generic', headers: { ...headers, 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolvePost(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * The intake's own work per delivery, in process (no HTTP, Kafka or Redis): what the bounds and the
 * envelope validation cost on the hot path (one host), at the bound (MAX_HOSTS_PER_PROVIDER_EVENT
 * hosts), and what refusing an event past it costs (16,000 hosts took 23.5 s and 4.5 GB before).
 */
export async function benchIntakeBounds(): Promise<void> {
  console.log('\n## Intake: one delivery in process (adapter, bounds, envelope validation, in-memory bus and store)');
  const deps: IntakeDeps = {
    bus: new MemoryBus({ partitions: 6, retainPerPartition: 50_000 }),
    store: new MemoryStore(),
    now: Date.now,
    seenTtlMs: 60_000,
    publishTimeoutMs: 10_000,
    auth: { secrets: [SECRET], tokenHeader: 'authorization' },
  };
  const deliver = (hosts: number) => {
    const id = randomUUID();
    const body = JSON.stringify({
      event_id: id,
      kind: 'maintenance',
      status: 'scheduled',
      hosts: Array.from({ length: hosts }, (_, i) => `gpu-node-${String(i).padStart(5, '0')}`),
      window_start: '2026-12-01T00:00:00Z',
      duration_seconds: 3600,
    });
    const ts = Math.floor(Date.now() / 1000);
    return handleDelivery(
      {
        provider: 'generic',
        headers: { 'content-type': 'application/json', 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': sign(SECRET, id, ts, body) },
        body: Buffer.from(body),
      },
      deps,
    );
  };
  for (const [hosts, rounds] of [
    [1, 3_000],
    [MAX_HOSTS_PER_PROVIDER_EVENT, 20],
    [16_000, 20],
  ] as const) {
    const times: number[] = [];
    let status = 0;
    for (let i = 0; i < rounds; i += 1) {
      const started = performance.now();
      status = (await deliver(hosts)).status;
      times.push(performance.now() - started);
    }
    console.log(
      `${`${hosts} host${hosts === 1 ? '' : 's'} per event (answer ${status})`.padEnd(58)} ${format(median(times)).padStart(12)} ms median  p99 ${format(percentile(times, 99))} ms`,
    );
  }
  // The share of the one-host figure that is the validation itself: parseEnvelope of what was published.
  const published = (await deps.bus.read(TOPICS.providerEvents)).slice(0, 2_000);
  const started = performance.now();
  for (const m of published) parseEnvelope(m.value);
  console.log(
    `${'parseEnvelope of a published intake envelope'.padEnd(58)} ${format(((performance.now() - started) * 1000) / published.length).padStart(12)} µs each`,
  );
  await deps.bus.close();
}

/** Concurrent signed deliveries on loopback to `gpualert intake` in its own process, Kafka acks included. */
export async function benchIntake(): Promise<void> {
  await benchIntakeBounds();
  console.log('\n## Intake: concurrent signed deliveries (separate process, real Kafka and Redis, acks included)');
  const broker = process.env.KAFKA_BROKERS ? undefined : await KafkaBroker.create();
  const redis = await ensureRedis();
  const brokers = process.env.KAFKA_BROKERS ?? broker!.brokers;
  const intake = spawn(
    process.execPath,
    [resolve(import.meta.dirname, '../bin/gpualert.mjs'), 'intake', '--port', '0', '--listen', '127.0.0.1', '--topic-prefix', `bench-${Date.now()}.`],
    {
      env: { ...process.env, KAFKA_BROKERS: brokers, REDIS_URL: redis.url, GPUALERT_INTAKE_SECRETS: SECRET, GPUALERT_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  intake.stderr.on('data', (c: Buffer) => (output += c.toString()));
  try {
    const deadline = Date.now() + 30_000;
    while (!/"port":(\d+)/.test(output)) {
      if (Date.now() > deadline) throw new Error(`intake did not start: ${output}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const port = Number(/"port":(\d+)/.exec(output)![1]);
    console.log(`${'intake RSS at rest, before any delivery'.padEnd(58)} ${format(residentMb(intake.pid)).padStart(12)} MB`);
    for (const concurrency of [16, 64]) {
      const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
      const latencies: number[] = [];
      const statuses = new Map<number, number>();
      const seconds = 8;
      const warmupUntil = Date.now() + 1_000;
      const until = Date.now() + seconds * 1000 + 1_000;
      let sequence = 0;
      await Promise.all(
        Array.from({ length: concurrency }, async () => {
          while (Date.now() < until) {
            const id = `${randomUUID()}-${sequence++}`;
            const body = JSON.stringify({
              event_id: id,
              kind: 'maintenance',
              status: 'scheduled',
              hosts: [`host-${sequence % 1000}`],
              window_start: '2026-12-01T00:00:00Z',
              duration_seconds: 3600,
              description: 'bench',
            });
            const ts = Math.floor(Date.now() / 1000);
            const started = performance.now();
            const status = await post(agent, port, body, {
              'content-type': 'application/json',
              'webhook-id': id,
              'webhook-timestamp': String(ts),
              'webhook-signature': sign(SECRET, id, ts, body),
            });
            if (Date.now() >= warmupUntil) {
              latencies.push(performance.now() - started);
              statuses.set(status, (statuses.get(status) ?? 0) + 1);
            }
          }
        }),
      );
      agent.destroy();
      const accepted = statuses.get(202) ?? 0;
      console.log(
        `${`concurrency ${concurrency}, ${seconds} s`.padEnd(58)} ${format(accepted / seconds).padStart(12)} accepted/s  p50 ${format(median(latencies))} ms, p99 ${format(percentile(latencies, 99))} ms  (statuses ${JSON.stringify(Object.fromEntries(statuses))})`,
      );
      // The intake's memory under that load (deploy/kubernetes/intake-deployment.yaml's requests come from it).
      console.log(
        `${`intake RSS after concurrency ${concurrency}`.padEnd(58)} ${format(residentMb(intake.pid)).padStart(12)} MB now, ${format(residentMb(intake.pid, 'VmHWM'))} MB peak`,
      );
    }
  } finally {
    intake.kill('SIGTERM');
    await new Promise((r) => intake.once('exit', r));
    await broker?.destroy();
    await redis.stop();
  }
}
