import { envelopeMessage, MemoryBus, type Bus } from '@gpualert/bus';
import { SlurmExecutor } from '@gpualert/executors';
import { createLogger } from '@gpualert/log';
import { parsePolicy, RemediationCore } from '@gpualert/remediation';
import { REMEDIATOR_SOURCE, startRemediator } from '@gpualert/remediator';
import { newEnvelope, parseEnvelope, stableId, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SlurmCluster } from './infra/slurm-cluster.ts';
import { close, listen } from './infra/http.ts';
import { createNotifierServer, NotifierMetrics } from '@gpualert/notifier';
import { MemoryStore } from '@gpualert/state';

/**
 * `gpualert remediate`'s service on the in-process bus, acting on a real one-machine Slurm:
 * alerts in, actions on gpualert.actions, and what sinfo shows.
 */
const NODES = ['gpu-01', 'gpu-02', 'gpu-03', 'gpu-04'];
let cluster: SlurmCluster;

beforeAll(async () => {
  cluster = await SlurmCluster.start(NODES, 'gpu');
}, 120_000);

afterAll(async () => {
  await cluster?.stop();
});

function alert(host: string, status: 'firing' | 'resolved', fingerprint = `fp-${host}`): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: stableId('alert', host, fingerprint, status),
    ts: new Date().toISOString(),
    host,
    labels: { partition: 'gpu' },
    source: 'engine/test',
    data: {
      fingerprint,
      status,
      severity: 'critical',
      category: 'fallen_off_bus',
      rule: 'gpu-absent',
      summary: `GPU 1 on ${host} has disappeared (Xid 79: GPU has fallen off the bus)`,
      starts_at: '2026-06-01T00:00:00.000Z',
      evidence: [],
    },
  });
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, deadlineMs = 30_000): Promise<T> {
  const end = Date.now() + deadlineMs;
  while (Date.now() < end) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`not ${what} within ${deadlineMs} ms`);
}

async function topic(bus: MemoryBus, name: string): Promise<Envelope[]> {
  return (await bus.read(name)).flatMap((m) => {
    const parsed = parseEnvelope(m.value.toString('utf8'));
    return parsed.ok ? [parsed.value] : [];
  });
}

const row = (host: string) => cluster.sinfo().find((l) => l.startsWith(`${host}|`)) ?? '';

