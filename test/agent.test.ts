import { once } from 'node:events';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Bus, type Subscription } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { TOPICS, type Envelope } from '@gpualert/schema';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { FakeNvidiaSmi } from './infra/fake-nvidia-smi.ts';
import { cleanEnv, runCli, startCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('gpualert agent: every collector of a GPU host in one process', () => {
  it('on a broker without its topics (no auto-creation) it says so at start, and still stops within its limit on SIGTERM', async () => {
    const smi = new FakeNvidiaSmi();
    const agent = startCli(
      [
        'agent',
        '--host',
        'gpu-node-7',
        '--nvidia-smi',
        smi.path,
        '--gpu-interval',
        '200ms',
        '--kernel-source',
        'none',
        '--metadata',
        'none',
        '--port',
        '0',
        '--listen',
        '127.0.0.1',
        '--log-format',
        'json',
      ],
      cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: `${uniqueName('no-topics')}.` }),
    );
    cleanups.push(async () => {
      if (agent.exitCode === null) {
        agent.kill('SIGKILL');
        await once(agent, 'exit');
      }
    });
    await waitFor(() => agent.output().includes('"msg":"topics_missing"') || agent.exitCode !== null, 'the missing topics said', 30_000);
    const said = JSON.parse(
      agent
        .output()
        .split('\n')
        .find((l) => l.includes('"msg":"topics_missing"'))!,
    ) as { topics: string[]; waiting: boolean };
    expect(said.topics).toEqual(expect.arrayContaining([expect.stringMatching(/gpu\.samples$/), expect.stringMatching(/host\.inventory$/)]));
    expect(said.waiting).toBe(true);
    // Publishes failing for a while, then SIGTERM: out within the stop limit (20 s) and its grace (2 s).
    await new Promise((r) => setTimeout(r, 3_000));
    const asked = Date.now();
    agent.kill('SIGTERM');
    const [code] = await once(agent, 'exit');
    expect(Date.now() - asked, agent.output().slice(-2000)).toBeLessThan(25_000);
    expect(code === 0 || code === 1, `exit ${String(code)}`).toBe(true);
  }, 60_000);

  it('publishes samples, kernel events and the inventory over one connection, and answers /healthz and /metrics', async () => {
    const prefix = `${uniqueName('agent')}.`;
    const bus: Bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    cleanups.push(() => bus.close());
    const seen: Envelope[] = [];
    const sub: Subscription = await bus.consume({
      group: uniqueName('reader'),
      topics: [TOPICS.gpuSamples, TOPICS.kernelEvents, TOPICS.hostInventory],
      handler: async (batch) => void seen.push(...batch.items.map((i) => i.envelope)),
    });
    cleanups.push(() => sub.stop());

    const smi = new FakeNvidiaSmi();
    const log = join(mkdtempSync(join(tmpdir(), 'gpualert-agent-')), 'kern.log');
    writeFileSync(log, '');
    const agent = startCli(
      [
        'agent',
        '--host',
        'gpu-node-9',
        '--label',
        'cluster=c1',
        '--nvidia-smi',
        smi.path,
        '--gpu-interval',
        '200ms',
        '--kernel-source',
        'file',
        '--kernel-file',
        log,
        '--metadata',
        'none',
        '--port',
        '0',
        '--listen',
        '127.0.0.1',
        '--log-format',
        'json',
      ],
      cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: prefix }),
    );
    cleanups.push(async () => {
      if (agent.exitCode === null) {
        agent.kill('SIGKILL');
        await once(agent, 'exit');
      }
    });
    await waitFor(() => agent.output().includes('"msg":"agent_started"'), 'agent_started', 30_000);
    const port = Number(
      /"port":(\d+)/.exec(
        agent
          .output()
          .split('\n')
          .find((l) => l.includes('agent_started'))!,
      )![1],
    );
    // journalctl's short-iso form: dated now, whatever this machine's uptime
    const now = new Date().toISOString().replace(/\.\d+Z$/, '+0000');
    appendFileSync(log, `${now} gpu-node-9 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n`);

    await waitFor(() => ['gpu.sample', 'kernel.event', 'host.inventory'].every((t) => seen.some((e) => e.type === t)), 'all three kinds', 30_000).catch(
      (e: unknown) => {
        throw new Error(`${String(e)}; seen ${[...new Set(seen.map((x) => x.type))].join(',')}; agent said: ${agent.output().slice(-3000)}`);
      },
    );
    const xid = seen.find((e) => e.type === 'kernel.event')!;
    expect(xid).toMatchObject({ host: 'gpu-node-9', labels: { cluster: 'c1' }, data: { kind: 'xid', xid: 79, gpu: 0 } });
    expect(seen.find((e) => e.type === 'gpu.sample')).toMatchObject({ host: 'gpu-node-9', data: { gpus: [{ index: 0 }, { index: 1 }] } });
    expect(seen.find((e) => e.type === 'host.inventory')).toMatchObject({ host: 'gpu-node-9', data: { gpu_count: 2, driver_version: '550.54.15' } });

    // Healthy means a GPU sample got through within 3 intervals (600 ms here): on a loaded machine one
    // slow nvidia-smi run or Kafka round trip can open such a gap for a moment (measured: about one
    // /healthz poll in 200 answered 503 under two busy loops), so one answer is not the agent's state.
    let health = { status: 0, body: undefined as unknown };
    await waitFor(
      async () => {
        const answer = await fetch(`http://127.0.0.1:${port}/healthz`);
        health = { status: answer.status, body: await answer.json() };
        return answer.status === 200;
      },
      'a healthy agent',
      30_000,
    );
    expect(health.body).toMatchObject({ healthy: true, host: 'gpu-node-9', collectors: ['inventory', 'gpu', 'kernel'] });
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toMatch(
      new RegExp(
        `gpualert_agent_published_messages_total\\{topic="${prefix.replace(/\./g, '\\.')}gpualert\\.gpu\\.samples"\\} [1-9]|gpualert_agent_published_messages_total\\{topic="gpualert\\.gpu\\.samples"\\} [1-9]`,
      ),
    );
    expect(metrics).toContain('gpualert_agent_process_resident_memory_bytes');

    // nvidia-smi hangs: samples stop getting through, and /healthz says so instead of lying
    smi.mode('hang');
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).status === 503, 'an unhealthy agent', 30_000);

    agent.kill('SIGTERM');
    expect((await once(agent, 'exit'))[0]).toBe(0);
  });

  it('refuses a bad setting with one line naming it', async () => {
    const result = await runCli(['agent', '--gpu-interval', 'soon']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'error[GA-CONFIG-INVALID]: invalid config: --gpu-interval (flag): expected a duration like 500ms, 10s or 5m, at most 24h (got "soon")',
    );
    const label = await runCli(['agent', '--label', 'not a label=x']);
    expect(label.code).toBe(2);
    expect(label.stderr).toMatch(/^error\[GA-CONFIG-INVALID\]: invalid config: --label \(flag\): expected key=value/);
  });
});
