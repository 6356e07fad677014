import { envelopeMessage } from '@gpualert/bus';
import { ENGINE_FLEET_SHARES_KEY } from '@gpualert/engine';
import { ENGINE_INPUT_TOPICS } from '@gpualert/engine-service';
import { newEnvelope, TOPICS, type Envelope, type GpuMetrics } from '@gpualert/schema';
import { Partitioners } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultPipeline } from './fault-pipeline.ts';
import { waitFor } from '../infra/wait-for.ts';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const PARTITIONS = 6; // GPUALERT_PARTITIONS of the fault pipeline

/**
 * Hosts on even or odd partitions. With two members, the co-partitioned assigner gives partition p
 * of every topic to the member p mod 2 (members sorted by id), so whichever engine holds the even
 * partitions holds none of the odd ones' hosts.
 */
function hostsOn(parity: 0 | 1, count: number, prefix: string): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < count; i += 1) if (kafkaPartition(`${prefix}-${i}`) % 2 === parity) out.push(`${prefix}-${i}`);
  return out;
}

/** The partition Kafka's producer (KafkaJS's default partitioner, murmur2 of the key) gives a host's messages. */
const partitioner = Partitioners.DefaultPartitioner();
const kafkaPartition = (host: string) =>
  partitioner({
    topic: 'any',
    partitionMetadata: Array.from({ length: PARTITIONS }, (_, partitionId) => ({ partitionId, leader: 0, replicas: [0], isr: [0], partitionErrorCode: 0 })),
    message: { key: host, value: '' },
  });

function gpu(index: number, util: number): GpuMetrics {
  return {
    index,
    uuid: null,
    pci_bus: null,
    name: 'NVIDIA H100 80GB HBM3',
    util_pct: util,
    mem_util_pct: 40,
    mem_used_mib: 60_000,
    mem_total_mib: 81_559,
    temp_c: 60,
    mem_temp_c: 66,
    power_w: 640,
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

/** Twenty minutes of one host of a training job, ending now: 8 GPUs at `util` %, every 30 s. */
function samples(host: string, util: number, end: number): Envelope[] {
  return Array.from({ length: 41 }, (_, i) =>
    newEnvelope({
      type: 'gpu.sample',
      id: `s-${host}-${i}`,
      host,
      source: 'fault-suite',
      ts: new Date(end - (40 - i) * 30_000).toISOString(),
      labels: { job: 'llm-pretrain' },
      data: { gpus: Array.from({ length: 8 }, (_, g) => gpu(g, util)) },
    }),
  );
}

const inventory = (host: string, driver: string): Envelope =>
  newEnvelope({
    type: 'host.inventory',
    host,
    source: 'fault-suite',
    labels: { cluster: 'east' },
    data: { gpu_model: 'NVIDIA H100 80GB HBM3', gpu_count: 0, driver_version: driver, cuda_version: '12.4', gpus: [] },
  });

describe('fleet-wide judgement with two engines', () => {
  let pipeline: FaultPipeline;
  beforeAll(async () => {
    pipeline = await FaultPipeline.start();
  });
  afterAll(async () => pipeline?.close());

  it('a straggler whose peers the other engine owns and a drift against a majority spread over both are each caught once', async () => {
    const a = await pipeline.startService('engine-a', ['engine']);
    const b = await pipeline.startService('engine-b', ['engine']);
    const all = PARTITIONS * ENGINE_INPUT_TOPICS.length;
    const held = FaultPipeline.partitionsHeld;
    await waitFor(() => held(a) > 0 && held(b) > 0 && held(a) + held(b) === all, 'the two engines to share the partitions', 60_000);

    const [straggler] = hostsOn(0, 1, 'train');
    const peers = hostsOn(1, 2, 'train');
    const [drifting, evenPeer] = hostsOn(0, 2, 'east');
    const oddPeers = hostsOn(1, 3, 'east');
    const end = Date.now();
    // A cluster of five: four hosts on 550 (one beside the drifting host, three on the other engine), one on 535.
    await pipeline.bus.publish(
      TOPICS.hostInventory,
      [...oddPeers, evenPeer!, drifting!].map((h) => envelopeMessage(inventory(h, h === drifting ? '535.161.08' : '550.54.15'))),
    );
    // The job's two busy hosts, on the other engine; then its slow one, once its engine has their shares.
    await pipeline.bus.publish(TOPICS.gpuSamples, peers.flatMap((h) => samples(h, 97, end)).map(envelopeMessage));
    const shared = async (hosts: readonly string[]) => {
      const fields = await pipeline.storeHashGetAll(ENGINE_FLEET_SHARES_KEY);
      return hosts.every((h) => Object.hasOwn(fields, h));
    };
    await waitFor(() => shared(peers), 'the busy hosts to be shared', 30_000);
    const slow = samples(straggler!, 20, end).map(envelopeMessage);
    await pipeline.bus.publish(TOPICS.gpuSamples, slow.slice(0, 2));
    await waitFor(() => shared([straggler!]), 'the slow host to be shared', 30_000);
    await pause(2_500); // one more of its engine's ticks (2 s): that engine has read the busy hosts' shares
    await pipeline.bus.publish(TOPICS.gpuSamples, slow.slice(2));

    await waitFor(
      async () => (await pipeline.alertsOf('job-straggler')).length > 0 && (await pipeline.alertsOf('version-drift')).length > 0,
      'the straggler and the drift',
      60_000,
    ).catch(async (error: Error) => {
      const seen = [...(await pipeline.alertsOf('job-straggler')), ...(await pipeline.alertsOf('version-drift'))];
      const shares = await pipeline.storeHashGetAll(ENGINE_FLEET_SHARES_KEY);
      throw new Error(
        `${error.message}: alerts ${JSON.stringify(seen)}, shares ${JSON.stringify(shares)}\n--- engine-a:\n${a.output().slice(-1500)}\n--- engine-b:\n${b.output().slice(-1500)}`,
      );
    });
    await pause(5_000); // two more ticks of both engines: a second copy of either would be out by now
    expect(await pipeline.alertsOf('job-straggler')).toEqual([`${straggler} firing`]);
    expect(await pipeline.alertsOf('version-drift')).toEqual([`${drifting} firing`]);
    expect(await pipeline.deadletters()).toBe(0);
    console.log(
      `[faults] fleet-wide judgement, two engines (${held(a)}+${held(b)} partitions): ${straggler} straggler of peers ${peers.join(', ')}; ${drifting} drift against ${[evenPeer, ...oddPeers].join(', ')}`,
    );
  });
});
