import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Bus, type Subscription } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { FileLineSource, nvidiaSmiSource, startGpuCollector, startInventoryCollector, startKernelCollector } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { formatRuleError, loadXidCatalog } from '@gpualert/rules';
import { TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { RedisStore } from '@gpualert/state/redis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { FakeNvidiaSmi } from './infra/fake-nvidia-smi.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const log = createLogger({ name: 'test', level: 'silent' });
const catalogResult = loadXidCatalog();
if (!catalogResult.ok) throw new Error(catalogResult.errors.map(formatRuleError).join('\n'));
const catalog = catalogResult.value;
const fixture = (name: string) => readFileSync(new URL(`./fixtures/kernel/${name}`, import.meta.url), 'utf8');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function kafka(): Promise<Bus> {
  const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: `${uniqueName('collect')}.`, partitions: 3 });
  await bus.ensureTopics(Object.values(TOPICS));
  cleanups.push(() => bus.close());
  return bus;
}

/** Everything that arrives on a topic, in arrival order. */
async function collect<T extends Envelope['type']>(bus: Bus, topic: string, type: T): Promise<EnvelopeOf<T>[]> {
  const seen: EnvelopeOf<T>[] = [];
  const sub: Subscription = await bus.consume({
    group: uniqueName('reader'),
    topics: [topic],
    handler: async (batch) => {
      for (const { envelope } of batch.items) if (envelope.type === type) seen.push(envelope as EnvelopeOf<T>);
    },
  });
  cleanups.push(() => sub.stop());
  return seen;
}

/** The file source, counting the reads it has answered: a test can wait for one that began after a write. */
class CountedFileSource extends FileLineSource {
  reads = 0;
  override async read(): ReturnType<FileLineSource['read']> {
    const lines = await super.read();
    this.reads += 1;
    return lines;
  }
}

describe('gpu collector with a fake nvidia-smi, on the real Kafka', () => {
  it('publishes samples, and a hang, a failure and the lost-GPU message as errors, and keeps scraping', async () => {
    const bus = await kafka();
    const smi = new FakeNvidiaSmi();
    const samples = await collect(bus, TOPICS.gpuSamples, 'gpu.sample');
    // A hang is cut off after 2 s; a healthy run takes tens of ms, but over 150 ms under two busy loops
    // (measured), so a tighter limit could turn a slow healthy scrape into a `timeout` sample.
    const source = await nvidiaSmiSource({ binary: smi.path, timeoutMs: 2_000 });
    expect(source.fields).toEqual([
      'index',
      'uuid',
      'name',
      'pci.bus_id',
      'utilization.gpu',
      'temperature.gpu',
      'power.draw',
      'clocks_throttle_reasons.active',
    ]);
    const collector = startGpuCollector({ bus, source, host: 'gpu-node-1', labels: { cluster: 'test' }, intervalMs: 100, log });
    cleanups.push(() => collector.stop());

    await waitFor(() => samples.length >= 2, 'two samples');
    const first = samples[0]!;
    expect(first.host).toBe('gpu-node-1');
    expect(first.labels).toEqual({ cluster: 'test' });
    expect(first.data.error).toBeUndefined();
    expect(first.data.gpus.map((g) => [g.index, g.pci_bus, g.util_pct, g.temp_c, g.power_w, g.throttle, g.processes])).toEqual([
      [0, '0000:3b:00', 97, 61, 650.5, ['sw_power_cap'], 1],
      [1, '0000:5d:00', 95, 59, 640, [], 0],
    ]);
    expect(first.data.gpus[0]!.mem_temp_c).toBeNull(); // a field this driver lacks is null, not 0

    const errorAfter = async (mode: 'hang' | 'fail' | 'lost', code: string) => {
      const from = samples.length;
      smi.mode(mode);
      await waitFor(() => samples.slice(from).some((s) => s.data.error?.code === code), `a ${code} sample`);
      return samples.slice(from).find((s) => s.data.error?.code === code)!;
    };
    expect((await errorAfter('hang', 'timeout')).data.gpus).toEqual([]);
    expect((await errorAfter('lost', 'gpu_lost')).data.error).toMatchObject({ pci_bus: '0000:3b:00', exit_code: 15 });
    expect((await errorAfter('fail', 'command_failed')).data.error).toMatchObject({ exit_code: 9, message: expect.stringContaining("couldn't communicate") });
    const from = samples.length;
    smi.mode('ok');
    await waitFor(() => samples.slice(from).some((s) => s.data.error === undefined && s.data.gpus.length === 2), 'healthy samples again');
  });
});

