import { existsSync } from 'node:fs';
import type { Bus } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import type { PciTopology } from '@gpualert/kernel-log';
import type { XidCatalog } from '@gpualert/rules';
import { must, TOPICS } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { startGpuCollector } from '../gpu/gpu-collector.ts';
import type { GpuSource } from '../gpu/gpu-source.ts';
import { startInventoryCollector } from '../inventory/inventory-collector.ts';
import type { MetadataProvider } from '../inventory/cloud-metadata.ts';
import { hostTopology, KERNEL_STALL_MS, KERNEL_STOPPED_MS, startKernelCollector, type KernelReaderHealth } from '../kernel/kernel-collector.ts';
import type { LineSource } from '../kernel/line-source.ts';
import { startMetadataPoller, type PolledProvider } from '../provider/metadata-poller.ts';
import { DEFAULT_IB_SYSFS_ROOT } from '../network/ib-sysfs.ts';
import { startNetworkCollector } from '../network/network-collector.ts';
import { FABRIC_MANAGER_DEFAULTS, NVSWITCH_DEVICE, SYSTEMD_RUNTIME, startFabricManagerWatch, type FabricManagerOptions } from './fabric-manager-watch.ts';
import { PublishTracker } from './publish-tracker.ts';
import { startTelemetryHeartbeat, watchGpuSource, type SourceWatch } from './telemetry-watch.ts';

/** What one host runs; each part absent is a collector not run. */
export interface AgentPlan {
  readonly host: string;
  readonly labels: Record<string, string>;
  readonly gpu?: { readonly source: GpuSource; readonly intervalMs: number };
  readonly kernel?: {
    readonly source: LineSource;
    readonly catalog: XidCatalog;
    readonly gpuIndexByPci?: ReadonlyMap<string, number>;
    readonly bootTimeMs?: number;
    readonly topology?: PciTopology;
  };
  readonly inventory?: {
    readonly nvidiaSmi: string;
    readonly intervalMs: number;
    readonly timeoutMs: number;
    readonly metadata: readonly MetadataProvider[];
    readonly metadataEndpoint?: string;
  };
  readonly provider?: { readonly name: PolledProvider; readonly intervalMs: number; readonly timeoutMs: number; readonly endpoint?: string };
  /** InfiniBand / RoCE ports; absent: read every 30 s when /sys/class/infiniband exists; `false`: never. */
  readonly network?: { readonly root: string; readonly intervalMs: number } | false;
  /** Fabric Manager's unit; absent: watched when this is an NVSwitch system (`/dev/nvidia-nvswitchctl`); `false`: never. */
  readonly fabricManager?: FabricManagerOptions | false;
  /** The telemetry heartbeat's stated times (docs/architecture.md, "Telemetry that goes quiet"); defaults in telemetry-watch.ts. */
  readonly telemetry?: {
    readonly heartbeatMs?: number;
    readonly checkMs?: number;
    readonly gpuStallMs?: number;
    readonly dcgmStaleMs?: number;
    readonly kernelStallMs?: number;
    readonly kernelStoppedMs?: number;
  };
}

export interface AgentHealth {
  readonly healthy: boolean;
  readonly host: string;
  readonly collectors: readonly string[];
  readonly uptime_s: number;
  /** Seconds since each collector's topic last got a publish through; null before the first. */
  readonly last_publish_age_s: Readonly<Record<string, number | null>>;
  readonly reason?: string;
}

export interface RunningAgent {
  readonly collectors: readonly string[];
  readonly tracker: PublishTracker;
  health(): AgentHealth;
  stop(): Promise<void>;
}

/** A GPU host whose samples have not got through for this many scrape intervals is unhealthy. */
export const AGENT_STALE_INTERVALS = 3;

const TOPIC_OF = new Map<string, string>([
  ['gpu', TOPICS.gpuSamples],
  ['kernel', TOPICS.kernelEvents],
  ['inventory', TOPICS.hostInventory],
  ['provider', TOPICS.providerEvents],
  ['network', TOPICS.hostSamples],
]);

/**
 * Every collector a GPU host needs, in one process over one bus: GPU metrics, the kernel log, the
 * host's inventory, the provider's maintenance notices. One process instead of four is most of
 * the agent's memory saving; the collectors themselves are the same ones `collect` runs.
 */
