import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { newEnvelope, TOPICS, type Envelope, type EnvelopeOf, type GpuMetrics } from '@gpualert/schema';
import type { Timeline } from '@gpualert/timeline';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli } from './infra/run-cli.ts';
import { uniqueName } from './infra/wait-for.ts';

const HOST = 'gpu-node-042';
const T0 = Date.parse('2026-06-01T02:00:00Z');
const MIN = 60_000;
const iso = (at: number) => new Date(at).toISOString();
const UUID0 = 'GPU-0aaa1111-2222-3333-4444-555566667777';
const UUID1 = 'GPU-1bbb1111-2222-3333-4444-555566667777';
/** Planted: in the settings (environment and config file) and in a notification's error text. */
const TOKEN = 'notifier-token-SEKRET-0123456789';
const FILE_SECRET = 'intake-token-FROMFILE-abcdef';
const WEBHOOK = 'https://hooks.slack.com/services/T0000/B0000/XOXBWEBHOOKSECRET';
/** A receiver's URL in the routes file that no pattern knows: kept out because the routes file names it. */
const ROUTE_URL = 'https://alerts.example.net/in/ROUTEPATHSECRET42';
const WINDOW = ['--since', iso(T0), '--until', iso(T0 + 60 * MIN)];

function gpu(index: number, at: number): GpuMetrics {
  return {
    index,
    uuid: index === 0 ? UUID0 : UUID1,
    pci_bus: index === 0 ? '0000:18:00' : '0000:29:00',
    name: 'NVIDIA H100 80GB HBM3',
    util_pct: 90,
    mem_util_pct: 40,
    mem_used_mib: 60_000,
    mem_total_mib: 81_559,
    temp_c: 60 + index,
    mem_temp_c: 64,
    power_w: 600,
    power_limit_w: 700,
    sm_clock_mhz: 1980,
    mem_clock_mhz: 2619,
    fan_pct: null,
    pcie_gen: 5,
    pcie_gen_max: 5,
    pcie_width: 16,
    pcie_width_max: 16,
    ecc_sbe_volatile: 0,
    ecc_dbe_volatile: 0,
    // GPU 1's aggregate single-bit count climbs at minute 10: one change in the history
    ecc_sbe_aggregate: index === 1 && at >= T0 + 10 * MIN ? 3 : 0,
    ecc_dbe_aggregate: 0,
    remap_pending: index === 1 && at >= T0 + 10 * MIN,
    remap_failure: false,
    throttle: [],
    xid_last: null,
    nvlink_errors: 0,
    processes: 1,
  };
}

