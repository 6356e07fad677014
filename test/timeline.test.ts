import { envelopeMessage, type Bus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { newEnvelope, TOPICS, type Envelope, type GpuMetrics } from '@gpualert/schema';
import { MAX_HOSTS_READ_BY_KEY, type Timeline } from '@gpualert/timeline';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli } from './infra/run-cli.ts';
import { uniqueName } from './infra/wait-for.ts';

const T0 = Date.parse('2026-06-01T02:00:00Z');
const MIN = 60_000;
const iso = (at: number) => new Date(at).toISOString();

function gpu(index: number, temp: number): GpuMetrics {
  return {
    index,
    uuid: null,
    pci_bus: index === 0 ? '0000:18:00' : '0000:29:00',
    name: 'NVIDIA H100 80GB HBM3',
    util_pct: 95,
    mem_util_pct: 40,
    mem_used_mib: 60_000,
    mem_total_mib: 81_559,
    temp_c: temp,
    mem_temp_c: temp + 4,
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
    ecc_sbe_aggregate: 0,
    ecc_dbe_aggregate: 0,
    remap_pending: false,
    remap_failure: false,
    throttle: [],
    xid_last: null,
    nvlink_errors: 0,
    processes: 1,
  };
}

/** A known incident on every topic: samples, the Xid, the notice, the alert and who was told. */
function incident(): Envelope[] {
  const host = 'gpu-node-007';
  const out: Envelope[] = [
    newEnvelope({
      type: 'host.inventory',
      id: 'inv',
      host,
      source: 't',
      ts: iso(T0),
      data: { gpu_model: 'NVIDIA H100 80GB HBM3', gpu_count: 2, driver_version: '550.54.15', cuda_version: '12.4', gpus: [] },
    }),
    newEnvelope({
      type: 'provider.event',
      id: 'notice',
      host,
      source: 't',
      ts: iso(T0 + 2 * MIN),
      data: {
        provider: 'gcp',
        event_id: 'm1',
        kind: 'maintenance',
        status: 'scheduled',
        hosts: [host],
        window_start: iso(T0 + 60 * MIN),
        description: 'planned update',
        raw_id: 'm1',
      },
    }),
    newEnvelope({
      type: 'kernel.event',
      id: 'xid79',
      host,
      source: 't',
      ts: iso(T0 + 10 * MIN),
      data: {
        kind: 'xid',
        xid: 79,
        gpu: 1,
        pci_bus: '0000:29:00',
        severity: 'critical',
        message: 'NVRM: Xid (PCI:0000:29:00): 79',
        meaning: 'GPU has fallen off the bus',
        count: 1,
      },
    }),
    newEnvelope({
      type: 'alert',
      id: 'fire',
      host,
      source: 't',
      ts: iso(T0 + 10 * MIN + 1_000),
      data: {
        fingerprint: 'f00dfeed',
        status: 'firing',
        severity: 'critical',
        category: 'fallen_off_bus',
        rule: 'gpu-absent',
        gpu: { index: 1 },
        summary: 'GPU 1 on gpu-node-007 has disappeared',
        starts_at: iso(T0 + 10 * MIN + 1_000),
        evidence: ['xid79'],
      },
    }),
    newEnvelope({
      type: 'notification',
      id: 'page',
      host,
      source: 't',
      ts: iso(T0 + 10 * MIN + 2_000),
      data: { receiver: 'pager', channel: 'pagerduty', fingerprints: ['f00dfeed'], reason: 'page', outcome: 'sent', attempt: 1 },
    }),
    newEnvelope({
      type: 'alert',
      id: 'resolve',
      host,
      source: 't',
      ts: iso(T0 + 15 * MIN),
      data: {
        fingerprint: 'f00dfeed',
        status: 'resolved',
        severity: 'critical',
        category: 'fallen_off_bus',
        rule: 'gpu-absent',
        gpu: { index: 1 },
        summary: 'GPU 1 on gpu-node-007 has disappeared',
        starts_at: iso(T0 + 10 * MIN + 1_000),
        ends_at: iso(T0 + 15 * MIN),
        evidence: ['xid79'],
      },
    }),
  ];
  for (let at = T0; at < T0 + 20 * MIN; at += 10_000) {
    const minute = Math.floor((at - T0) / MIN);
    const gpus = [gpu(0, 60 + ((at / 10_000) % 3)), gpu(1, 70 + minute)].filter((g) => !(g.index === 1 && at >= T0 + 10 * MIN && at < T0 + 15 * MIN));
    out.push(newEnvelope({ type: 'gpu.sample', id: `s${at}`, host, source: 't', ts: iso(at), data: { gpus } }));
  }
  // another host, outside the incident, to be narrowed away
  out.push(
    newEnvelope({
      type: 'kernel.event',
      id: 'other',
      host: 'gpu-node-008',
      source: 't',
      ts: iso(T0 + 5 * MIN),
      data: { kind: 'oom_kill', severity: 'warning', message: 'Killed process 1 (x)', pid: 1, process: 'x' },
    }),
  );
  return out;
}

