import { appendFileSync, chmodSync, mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '@gpualert/bus';
import { FileLineSource, nvidiaSmiSource, startAgent, type AgentPlan } from '@gpualert/collectors';
import { loadRuleSet } from '@gpualert/engine';
import { startEngineService } from '@gpualert/engine-service';
import { createLogger } from '@gpualert/log';
import { startNotifier } from '@gpualert/notifier';
import { RoutesFile } from '@gpualert/notify';
import { loadXidCatalog } from '@gpualert/rules';
import { TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { xidFlood, XID_FLOOD_BUSES } from '@gpualert/test-support';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeNvidiaSmi } from './infra/fake-nvidia-smi.ts';
import { waitFor } from './infra/wait-for.ts';

const log = createLogger({ name: 'test', level: 'silent' });
const rules = loadRuleSet();
const catalog = loadXidCatalog();
if (!rules.ok || !catalog.ok) throw new Error('the bundled rules load');
const RULES = rules.value;
const CATALOG = catalog.value;
const HOST = 'gpu-node-7';
/** Critical alerts page (as the bundled routes do); the record channel lands each decision on gpualert.notifications. */
const ROUTES = RoutesFile.parse({
  receivers: [
    { name: 'chat', channel: 'record' },
    { name: 'pager', channel: 'record' },
  ],
  route: {
    receiver: 'chat',
    group_by: ['host', 'rule', 'gpu'],
    group_wait: '0s',
    group_interval: '1s',
    repeat_interval: '4h',
    routes: [{ matchers: ['severity="critical"'], receiver: 'pager', page: true }],
  },
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A stand-in systemctl: `is-active` prints what the test wrote (active, failed…), exit 0 only for active. */
function fakeSystemctl(): { path: string; say(state: string): void } {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-systemctl-'));
  const path = join(dir, 'systemctl');
  writeFileSync(path, `#!/usr/bin/env bash\nstate="$(cat "$(dirname "$0")/state")"\necho "$state"\n[ "$state" = active ]\n`);
  chmodSync(path, 0o755);
  const say = (state: string) => writeFileSync(join(dir, 'state'), state);
  say('active');
  return { path, say };
}

/** The agent, the engine and the notifier on one in-process bus, as `gpualert up` and an agent run them. */
async function pipeline(plan: Omit<AgentPlan, 'host' | 'labels'>) {
  const bus = new MemoryBus({ partitions: 1 });
  await bus.ensureTopics(Object.values(TOPICS));
  const store = new MemoryStore();
  const engine = await startEngineService({ bus, store, log, ruleSet: RULES, catalog: CATALOG, clock: 'wall', tickMs: 200 });
  const notifier = await startNotifier({ bus, store, log, routes: ROUTES, env: {}, flushEveryMs: 50 });
  const agent = await startAgent({ host: HOST, labels: { cluster: 'test' }, network: false, ...plan }, { bus, store, log });
  cleanups.push(async () => {
    await agent.stop();
    await notifier.stop();
    await engine.stop();
    await bus.close();
  });
  const alerts = async () =>
    (await bus.read(TOPICS.alerts)).map((m) => JSON.parse(m.value.toString('utf8')) as Envelope).filter((e): e is EnvelopeOf<'alert'> => e.type === 'alert');
  const notifications = async () =>
    (await bus.read(TOPICS.notifications))
      .map((m) => JSON.parse(m.value.toString('utf8')) as Envelope)
      .filter((e): e is EnvelopeOf<'notification'> => e.type === 'notification');
  /** The pages told for an alert of `rule` (and `telemetry_source`), firing or resolved. */
  const pages = async (rule: string, status: 'firing' | 'resolved', source?: string) => {
    const matching = (await alerts()).filter((a) => a.data.rule === rule && (source === undefined || a.labels.telemetry_source === source));
    const prints = new Set(matching.map((a) => a.data.fingerprint));
    const told = (await notifications()).filter(
      (n) => n.data.receiver === 'pager' && n.data.outcome === 'sent' && n.data.fingerprints.some((f) => prints.has(f)),
    );
    return { alerts: matching.filter((a) => a.data.status === status), told };
  };
  return { bus, alerts, pages };
}

describe('telemetry that goes quiet is paged, naming what went quiet, and resolved when it comes back', () => {
  it('nvidia-smi hanging, Fabric Manager down and the kernel log gone: each its own page on the host, each resolved', async () => {
    const smi = new FakeNvidiaSmi();
    const systemctl = fakeSystemctl();
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-quiet-'));
    const kernLog = join(dir, 'kern.log');
    writeFileSync(kernLog, '');
    const { bus, pages } = await pipeline({
      gpu: { source: await nvidiaSmiSource({ binary: smi.path, timeoutMs: 1_000, attribution: false }), intervalMs: 300 },
      kernel: { source: new FileLineSource(kernLog), catalog: CATALOG },
      fabricManager: { systemctl: systemctl.path, unit: 'nvidia-fabricmanager.service', intervalMs: 300, timeoutMs: 2_000 },
      telemetry: { heartbeatMs: 2_000, checkMs: 100, kernelStoppedMs: 500 },
    });
    // Healthy first: heartbeats say every source is ok, and nothing pages.
    await waitFor(
      async () => {
        const beats = (await bus.read(TOPICS.hostSamples))
          .map((m) => JSON.parse(m.value.toString('utf8')) as Envelope)
          .filter((e): e is EnvelopeOf<'telemetry.health'> => e.type === 'telemetry.health');
        const last = beats.at(-1)?.data.sources.map((s) => `${s.source}=${s.state}`);
        return last?.join(',') === 'nvidia-smi=ok,kernel-log=ok,fabric-manager=ok';
      },
      'a heartbeat with every source ok',
      20_000,
    );
    expect((await pages('telemetry-stalled', 'firing')).alerts).toEqual([]);

    // nvidia-smi hangs: killed after its 1 s timeout, the heartbeat says so, the engine pages it.
    smi.mode('hang');
    await waitFor(async () => (await pages('telemetry-stalled', 'firing', 'nvidia-smi')).told.length > 0, 'nvidia-smi stalled paged', 20_000);
    const stalled = (await pages('telemetry-stalled', 'firing', 'nvidia-smi')).alerts[0]!;
    expect(stalled.data).toMatchObject({ severity: 'critical', category: 'collector' });
    expect(stalled.data.summary).toMatch(/^nvidia-smi on gpu-node-7 went quiet \(stalled.*timed out|^nvidia-smi on gpu-node-7 went quiet \(stalled/);
    smi.mode('ok');
    await waitFor(async () => (await pages('telemetry-stalled', 'resolved', 'nvidia-smi')).alerts.length > 0, 'nvidia-smi back resolves it', 20_000);
    await waitFor(async () => (await pages('telemetry-stalled', 'resolved', 'nvidia-smi')).told.length >= 2, 'the pager told of the resolve too', 20_000);

    // Fabric Manager's unit fails: its own alert, naming it; active again resolves it.
    systemctl.say('failed');
    await waitFor(async () => (await pages('telemetry-stalled', 'firing', 'fabric-manager')).told.length > 0, 'Fabric Manager down paged', 20_000);
    expect((await pages('telemetry-stalled', 'firing', 'fabric-manager')).alerts[0]!.data.summary).toContain('nvidia-fabricmanager.service is failed');
    systemctl.say('active');
    await waitFor(async () => (await pages('telemetry-stalled', 'resolved', 'fabric-manager')).alerts.length > 0, 'Fabric Manager back resolves it', 20_000);

    // The kernel log's file goes away: the reader has nothing to read; back, it is resolved.
    renameSync(kernLog, `${kernLog}.gone`);
    await waitFor(async () => (await pages('telemetry-stalled', 'firing', 'kernel-log')).told.length > 0, 'the kernel log stopped paged', 20_000);
    expect((await pages('telemetry-stalled', 'firing', 'kernel-log')).alerts[0]!.data.summary).toContain('kern.log is not there');
    renameSync(`${kernLog}.gone`, kernLog);
    await waitFor(async () => (await pages('telemetry-stalled', 'resolved', 'kernel-log')).alerts.length > 0, 'the kernel log back resolves it', 20_000);
  }, 120_000);
});

describe('a flood of one Xid, end to end', () => {
  it('200,000 lines of Xid 95 on two GPUs: a handful of kernel events, one page per GPU, every line counted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-flood-'));
    const kernLog = join(dir, 'kern.log');
    writeFileSync(kernLog, '');
    const { bus, alerts, pages } = await pipeline({
      kernel: {
        source: new FileLineSource(kernLog),
        catalog: CATALOG,
        gpuIndexByPci: new Map<string, number>(XID_FLOOD_BUSES.map((bus, i) => [bus, i])),
      },
      telemetry: { heartbeatMs: 2_000, checkMs: 200 },
    });
    // An hour's flood that ended two minutes ago, as the kernel log holds it, written at once: what a collector starting on that host reads.
    const hour = 3_600_000;
    const start = Math.floor((Date.now() - hour - 120_000) / 1000) * 1000;
    appendFileSync(kernLog, `${xidFlood({ lines: 200_000, startMs: start, spacingMs: hour / 200_000 }).join('\n')}\n`);
    const events = async () =>
      (await bus.read(TOPICS.kernelEvents))
        .map((m) => JSON.parse(m.value.toString('utf8')) as Envelope)
        .filter((e): e is EnvelopeOf<'kernel.event'> => e.type === 'kernel.event');
    const counted = async () => (await events()).reduce((n, e) => n + (e.data.count ?? 1), 0);
    // The last minute's count is told a minute after the one before it: here, at once (the lines are two minutes old).
    await waitFor(async () => (await counted()) === 200_000, 'every line counted into the events', 30_000);
    const published = await events();
    // About one event a minute per GPU, not one per line (nor per burst).
    expect(published.length).toBeLessThanOrEqual(2 * 64);
    for (const gpu of [0, 1]) {
      const last = published.filter((e) => e.data.gpu === gpu).at(-1)!.data;
      expect(last.episode).toMatchObject({ first_ts: new Date(start + gpu * (hour / 200_000)).toISOString(), lines: 100_000 });
    }
    await waitFor(async () => (await pages('kernel-event', 'firing')).told.length >= 2, 'the Xid 95 paged', 30_000);
    // One alert per GPU, each paged once: the engine's and the notifier's work does not grow with the lines.
    const xid = (await alerts()).filter((a) => a.data.rule === 'kernel-event');
    expect(xid.map((a) => `${a.data.status} GPU ${String(a.data.gpu?.index)} ${a.data.severity}`).sort()).toEqual([
      'firing GPU 0 critical',
      'firing GPU 1 critical',
    ]);
    expect((await pages('kernel-event', 'firing')).told).toHaveLength(2);
  }, 120_000);
});