/** A host that lost GPU 1 (Xid 79) after ECC errors and a row remap, its BMC's SEL, a drain; another host beside it. */
function story(): Envelope[] {
  const e = <T extends Envelope['type']>(type: T, id: string, at: number, data: EnvelopeOf<T>['data'], host = HOST): Envelope =>
    newEnvelope({ type, id, host, source: 't', ts: iso(at), data });
  const out: Envelope[] = [
    // published a day before the window: inventories come only on change
    e('host.inventory', 'inv', T0 - 86_400_000, {
      gpu_model: 'NVIDIA H100 80GB HBM3',
      gpu_count: 2,
      driver_version: '550.54.15',
      cuda_version: '12.4',
      vbios: '96.00.89.00.01',
      provider: 'aws',
      instance_id: 'i-0123456789abcdef0',
      instance_type: 'p5.48xlarge',
      gpus: [
        { index: 0, uuid: UUID0, pci_bus: '0000:18:00', name: 'NVIDIA H100 80GB HBM3', serial: '1650123456780' },
        { index: 1, uuid: UUID1, pci_bus: '0000:29:00', name: 'NVIDIA H100 80GB HBM3', serial: '1650123456781' },
      ],
    }),
    e('kernel.event', 'ecc0', T0 + 5 * MIN, {
      kind: 'ecc',
      gpu: 0,
      pci_bus: '0000:18:00',
      xid: 48,
      severity: 'critical',
      message: 'NVRM: Xid (PCI:0000:18:00): 48, DBE',
    }),
    e('kernel.event', 'remap1', T0 + 10 * MIN, {
      kind: 'row_remap',
      pci_bus: '0000:29:00',
      xid: 63,
      severity: 'warning',
      message: 'NVRM: Xid (PCI:0000:29:00): 63, row remap',
    }),
    e('kernel.event', 'xid79', T0 + 20 * MIN, {
      kind: 'xid',
      xid: 79,
      gpu: 1,
      pci_bus: '0000:29:00',
      severity: 'critical',
      message: 'NVRM: Xid (PCI:0000:29:00): 79, GPU has fallen off the bus.',
      meaning: 'GPU has fallen off the bus',
    }),
    e('kernel.event', 'oom', T0 + 21 * MIN, { kind: 'oom_kill', severity: 'warning', message: 'Killed process 7 (python)', pid: 7, process: 'python' }),
    e('bmc.event', 'sel1', T0 + 20 * MIN + 500, {
      entry_id: '0x00a1',
      log: 'sel',
      created: iso(T0 + 20 * MIN),
      severity: 'critical',
      message: 'Critical Interrupt PCI SERR Asserted',
      sensor: 'PCIe Slot 3',
      asserted: true,
    }),
    e('bmc.event', 'sel2', T0 + 22 * MIN, { entry_id: '0x00a2', log: 'sel', severity: 'warning', message: 'Bus Uncorrectable Error', sensor: 'PCI BUS' }),
    e('alert', 'fire', T0 + 20 * MIN + 1_000, {
      fingerprint: 'f00dfeed',
      status: 'firing',
      severity: 'critical',
      category: 'fallen_off_bus',
      rule: 'xid-79',
      gpu: { index: 1 },
      summary: `GPU 1 on ${HOST} fell off the bus`,
      starts_at: iso(T0 + 20 * MIN + 1_000),
      evidence: ['xid79'],
    }),
    e('notification', 'chat', T0 + 20 * MIN + 2_000, {
      receiver: 'ops',
      channel: 'slack',
      fingerprints: ['f00dfeed'],
      reason: 'first',
      outcome: 'failed',
      attempt: 1,
      error: `POST ${WEBHOOK} answered 500; token ${TOKEN} and ${FILE_SECRET}; fallback ${ROUTE_URL} refused`,
    }),
    e('action', 'drain', T0 + 20 * MIN + 3_000, {
      action_id: 'act-drain-1',
      kind: 'drain',
      phase: 'proposed',
      policy_rule: 'xid-79-drain',
      fingerprint: 'f00dfeed',
      reason: 'Xid 79: GPU 1 fell off the bus',
      gpu: 1,
    }),
    e('action.result', 'drained', T0 + 20 * MIN + 4_000, { action_id: 'act-drain-1', kind: 'drain', outcome: 'succeeded', attempt: 1, executor: 'slurm' }),
    e('action', 'reset0', T0 + 6 * MIN, {
      action_id: 'act-reset-0',
      kind: 'reset-gpu',
      phase: 'dry_run',
      policy_rule: 'ecc-reset',
      reason: 'DBE on GPU 0',
      gpu: 0,
    }),
    // another host: never in this host's archive
    e('kernel.event', 'other', T0 + 20 * MIN, { kind: 'xid', xid: 13, gpu: 0, severity: 'warning', message: 'NVRM: Xid 13' }, 'gpu-node-043'),
  ];
  for (let at = T0; at < T0 + 30 * MIN; at += MIN) {
    out.push(e('gpu.sample', `s${at}`, at, { gpus: [gpu(0, at), ...(at < T0 + 20 * MIN ? [gpu(1, at)] : [])] }));
  }
  return out;
}

const TOPIC = new Map<string, string>([
  ['gpu.sample', TOPICS.gpuSamples],
  ['kernel.event', TOPICS.kernelEvents],
  ['host.inventory', TOPICS.hostInventory],
  ['bmc.event', TOPICS.bmcEvents],
  ['alert', TOPICS.alerts],
  ['notification', TOPICS.notifications],
  ['action', TOPICS.actions],
  ['action.result', TOPICS.actions],
]);

async function publishStory(bus: MemoryBus | KafkaBus): Promise<void> {
  await bus.ensureTopics([...new Set(TOPIC.values())]);
  const all = story();
  for (const topic of new Set(TOPIC.values())) await bus.publish(topic, all.filter((e) => TOPIC.get(e.type) === topic).map(envelopeMessage));
}

/** Unpacks with the system's tar and reads every file. */
function unpack(archive: string): Map<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-evidence-out-'));
  const tar = spawnSync('tar', ['-xzf', archive, '-C', dir], { encoding: 'utf8' });
  expect(tar.status, tar.stderr).toBe(0);
  expect(readdirSync(dir)).toEqual(['gpualert-evidence']);
  const files = new Map<string, string>();
  for (const name of readdirSync(join(dir, 'gpualert-evidence'))) files.set(name, readFileSync(join(dir, 'gpualert-evidence', name), 'utf8'));
  return files;
}

