import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { repeat } from '../repeat.ts';
import { DEFAULT_IB_SYSFS_ROOT, readInfinibandPorts } from './ib-sysfs.ts';

export const NETWORK_COLLECTOR_SOURCE = 'collector-network/0.1.0';

export interface NetworkCollectorOptions {
  readonly bus: Bus;
  readonly host: string;
  readonly labels?: Record<string, string>;
  readonly intervalMs: number;
  readonly log: Logger;
  /** `/sys/class/infiniband` unless told (tests point it at a tree of their own). */
  readonly root?: string;
}

/**
 * Reads the host's InfiniBand / RoCE ports every interval and publishes them as a `host.sample`
 * (`origin: sysfs`, `ib_ports`). Counters are published as read (monotonic, as the kernel keeps
 * them): a rise between samples is the engine's to judge, against the port's siblings and past.
 */
export function startNetworkCollector(options: NetworkCollectorOptions): { stop(): Promise<void> } {
  const root = options.root ?? DEFAULT_IB_SYSFS_ROOT;
  let warned = false;
  const once = async () => {
    const { ports, problems } = await readInfinibandPorts(root);
    if (problems.length > 0 && !warned) {
      warned = true;
      options.log.warn({ root, problems: problems.slice(0, 5) }, 'network_ports_unreadable');
    }
    try {
      await options.bus.publish(TOPICS.hostSamples, [
        envelopeMessage(
          newEnvelope({
            type: 'host.sample',
            host: options.host,
            source: NETWORK_COLLECTOR_SOURCE,
            labels: options.labels ?? {},
            data: { origin: 'sysfs', ib_ports: ports },
          }),
        ),
      ]);
    } catch (error) {
      options.log.error({ error: String(error) }, 'network_sample_publish_failed');
    }
  };
  return repeat(once, () => options.intervalMs);
}