export async function startAgent(plan: AgentPlan, io: { bus: Bus; store: StateStore; log: Logger; now?: () => number }): Promise<RunningAgent> {
  const now = io.now ?? Date.now;
  const started = now();
  const tracker = new PublishTracker(now);
  const bus = tracker.wrap(io.bus);
  const running: { name: string; stop(): Promise<void> }[] = [];
  const watched: { stop(): Promise<void> }[] = [];
  const watches: SourceWatch[] = [];
  const { host, labels, log } = { ...plan, log: io.log };
  const times = plan.telemetry ?? {};
  try {
    if (plan.inventory) {
      running.push({ name: 'inventory', ...startInventoryCollector({ bus, host, labels, log, ...plan.inventory }) });
    }
    if (plan.gpu) {
      const gpu = watchGpuSource(plan.gpu.source, {
        now,
        ...(times.gpuStallMs !== undefined ? { stallMs: times.gpuStallMs } : {}),
        ...(times.dcgmStaleMs !== undefined ? { staleMs: times.dcgmStaleMs } : {}),
      });
      watches.push(gpu.watch);
      running.push({ name: 'gpu', ...startGpuCollector({ bus, host, labels, log, ...plan.gpu, source: gpu.source }) });
    }
    if (plan.kernel) {
      // The PCI tree the inventory reads: a port's AER error names the GPUs below it.
      const topology = plan.kernel.topology ?? (plan.inventory ? await hostTopology({ timeoutMs: plan.inventory.timeoutMs }) : undefined);
      const kernel = await startKernelCollector({ bus, store: io.store, host, labels, log, ...plan.kernel, ...(topology ? { topology } : {}) });
      running.push({ name: 'kernel', stop: () => kernel.stop() });
      watches.push(kernelWatch(() => kernel.health(), times.kernelStallMs ?? KERNEL_STALL_MS, times.kernelStoppedMs ?? KERNEL_STOPPED_MS));
    }
    if (plan.provider) {
      const { name, ...rest } = plan.provider;
      running.push({ name: 'provider', ...startMetadataPoller({ bus, store: io.store, host, labels, log, provider: name, ...rest }) });
    }
    const network = plan.network ?? (existsSync(DEFAULT_IB_SYSFS_ROOT) ? { root: DEFAULT_IB_SYSFS_ROOT, intervalMs: 30_000 } : false);
    if (network) running.push({ name: 'network', ...startNetworkCollector({ bus, host, labels, log, ...network }) });
    // Only where systemd runs the machine (`/run/systemd/system`, as sd_booted checks): an agent in
    // a container sees the host's NVSwitch device but has no systemd to ask, and must not page for it.
    const fabric = plan.fabricManager ?? (existsSync(NVSWITCH_DEVICE) && existsSync(SYSTEMD_RUNTIME) ? FABRIC_MANAGER_DEFAULTS : false);
    if (fabric) {
      const watch = startFabricManagerWatch(fabric, now);
      watched.push(watch);
      watches.push(watch);
    }
    if (watches.length > 0) {
      watched.push(
        startTelemetryHeartbeat({
          bus,
          host,
          labels,
          log,
          watches,
          now,
          ...(times.heartbeatMs !== undefined ? { intervalMs: times.heartbeatMs } : {}),
          ...(times.checkMs !== undefined ? { checkMs: times.checkMs } : {}),
        }),
      );
    }
  } catch (error) {
    for (const part of [...watched, ...running]) await part.stop();
    throw error;
  }
  const collectors = running.map((c) => c.name);
  return {
    collectors,
    tracker,
    health(): AgentHealth {
      const at = now();
      const ages: Record<string, number | null> = Object.create(null);
      for (const name of collectors) {
        const last = tracker.health(must(TOPIC_OF.get(name), 'every collector the agent runs has a topic')).lastOkMs;
        ages[name] = last === undefined ? null : Math.round((at - last) / 1000);
      }
      const uptime = Math.round((at - started) / 1000);
      let reason: string | undefined;
      if (plan.gpu) {
        const staleMs = AGENT_STALE_INTERVALS * plan.gpu.intervalMs;
        const last = tracker.health(TOPICS.gpuSamples).lastOkMs ?? started;
        if (at - last > staleMs) reason = `no GPU sample got through for ${Math.round((at - last) / 1000)} s (${AGENT_STALE_INTERVALS} intervals)`;
      }
      return { healthy: reason === undefined, host, collectors, uptime_s: uptime, last_publish_age_s: ages, ...(reason ? { reason } : {}) };
    },
    async stop() {
      for (const part of watched.reverse()) await part.stop();
      for (const collector of running.reverse()) await collector.stop();
    },
  };
}

/** The kernel log's reader: stopped when its source says so for `stoppedMs`, stalled when its loop has not come round for `stallMs`. */
function kernelWatch(health: () => KernelReaderHealth, stallMs: number, stoppedMs: number): SourceWatch {
  return {
    source: 'kernel-log',
    check(at) {
      const { cycledAt, source } = health();
      if (!source.ok && at - (source.since ?? at) >= stoppedMs) return { state: 'stopped', ...(source.message ? { message: source.message } : {}) };
      if (at - cycledAt > stallMs) return { state: 'stalled', message: `the reader has not come back for ${Math.round((at - cycledAt) / 1000)} s` };
      return { state: 'ok' };
    },
  };
}