const lines = (text: string | undefined) =>
  (text ?? '')
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

describe('gpualert evidence against the embedded log', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'gpualert-evidence-'));
  const work = mkdtempSync(join(tmpdir(), 'gpualert-evidence-work-'));
  const config = join(work, 'gpualert.yaml');
  const routes = join(work, 'routes.yaml');
  const env = () => cleanEnv({ GPUALERT_NOTIFIER_TOKEN: TOKEN, GPUALERT_CONFIG: config, GPUALERT_ROUTES: routes });

  beforeAll(async () => {
    writeFileSync(config, `intakeToken: ${FILE_SECRET}\n`);
    writeFileSync(routes, `receivers:\n  - name: ops\n    webhook_configs:\n      - url: ${ROUTE_URL}\n`);
    const bus = new MemoryBus({ dataDir });
    await publishStory(bus);
    await bus.close();
  });

  it('writes one .tar.gz with each part: identity, Xid/ECC history, remapped rows, SEL, timeline, actions, and a README naming the support route', async () => {
    const out = join(work, 'all.tar.gz');
    const result = await runCli(['evidence', HOST, ...WINDOW, '--data-dir', dataDir, '--out', out], { env: env() });
    expect([result.code, result.stderr]).toEqual([0, expect.stringMatching(/gpualert evidence: 8 files for gpu-node-042/)]);
    expect(result.stdout.trim()).toBe(out);
    const files = unpack(out);
    expect([...files.keys()].sort()).toEqual([
      'README.md',
      'actions.jsonl',
      'bmc-sel.jsonl',
      'identity.json',
      'remapped-rows.json',
      'timeline.html',
      'timeline.json',
      'xid-ecc-history.jsonl',
    ]);

    const identity = JSON.parse(files.get('identity.json') ?? '') as Record<string, unknown>;
    expect(identity).toMatchObject({ host: HOST, driver_version: '550.54.15', vbios: '96.00.89.00.01', provider: 'aws', instance_id: 'i-0123456789abcdef0' });
    expect(identity.gpus).toEqual([
      { index: 0, uuid: UUID0, serial: '1650123456780', pci_bus: '0000:18:00', name: 'NVIDIA H100 80GB HBM3', source: 'host.inventory' },
      { index: 1, uuid: UUID1, serial: '1650123456781', pci_bus: '0000:29:00', name: 'NVIDIA H100 80GB HBM3', source: 'host.inventory' },
    ]);

    const history = lines(files.get('xid-ecc-history.jsonl'));
    const kernel = history.filter((l) => l.source === 'kernel').map((l) => [l.kind, l.xid, l.gpu, l.envelope_id]);
    // the row remap names only its PCI bus: the inventory says it is GPU 1; the OOM kill is no GPU fault
    expect(kernel).toEqual([
      ['ecc', 48, 0, 'ecc0'],
      ['row_remap', 63, 1, 'remap1'],
      ['xid', 79, 1, 'xid79'],
    ]);
    expect(history.filter((l) => l.kind === 'ecc_counters_changed').map((l) => [l.gpu, l.ecc_sbe_aggregate, l.ts])).toEqual([[1, 3, iso(T0 + 10 * MIN)]]);

    const remaps = JSON.parse(files.get('remapped-rows.json') ?? '') as Record<string, unknown>[];
    expect(remaps.find((r) => r.gpu === 1)).toMatchObject({
      remap_pending: true,
      pending_seen: { first: iso(T0 + 10 * MIN), last: iso(T0 + 19 * MIN) },
      row_remap_events: 1,
    });
    expect(remaps.find((r) => r.gpu === 0)).toMatchObject({ remap_pending: false, pending_seen: null, row_remap_events: 0 });

    expect(lines(files.get('bmc-sel.jsonl')).map((l) => [l.entry_id, l.severity, l.message])).toEqual([
      ['0x00a1', 'critical', 'Critical Interrupt PCI SERR Asserted'],
      ['0x00a2', 'warning', 'Bus Uncorrectable Error'],
    ]);

    const actions = lines(files.get('actions.jsonl'));
    expect(actions.map((a) => [a.type, (a.data as { action_id: string }).action_id])).toEqual([
      ['action', 'act-reset-0'],
      ['action', 'act-drain-1'],
      ['action.result', 'act-drain-1'],
    ]);

    const timeline = JSON.parse(files.get('timeline.json') ?? '') as Timeline;
    expect(timeline.host).toBe(HOST);
    expect(timeline.entries.map((e) => e.id)).toEqual(expect.arrayContaining(['xid79', 'fire', 'drain', 'drained']));
    expect(timeline.entries.map((e) => e.id)).not.toContain('other');
    expect(files.get('timeline.html')).toMatch(/^<!doctype html>/);

    const readme = files.get('README.md') ?? '';
    expect(readme).toMatch(/^# GPU fault evidence: gpu-node-042/);
    expect(readme).toContain(`| Window | ${iso(T0)} – ${iso(T0 + 60 * MIN)} (UTC) |`);
    expect(readme).toMatch(/Amazon Web Services \(EC2\): AWS Support Center/);
    expect(readme).toMatch(/3 kernel event\(s\) with an Xid: Xid 48, 63, 79\./);
    expect(readme).toMatch(/2 BMC SEL entries/);
    expect(readme).toMatch(/No bound cut anything/);
    for (const text of files.values()) expect(text).not.toContain('gpu-node-043');
  });

  it('never puts a secret of the settings, or a webhook token, in the archive', async () => {
    const out = join(work, 'secrets.tar.gz');
    expect((await runCli(['evidence', HOST, ...WINDOW, '--data-dir', dataDir, '--out', out], { env: env() })).code).toBe(0);
    const files = unpack(out);
    const all = [...files.values()].join('\n');
    expect(all).toContain('[redacted]'); // the notification's error is in the timeline, its secrets gone
    for (const secret of [TOKEN, FILE_SECRET, 'XOXBWEBHOOKSECRET', 'ROUTEPATHSECRET42']) expect(all).not.toContain(secret);
    // and the bytes themselves, as a grep of the unpacked folder would read them
    const grep = spawnSync('sh', [
      '-c',
      `mkdir -p "$1" && tar -xzf "$2" -C "$1" && ! grep -r -e "$3" -e "$4" "$1"`,
      'sh',
      join(work, 'grep'),
      out,
      TOKEN,
      FILE_SECRET,
    ]);
    expect(grep.status).toBe(0);
  });

  it('--gpu narrows the per-GPU parts to that GPU, by index or by UUID', async () => {
    for (const [selector, name] of [
      ['0', 'gpu0.tar.gz'],
      [UUID0, 'gpu0-uuid.tar.gz'],
    ] as const) {
      const out = join(work, name);
      const result = await runCli(['evidence', HOST, ...WINDOW, '--gpu', selector, '--data-dir', dataDir, '--out', out], { env: env() });
      expect([result.code, result.stderr]).toEqual([0, expect.any(String)]);
      const files = unpack(out);
      const identity = JSON.parse(files.get('identity.json') ?? '') as { gpus: { index: number }[] };
      expect(identity.gpus.map((g) => g.index)).toEqual([0]);
      expect(lines(files.get('xid-ecc-history.jsonl')).map((l) => l.envelope_id)).toEqual([`s${T0}`, 'ecc0']);
      expect((JSON.parse(files.get('remapped-rows.json') ?? '') as { gpu: number }[]).map((r) => r.gpu)).toEqual([0]);
      // the drain was for GPU 1: only GPU 0's reset remains
      expect(lines(files.get('actions.jsonl')).map((a) => (a.data as { action_id: string }).action_id)).toEqual(['act-reset-0']);
      const timeline = JSON.parse(files.get('timeline.json') ?? '') as Timeline;
      expect(timeline.entries.map((e) => e.id)).not.toContain('xid79');
      expect(new Set(timeline.metrics.map((m) => m.gpu))).toEqual(new Set([0]));
      // the BMC's log is the host's: it stays
      expect(files.has('bmc-sel.jsonl')).toBe(true);
      expect(files.get('README.md')).toMatch(/\| GPU\(s\) \| GPU 0 \(GPU-0aaa/);
    }
    const none = await runCli(['evidence', HOST, ...WINDOW, '--gpu', '7', '--data-dir', dataDir, '--out', join(work, 'gpu7.tar.gz')], { env: env() });
    expect([none.code, none.stderr.trim()]).toEqual([
      2,
      `error[GA-CLI-USAGE]: gpualert evidence: host ${HOST}: no GPU 7 in the host's inventory or samples (it has 0, 1) in the embedded log at ${dataDir}`,
    ]);
    expect(existsSync(join(work, 'gpu7.tar.gz'))).toBe(false);
  });

  it('says plainly what was not seen: no SEL, no actions, no inventory, unknown provider (a host with only samples)', async () => {
    const quiet = mkdtempSync(join(tmpdir(), 'gpualert-evidence-quiet-'));
    const bus = new MemoryBus({ dataDir: quiet });
    await bus.ensureTopics([TOPICS.gpuSamples]);
    await bus.publish(TOPICS.gpuSamples, [
      envelopeMessage(newEnvelope({ type: 'gpu.sample', id: 'q1', host: 'quiet-1', source: 't', ts: iso(T0 + MIN), data: { gpus: [gpu(0, T0)] } })),
    ]);
    await bus.close();
    const out = join(work, 'quiet.tar.gz');
    expect((await runCli(['evidence', 'quiet-1', ...WINDOW, '--data-dir', quiet, '--out', out], { env: env() })).code).toBe(0);
    const files = unpack(out);
    expect([...files.keys()].sort()).toEqual(['README.md', 'identity.json', 'remapped-rows.json', 'timeline.html', 'timeline.json', 'xid-ecc-history.jsonl']);
    const readme = files.get('README.md') ?? '';
    expect(readme).toContain('unknown provider: contact your operator.');
    expect(readme).toContain('No BMC SEL entries were seen for this host in the window');
    expect(readme).toContain('No remediation actions were taken or proposed for this host in the window');
    expect(readme).toContain('No inventory was seen for this host');
    expect(readme).toContain('No Xid events were seen for this host in the window.');
    expect(JSON.parse(files.get('identity.json') ?? '')).toMatchObject({ gpus: [{ index: 0, uuid: UUID0, serial: null, source: 'gpu.sample' }] });
  });

  it('refuses an unknown host, a hostile HOST and a bad window with one line and exit 2, and writes nothing', async () => {
    const before = readdirSync(work).length;
    const unknown = await runCli(['evidence', 'gpu-node-999', ...WINDOW, '--data-dir', dataDir, '--out', join(work, 'x.tar.gz')], { env: env() });
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      2,
      `error[GA-CLI-USAGE]: gpualert evidence: nothing was seen for host gpu-node-999 between ${iso(T0)} and ${iso(T0 + 60 * MIN)} in the embedded log at ${dataDir}`,
    ]);
    for (const hostile of ['../../etc/passwd', 'a/b', '..', 'gpu..node', '.hidden', 'x'.repeat(254), 'host\nname', 'host name', '']) {
      const result = await runCli(['evidence', hostile, '--data-dir', dataDir], { env: env() });
      expect(result.code, hostile).toBe(2);
      expect(result.stderr, hostile).toMatch(/^error\[GA-CLI-USAGE\]: gpualert evidence: HOST must be a host name of letters, digits/);
      expect(result.stderr.trim().split('\n'), hostile).toHaveLength(1);
    }
    const longWindow = await runCli(['evidence', HOST, '--since', '31d', '--data-dir', dataDir], { env: env() });
    expect([longWindow.code, longWindow.stderr.trim()]).toEqual([
      2,
      'error[GA-CLI-USAGE]: gpualert evidence: the window is at most 30 days (--since 31d is longer)',
    ]);
    expect(readdirSync(work).length).toBe(before);
  });
});