describe('kernel collector following a file, on the real Kafka and Redis', () => {
  it('publishes events in order, once, also across a restart', async () => {
    const bus = await kafka();
    const store = new RedisStore({ url: inject('redisUrl'), prefix: `${uniqueName('kc')}:` });
    cleanups.push(() => store.close());
    const events = await collect(bus, TOPICS.kernelEvents, 'kernel.event');
    const file = join(mkdtempSync(join(tmpdir(), 'gpualert-kernel-')), 'kern.log');
    writeFileSync(file, '');
    let source = new CountedFileSource(file);
    const start = () => {
      source = new CountedFileSource(file);
      return startKernelCollector({
        bus,
        store,
        source,
        host: 'gpu-node-2',
        catalog,
        log,
        burstGapMs: 100,
        pollMs: 20,
        gpuIndexByPci: new Map([
          ['0000:91:00', 6],
          ['0000:5d:00', 2],
        ]),
      });
    };

    let collector = await start();
    appendFileSync(file, fixture('dmesg-gpu-fallen-off-bus.log'));
    await waitFor(() => events.length >= 5, 'the fallen-off-bus events');
    // a line written in two pieces is read once it is whole: the second piece is written only once
    // the collector has read the first (a read that began after it was written)
    appendFileSync(file, '[ 4300.000001] NVRM: Xid (PCI:0000:91:00): 4');
    const readsThen = source.reads;
    await waitFor(() => source.reads >= readsThen + 2, 'a read of the first piece', 30_000);
    appendFileSync(file, "8, pid='<unknown>', name=<unknown>, An uncorrectable double bit error\n");
    await waitFor(() => events.length >= 6, 'the Xid 48 written in two pieces');
    await collector.stop();

    appendFileSync(file, fixture('dmesg-ecc-rowremap.log'));
    collector = await start();
    cleanups.push(() => collector.stop());
    await waitFor(() => events.length >= 10, 'the events written while stopped');
    // A line written last is published after anything the restart read twice (one host, one
    // partition, file order): once it is here, a duplicate would be too. A fixed sleep was not enough.
    appendFileSync(file, "[2397200.000000] NVRM: Xid (PCI:0000:aa:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error\n");
    await waitFor(() => events.some((e) => e.data.pci_bus === '0000:aa:00'), 'the line written last', 30_000);

    expect(events.map((e) => [e.data.kind, e.data.xid ?? null, e.data.gpu ?? null])).toEqual([
      ['xid', 79, 6],
      ['fallen_off_bus', null, 2],
      ['other_gpu', null, 2],
      ['other_gpu', null, null],
      ['xid', 79, 2],
      ['xid', 48, 6],
      ['xid', 94, null],
      ['xid', 63, null],
      ['xid', 48, null],
      ['xid', 95, null],
      ['xid', 48, null],
    ]);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    expect(events.every((e) => e.host === 'gpu-node-2' && e.source.startsWith('collector-kernel/'))).toBe(true);
  });
});

describe('inventory collector', () => {
  it('publishes the host fingerprint with the cloud identity from a metadata service', async () => {
    const bus = await kafka();
    const smi = new FakeNvidiaSmi();
    const server: Server = createServer((req, res) => {
      if (req.headers['metadata-flavor'] !== 'Google') return void res.writeHead(403).end();
      const answers: Record<string, string> = {
        '/computeMetadata/v1/instance/id': '4520031799277581759',
        '/computeMetadata/v1/instance/machine-type': 'projects/123/machineTypes/a3-highgpu-8g',
      };
      const body = answers[req.url ?? ''];
      if (body) res.writeHead(200).end(body);
      else res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => server.close(() => r())));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const inventories = await collect(bus, TOPICS.hostInventory, 'host.inventory');
    const collector = startInventoryCollector({
      bus,
      host: 'gpu-node-3',
      log,
      nvidiaSmi: smi.path,
      timeoutMs: 2_000,
      intervalMs: 60_000,
      metadata: ['gcp'],
      metadataEndpoint: `http://127.0.0.1:${port}`,
    });
    cleanups.push(() => collector.stop());
    await waitFor(() => inventories.length === 1, 'the inventory');
    expect(inventories[0]!.data).toMatchObject({
      gpu_model: 'NVIDIA H100 80GB HBM3',
      gpu_count: 2,
      driver_version: '550.54.15',
      cuda_version: '12.4',
      vbios: '96.00.89.00.01',
      provider: 'gcp',
      instance_id: '4520031799277581759',
      instance_type: 'a3-highgpu-8g',
      gpus: [
        { index: 0, uuid: 'GPU-aaa', pci_bus: '0000:3b:00', name: 'NVIDIA H100 80GB HBM3', serial: '1650123456789' },
        { index: 1, uuid: 'GPU-bbb', pci_bus: '0000:5d:00', name: 'NVIDIA H100 80GB HBM3', serial: '1650123456790' },
      ],
    });
  });
});