const TOPIC: Record<string, string> = {
  'gpu.sample': TOPICS.gpuSamples,
  'kernel.event': TOPICS.kernelEvents,
  'provider.event': TOPICS.providerEvents,
  'host.inventory': TOPICS.hostInventory,
  alert: TOPICS.alerts,
  notification: TOPICS.notifications,
};

describe('gpualert timeline from the real Kafka', () => {
  const prefix = `${uniqueName('timeline')}.`;
  let bus: Bus;
  const env = () => cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: prefix });
  const range = ['--from', iso(T0), '--to', iso(T0 + 20 * MIN)];

  beforeAll(async () => {
    bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    const all = incident();
    for (const topic of new Set(Object.values(TOPIC))) {
      await bus.publish(topic, all.filter((e) => TOPIC[e.type] === topic).map(envelopeMessage));
    }
  });
  afterAll(async () => bus.close());

  it('merges every source in event-time order and summarises the GPU metrics per minute (json)', async () => {
    const result = await runCli(['timeline', ...range, '--format', 'json'], { env: env() });
    expect(result.code).toBe(0);
    const t = JSON.parse(result.stdout) as Timeline;
    expect(t.entries.map((e) => [e.source, e.id])).toEqual([
      ['inventory', 'inv'],
      ['provider', 'notice'],
      ['kernel', 'other'],
      ['kernel', 'xid79'],
      ['alert', 'fire'],
      ['notification', 'page'],
      ['alert', 'resolve'],
    ]);
    const gpu1 = t.metrics.filter((m) => m.host === 'gpu-node-007' && m.gpu === 1 && m.metric === 'temp_c');
    expect(gpu1.map((m) => [m.minute.slice(11, 16), m.min, m.mean, m.max, m.samples])).toEqual(
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19].map((minute) => [`02:${String(minute).padStart(2, '0')}`, 70 + minute, 70 + minute, 70 + minute, 6]),
    );
    const gpu0 = t.metrics.find((m) => m.gpu === 0 && m.metric === 'temp_c' && m.minute.endsWith('02:00:00.000Z'))!;
    expect([gpu0.min, gpu0.max, gpu0.samples]).toEqual([60, 62, 6]);
  });

  it("narrows to one incident's host and GPU, and writes Markdown with the incident's facts", async () => {
    const result = await runCli(['timeline', ...range, '--incident', 'f00dfeed'], { env: env() });
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^# Incident: GPU 1 on gpu-node-007 has disappeared/);
    expect(result.stdout).toMatch(/\| Severity \| critical \|/);
    expect(result.stdout).toMatch(/\| Ended \| 2026-06-01T02:15:00.000Z \|/);
    expect(result.stdout).not.toContain('gpu-node-008');
    expect(result.stdout).toMatch(/\| 2026-06-01 02:10:00.000 \| kernel \| gpu-node-007 \| 1 \| Xid 79: GPU has fallen off the bus \|/);
    expect(result.stdout).toMatch(/### gpu-node-007 GPU 1/);
    expect(result.stdout).not.toMatch(/### gpu-node-007 GPU 0/);
  });

  it('writes CSV for spreadsheets and one self-contained HTML file with an SVG chart', async () => {
    const csv = await runCli(['timeline', ...range, '--format', 'csv'], { env: env() });
    const rows = csv.stdout.trim().split('\n');
    expect(rows[0]).toBe('time,source,host,gpu,severity,what,detail,id');
    expect(rows).toHaveLength(8);
    const html = await runCli(['timeline', ...range, '--incident', 'f00dfeed', '--format', 'html'], { env: env() });
    expect(html.stdout).toMatch(/^<!doctype html>/);
    expect(html.stdout).toMatch(/<svg [^>]*role="img"/);
    // four metrics, each line broken where the GPU was gone (02:10–02:15) rather than bridged
    expect([...html.stdout.matchAll(/class="series" data-metric="([a-z_]+)"/g)].map((m) => m[1])).toEqual([
      'temp_c',
      'temp_c',
      'power_w',
      'power_w',
      'util_pct',
      'util_pct',
      'mem_temp_c',
      'mem_temp_c',
    ]);
    expect(html.stdout).toMatch(/class="marker" data-source="kernel"/);
    expect(html.stdout).not.toMatch(/<script|src="http/);
  });

  it("the HTML opens in a real headless browser (Debian's Chromium) and shows the chart", async () => {
    const { mkdtempSync, readFileSync, statSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { spawnSync } = await import('node:child_process');
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-html-'));
    const file = join(dir, 'incident.html');
    expect((await runCli(['timeline', ...range, '--incident', 'f00dfeed', '--format', 'html', '--out', file], { env: env() })).code).toBe(0);
    const which = spawnSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' });
    const chromium = which.stdout.trim();
    if (!chromium) throw new Error("Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)");
    const args = ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars', '--window-size=1000,900'];
    const dom = spawnSync(chromium, [...args, '--dump-dom', `file://${file}`], { encoding: 'utf8', timeout: 60_000 });
    expect(dom.status).toBe(0);
    // what the browser built from the file: the four series (each broken by the GPU's absence) and the event markers
    expect(dom.stdout.match(/<polyline class="series"/g)).toHaveLength(8);
    expect(dom.stdout).toMatch(/<line class="marker" data-source="alert"/);
    expect(dom.stderr).not.toMatch(/Uncaught|Failed to load resource/);
    const shot = join(dir, 'shot.png');
    const screenshot = spawnSync(chromium, [...args, `--screenshot=${shot}`, `file://${file}`], { encoding: 'utf8', timeout: 60_000 });
    expect(screenshot.status).toBe(0);
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
    expect(statSync(shot).size).toBeGreaterThan(10_000);
  }, 120_000);

  it('serves the same over HTTP from the notifier, behind its bearer token', async () => {
    const { createNotifierServer, NotifierMetrics } = await import('@gpualert/notifier');
    const { MemoryStore } = await import('@gpualert/state');
    const { listen, close } = await import('./infra/http.ts');
    const server = createNotifierServer(new MemoryStore(), new NotifierMetrics(), 'timeline-token-0123', bus);
    const base = await listen(server);
    try {
      const url = `${base}/v1/timeline?from=${iso(T0)}&to=${iso(T0 + 20 * MIN)}&incident=f00dfeed&format=json`;
      expect((await fetch(url)).status).toBe(401);
      const response = await fetch(url, { headers: { authorization: 'Bearer timeline-token-0123' } });
      expect(response.status).toBe(200);
      const t = (await response.json()) as Timeline;
      expect(t.incident?.fingerprint).toBe('f00dfeed');
      expect(t.entries.map((e) => e.id)).toContain('xid79');
      const unknown = await fetch(url.replace('f00dfeed', 'deadbeef'), { headers: { authorization: 'Bearer timeline-token-0123' } });
      expect(unknown.status).toBe(404);
      expect((await fetch(`${base}/v1/timeline?from=nope&to=${iso(T0)}`, { headers: { authorization: 'Bearer timeline-token-0123' } })).status).toBe(400);
    } finally {
      await close(server);
    }
  });

  it('says so for an empty range, and answers an unknown incident with one line', async () => {
    const empty = await runCli(['timeline', '--from', iso(T0 + 86_400_000), '--to', iso(T0 + 86_400_000 + MIN)], { env: env() });
    expect(empty.code).toBe(0);
    expect(empty.stdout).toMatch(/Nothing happened in this range/);
    expect(empty.stderr).toMatch(/nothing happened in this range/);
    const unknown = await runCli(['timeline', ...range, '--incident', 'deadbeef'], { env: env() });
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      2,
      `error[GA-CLI-USAGE]: gpualert timeline: no alert with fingerprint deadbeef between ${iso(T0)} and ${iso(T0 + 20 * MIN)}`,
    ]);
  });
});

