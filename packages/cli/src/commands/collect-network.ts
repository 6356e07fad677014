import { hostname } from 'node:os';
import { startNetworkCollector } from '@gpualert/collectors';
import { parseDuration } from '../duration.ts';
import { runService } from '../run-service.ts';
import { commonConfig } from '../common-options.ts';
import { bmcLabels } from './collect-bmc.ts';
import { stringOption } from '../option-values.ts';

/** `gpualert collect network [--root /sys/class/infiniband]`: the host's InfiniBand / RoCE ports. */
export async function collectNetwork(options: Record<string, unknown>): Promise<number> {
  const intervalMs = parseDuration('interval', String(options.interval));
  const host = stringOption(options, 'host') ?? hostname();
  const labels = bmcLabels(options, 'collect network');
  return runService('collector-network', commonConfig(options), async ({ bus }, log) => {
    log.info({ root: options.root, interval_ms: intervalMs }, 'network_collector_started');
    return startNetworkCollector({ bus, host, labels, intervalMs, log, ...(options.root ? { root: String(options.root) } : {}) });
  });
}