describe('the remediator service', () => {
  it('waits for approval, tells people how to give it, drains once approved, never twice on a replay, and undoes on evidence', async () => {
    const loaded = parsePolicy(
      't.yaml',
      `partitions: { gpu: 4 }
breaker: { max_share: 0.5, window: 1h }
defaults:
  approval: { required: true, timeout: 1h, on_timeout: deny }
  undo: { on: quiet, quiet_for: 1s }
rules:
  - { name: bus, match: ['category="fallen_off_bus"'], action: drain, reason: 'gpualert: Xid 79' }
  - { name: marker, match: ['category="thermal"'], action: reboot }
`,
    );
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    const bus = new MemoryBus();
    const executor = new SlurmExecutor({ scontrol: cluster.bin('scontrol'), sinfo: cluster.bin('sinfo'), env: { ...process.env, ...cluster.env } });
    const core = new RemediationCore(loaded.value, { source: REMEDIATOR_SOURCE, executor: executor.name });
    // The notifier's console beside it, on the same bus: the approval alert links there, and the person approves there.
    const token = 'remediator-console-token-01';
    const consoleServer = createNotifierServer(new MemoryStore(), new NotifierMetrics(), token, bus);
    const consoleUrl = await listen(consoleServer);
    const service = await startRemediator({ bus, log: createLogger({ name: 't', level: 'silent' }), core, executor, tickMs: 100, consoleUrl });
    try {
      await bus.publish(TOPICS.alerts, [envelopeMessage(alert('gpu-02', 'firing'))]);
      const waiting = await until('awaiting approval', async () =>
        (await topic(bus, TOPICS.actions)).find((e): e is EnvelopeOf<'action'> => e.type === 'action' && e.data.phase === 'awaiting_approval'),
      );
      const id = waiting.data.action_id;
      const told = await until('an approval alert', async () =>
        (await topic(bus, TOPICS.alerts)).find((e) => e.type === 'alert' && e.data.rule === 'remediation-approval'),
      );
      expect(told.type === 'alert' && told.data.summary).toContain(`gpualert action approve ${id}`);
      const link = told.type === 'alert' ? told.data.annotations?.approve_url : undefined;
      expect(link).toBe(`${consoleUrl}/console/#/actions/${id}`);
      expect(told.type === 'alert' && told.data.action).toContain(link);
      expect(row('gpu-02')).toMatch(/\|idle\|/); // nothing done before a person says

      // alice approves in the console the link opens (the page's own call)
      const approved = await fetch(`${consoleUrl}/v1/actions/${encodeURIComponent(id)}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approved', by: 'alice' }),
      });
      expect(approved.status).toBe(200);
      await until('gpu-02 drained', () => (/\|drained\|gpualert: Xid 79$/.test(row('gpu-02')) ? true : undefined));
      await until('a result', async () => (await topic(bus, TOPICS.actions)).find((e) => e.type === 'action.result' && e.data.outcome === 'succeeded'));

      // The same alert again, and the approval again: nothing new is decided or run. Markers on
      // the same host (so the same partitions, read in order) show both were consumed.
      await bus.publish(TOPICS.alerts, [envelopeMessage(alert('gpu-02', 'firing'))]);
      await bus.publish(TOPICS.actions, [
        envelopeMessage(
          newEnvelope({ type: 'action.approval', host: 'gpu-02', source: 'cli/test', data: { action_id: id, decision: 'approved', by: 'alice' } }),
        ),
      ]);
      const marker = alert('gpu-02', 'firing', 'marker');
      await bus.publish(TOPICS.alerts, [envelopeMessage({ ...marker, data: { ...marker.data, category: 'thermal' } })]);
      const markerAction = await until('the marker decided', () => core.list().find((a) => a.kind === 'reboot'));
      await bus.publish(TOPICS.actions, [
        envelopeMessage(
          newEnvelope({ type: 'action.approval', host: 'gpu-02', source: 'cli/test', data: { action_id: markerAction.id, decision: 'denied', by: 'bob' } }),
        ),
      ]);
      await until('the marker denied', () => (core.get(markerAction.id)?.status === 'denied' ? true : undefined));
      const ours = (await topic(bus, TOPICS.actions)).filter((e) => e.source === REMEDIATOR_SOURCE);
      expect(ours.filter((e) => e.type === 'action' && e.data.kind === 'drain').map((e) => e.type === 'action' && e.data.phase)).toEqual([
        'awaiting_approval',
        'proposed',
      ]);
      expect(ours.filter((e) => e.type === 'action.result').map((e) => e.type === 'action.result' && `${e.data.kind}:${e.data.outcome}`)).toEqual([
        'drain:succeeded',
      ]);
      expect(core.list().filter((a) => a.kind === 'drain')).toHaveLength(1);

      // Undo: not while an alert calling for an action fires (the marker calls for a reboot); once both resolved, a healthy sample and the quiet period give it back.
      await bus.publish(TOPICS.gpuSamples, [envelopeMessage(newEnvelope({ type: 'gpu.sample', host: 'gpu-02', source: 'test', data: { gpus: [] } }))]);
      expect(row('gpu-02')).toMatch(/drained/);
      const markerResolved = alert('gpu-02', 'resolved', 'marker');
      await bus.publish(TOPICS.alerts, [
        envelopeMessage(alert('gpu-02', 'resolved')),
        envelopeMessage({ ...markerResolved, data: { ...markerResolved.data, category: 'thermal' } }),
      ]);
      await until('the resolve consumed', () => (core.holds().length === 1 ? true : undefined));
      // The node keeps sampling, as a live one does: evidence counts from each sample's own time.
      await until('gpu-02 back in service', async () => {
        if (/\|idle\*?\|none$/.test(row('gpu-02'))) return true;
        await bus.publish(TOPICS.gpuSamples, [envelopeMessage(newEnvelope({ type: 'gpu.sample', host: 'gpu-02', source: 'test', data: { gpus: [] } }))]);
        return undefined;
      });
      const resumed = (await topic(bus, TOPICS.actions)).filter((e) => e.type === 'action' && e.data.kind === 'resume');
      expect(resumed.map((e) => e.type === 'action' && e.data.policy_rule)).toEqual(['undo']);
    } finally {
      await service.stop();
      await close(consoleServer);
      await bus.close();
    }
  });

  it('a decision the bus would not take (Kafka away) is not left running: the drain runs, and the decision and its result go out once the bus answers', async () => {
    const loaded = parsePolicy(
      't.yaml',
      `partitions: { gpu: 4 }
breaker: { max_share: 0.5, window: 1h }
defaults: { approval: { required: false }, undo: { on: never } }
rules:
  - { name: bus, match: ['category="fallen_off_bus"'], action: drain, reason: 'gpualert: Xid 79' }
`,
    );
    if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
    const inner = new MemoryBus();
    // The actions topic refuses every publish, as Kafka does while its brokers are away, until told.
    let actionsAway = true;
    const refuse = (topic: string) => {
      if (actionsAway && topic === TOPICS.actions) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9092'), { code: 'ECONNREFUSED' });
    };
    const bus: Bus = {
      kind: 'memory',
      ensureTopics: (topics) => inner.ensureTopics(topics),
      publish: async (topic, messages) => {
        refuse(topic);
        await inner.publish(topic, messages);
      },
      consume: (options) =>
        inner.consume({
          ...options,
          handler: (batch, context) =>
            options.handler(batch, {
              caughtUp: (topic) => context.caughtUp(topic),
              publish: async (topic, messages) => {
                refuse(topic);
                await context.publish(topic, messages);
              },
            }),
        }),
      read: (topic, options) => inner.read(topic, options),
      ready: () => inner.ready(),
      close: () => inner.close(),
    };
    const executor = new SlurmExecutor({ scontrol: cluster.bin('scontrol'), sinfo: cluster.bin('sinfo'), env: { ...process.env, ...cluster.env } });
    const core = new RemediationCore(loaded.value, { source: REMEDIATOR_SOURCE, executor: executor.name });
    const service = await startRemediator({ bus, log: createLogger({ name: 't', level: 'silent' }), core, executor, tickMs: 100 });
    try {
      await inner.publish(TOPICS.alerts, [envelopeMessage(alert('gpu-03', 'firing'))]);
      await until('gpu-03 drained while the bus is away', () => (/\|drained\|gpualert: Xid 79$/.test(row('gpu-03')) ? true : undefined));
      await until('the action finished', () => (core.list().find((a) => a.host === 'gpu-03')?.status === 'succeeded' ? true : undefined));
      expect((await topic(inner, TOPICS.actions)).filter((e) => e.host === 'gpu-03')).toEqual([]);

      actionsAway = false;
      const told = await until('the decision and its result on gpualert.actions', async () => {
        const ours = (await topic(inner, TOPICS.actions)).filter((e) => e.host === 'gpu-03');
        return ours.some((e) => e.type === 'action.result') ? ours : undefined;
      });
      expect(told.map((e) => (e.type === 'action' ? e.data.phase : e.type === 'action.result' ? e.data.outcome : e.type))).toEqual(['proposed', 'succeeded']);
      expect(core.list().filter((a) => a.host === 'gpu-03' && a.kind === 'drain')).toHaveLength(1);
    } finally {
      await service.stop();
      await bus.close();
      spawnSync(cluster.bin('scontrol'), ['update', 'NodeName=gpu-03', 'State=RESUME'], { env: { ...process.env, ...cluster.env } });
    }
  });
});