/** A GPU alert of an incident: `root` names it on its members. */
function gpuAlert(host: string, gpu: number, fingerprint: string, at: number, root?: string): Envelope {
  return newEnvelope({
    type: 'alert',
    id: `alert-${fingerprint}`,
    host,
    source: 't',
    ts: iso(at),
    data: {
      fingerprint,
      status: 'firing',
      severity: 'critical',
      category: 'thermal',
      rule: 'gpu-temp',
      gpu: { index: gpu },
      summary: `GPU ${gpu} on ${host} is hot`,
      starts_at: iso(at),
      evidence: [],
      ...(root ? { incident: root } : {}),
    },
  });
}

describe("an incident's export on a fleet, from the real Kafka", () => {
  const prefix = `${uniqueName('timeline-fleet')}.`;
  // More hosts than an incident's export reads one by one, each with two GPUs, spread over three partitions.
  const hosts = Array.from({ length: MAX_HOSTS_READ_BY_KEY + 4 }, (_, i) => `fleet-node-${String(i).padStart(2, '0')}`);
  const env = () => cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: prefix });
  const range = ['--from', iso(T0), '--to', iso(T0 + 20 * MIN)];
  let bus: Bus;

  beforeAll(async () => {
    bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    const samples: Envelope[] = [];
    for (let at = T0; at < T0 + 20 * MIN; at += 10_000) {
      hosts.forEach((host, h) => {
        const gpus = [0, 1].map((g) => gpu(g, 50 + h + 3 * g + (((at - T0) / 10_000) % 7)));
        samples.push(newEnvelope({ type: 'gpu.sample', id: `${host}-${at}`, host, source: 't', ts: iso(at), data: { gpus } }));
      });
    }
    await bus.publish(TOPICS.gpuSamples, samples.map(envelopeMessage));
    // Two incidents: GPU 1 of node 01 with GPU 0 of node 05, and one GPU on each of the first MAX + 1 nodes.
    const alerts = [
      gpuAlert(hosts[1]!, 1, 'pair-root', T0 + 8 * MIN),
      gpuAlert(hosts[5]!, 0, 'pair-member', T0 + 9 * MIN, 'pair-root'),
      ...hosts
        .slice(0, MAX_HOSTS_READ_BY_KEY + 1)
        .map((host, h) => gpuAlert(host, h % 2, `wide-${h}`, T0 + 10 * MIN + h * 1_000, h > 0 ? 'wide-0' : undefined)),
    ];
    await bus.publish(TOPICS.alerts, alerts.map(envelopeMessage));
  });
  afterAll(async () => bus.close());

  const json = async (args: string[]): Promise<Timeline> => {
    const result = await runCli(['timeline', ...args, '--format', 'json'], { env: env() });
    expect(result.code, result.stderr).toBe(0); // stderr may tell the reads' progress on a slow machine
    return JSON.parse(result.stdout) as Timeline;
  };
  const charted = (t: Timeline) => [...new Set(t.metrics.map((m) => `${m.host}/${m.gpu}`))].sort();

  it.each([
    ['two hosts (read host by host)', 'pair-member', ['fleet-node-01/1', 'fleet-node-05/0']],
    [
      `${MAX_HOSTS_READ_BY_KEY + 1} hosts (past the bound: the fleet read once)`,
      'wide-3',
      Array.from({ length: MAX_HOSTS_READ_BY_KEY + 1 }, (_, h) => `fleet-node-${String(h).padStart(2, '0')}/${h % 2}`),
    ],
  ])("charts exactly the GPUs of an incident on %s, with the fleet timeline's own figures for them", async (_, fingerprint, gpus) => {
    const incident = await json([...range, '--incident', fingerprint]);
    expect(charted(incident)).toEqual(gpus);
    expect(incident.incident?.gpus?.map((g) => `${g.host}/${g.gpu}`).sort()).toEqual(gpus);
    // The same window exported without --incident reads every host: its rows for these GPUs are the incident's.
    const fleet = await json(['--from', incident.from, '--to', incident.to]);
    expect(charted(fleet)).toHaveLength(2 * hosts.length);
    expect(incident.metrics).toEqual(fleet.metrics.filter((m) => gpus.includes(`${m.host}/${m.gpu}`)));
    const hostsOf = new Set(gpus.map((g) => g.split('/')[0]));
    expect(incident.samplesUntil).toEqual(fleet.samplesUntil?.filter((s) => hostsOf.has(s.host)));
    expect(incident.samplesUntil).toHaveLength(hostsOf.size);
  });
});