describe('gpualert evidence against the real Kafka', () => {
  it('reads the same topics the same way: the same parts as from the embedded log', async () => {
    const prefix = `${uniqueName('evidence')}.`;
    const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    try {
      await publishStory(bus);
    } finally {
      await bus.close();
    }
    const work = mkdtempSync(join(tmpdir(), 'gpualert-evidence-kafka-'));
    const out = join(work, 'kafka.tar.gz');
    const result = await runCli(['evidence', HOST, ...WINDOW, '--out', out], {
      env: cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: prefix }),
    });
    expect([result.code, result.stderr]).toEqual([0, expect.stringMatching(/8 files/)]);
    const files = unpack(out);
    expect(lines(files.get('xid-ecc-history.jsonl')).map((l) => l.envelope_id)).toEqual([`s${T0}`, `s${T0}`, 'ecc0', 'remap1', `s${T0 + 10 * MIN}`, 'xid79']);
    expect(lines(files.get('bmc-sel.jsonl'))).toHaveLength(2);
    expect(files.get('README.md')).toContain("from the deployment's Kafka topics");
    expect(files.get('README.md')).not.toContain(inject('kafkaBrokers'));
    // the story has no provider or job events: their topics were never made under this prefix
    expect(files.get('README.md')).toMatch(
      /These topics do not exist in this deployment, so nothing came from them: gpualert\.provider\.events, gpualert\.job\.events\./,
    );
  });
});
