import { newEnvelope, stableId, type Envelope, type GpuMetrics, type HostInventoryData } from '@gpualert/schema';

/** A small deterministic PRNG (mulberry32): the same seed gives the same fleet. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FleetOptions {
  readonly hosts: number;
  readonly gpusPerHost: number;
  readonly start: number;
  readonly minutes: number;
  readonly intervalMs?: number;
  readonly seed?: number;
  readonly model?: string;
  readonly driver?: string;
  readonly cluster?: string;
  /** Changes one GPU's reading at one time: how tests inject a fault. */
  readonly fault?: (host: number, gpu: GpuMetrics, at: number) => GpuMetrics | null;
  /** Per host: its inventory overrides (an older driver, say). */
  readonly inventory?: (host: number, inventory: HostInventoryData) => HostInventoryData;
}

export function hostName(i: number): string {
  return `gpu-node-${String(i).padStart(3, '0')}`;
}

/**
 * A healthy fleet as it really looks: jobs that start and stop, idle gaps, each GPU a few
 * degrees warmer or cooler than its siblings, SW power cap under load, PCIe links that
 * downtrain at idle. Faults come only from `fault`.
 */
export function* syntheticFleet(options: FleetOptions): Generator<Envelope> {
  const rand = random(options.seed ?? 1);
  const interval = options.intervalMs ?? 10_000;
  const model = options.model ?? 'NVIDIA H100 80GB HBM3';
  const hosts = Array.from({ length: options.hosts }, (_, h) => ({
    name: hostName(h),
    gpus: Array.from({ length: options.gpusPerHost }, () => ({ offset: (rand() - 0.5) * 6, temp: 35 })),
    busyUntil: options.start + rand() * 3_600_000,
    idleUntil: 0,
  }));
  for (const [h, host] of hosts.entries()) {
    let inventory: HostInventoryData = {
      gpu_model: model,
      gpu_count: options.gpusPerHost,
      driver_version: options.driver ?? '550.54.15',
      cuda_version: '12.4',
      provider: 'gcp',
      instance_id: host.name,
      instance_type: 'a3-highgpu-8g',
      gpus: Array.from({ length: options.gpusPerHost }, (_, g) => ({
        index: g,
        uuid: `GPU-${stableId(host.name, g).slice(0, 36)}`,
        pci_bus: `0000:${(0x18 + g * 0x11).toString(16).padStart(2, '0')}:00`,
        name: model,
      })),
    };
    if (options.inventory) inventory = options.inventory(h, inventory);
    yield newEnvelope({
      type: 'host.inventory',
      id: stableId('inventory', host.name, options.start),
      host: host.name,
      source: 'synthetic/1',
      ts: new Date(options.start).toISOString(),
      labels: { cluster: options.cluster ?? 'lab', job: `job-${Math.floor(h / 4)}` },
      data: inventory,
    });
  }
  for (let at = options.start; at < options.start + options.minutes * 60_000; at += interval) {
    for (const [h, host] of hosts.entries()) {
      // Jobs run 20–90 minutes, then the host idles 2–20 minutes.
      if (at >= host.busyUntil && at >= host.idleUntil) {
        if (host.busyUntil > host.idleUntil) host.idleUntil = at + (2 + rand() * 18) * 60_000;
        else host.busyUntil = at + (20 + rand() * 70) * 60_000;
      }
      const busy = at < host.busyUntil;
      const gpus: GpuMetrics[] = [];
      for (const [g, one] of host.gpus.entries()) {
        const util = busy ? 92 + rand() * 8 : rand() * 2;
        const target = (busy ? 62 : 34) + one.offset;
        one.temp += (target - one.temp) * 0.3 + (rand() - 0.5) * 1.2;
        const power = busy ? 600 + rand() * 60 : 72 + rand() * 6;
        const gpu: GpuMetrics = {
          index: g,
          uuid: null,
          pci_bus: `0000:${(0x18 + g * 0x11).toString(16).padStart(2, '0')}:00`,
          name: model,
          util_pct: Math.round(util),
          mem_util_pct: busy ? Math.round(30 + rand() * 30) : 0,
          mem_used_mib: busy ? 60_000 + Math.round(rand() * 15_000) : 0,
          mem_total_mib: 81_559,
          temp_c: Math.round(one.temp),
          mem_temp_c: Math.round(one.temp + 4),
          power_w: Math.round(power * 100) / 100,
          power_limit_w: 700,
          sm_clock_mhz: busy ? 1980 : 345,
          mem_clock_mhz: 2619,
          fan_pct: null,
          pcie_gen: busy ? 5 : 1,
          pcie_gen_max: 5,
          pcie_width: 16,
          pcie_width_max: 16,
          ecc_sbe_volatile: 0,
          ecc_dbe_volatile: 0,
          ecc_sbe_aggregate: 0,
          ecc_dbe_aggregate: 0,
          remap_pending: false,
          remap_failure: false,
          throttle: busy ? (rand() < 0.5 ? ['sw_power_cap'] : []) : ['gpu_idle'],
          xid_last: null,
          nvlink_errors: 0,
          processes: busy ? 1 : 0,
        };
        const faulty = options.fault ? options.fault(h, gpu, at) : gpu;
        if (faulty) gpus.push(faulty);
      }
      yield newEnvelope({
        type: 'gpu.sample',
        id: stableId('sample', host.name, at),
        host: host.name,
        source: 'synthetic/1',
        ts: new Date(at).toISOString(),
        labels: { cluster: options.cluster ?? 'lab', job: `job-${Math.floor(h / 4)}` },
        data: { gpus },
      });
    }
  }
}
