import { benchAgent } from './agent.bench.ts';
import { benchAlertmanagerApi } from './alertmanager-api.bench.ts';
import { benchBmc } from './bmc.bench.ts';
import { benchBus } from './bus.bench.ts';
import { benchConsole } from './console.bench.ts';
import { benchConsoleEngines } from './console-engines.bench.ts';
import { benchE2e } from './e2e.bench.ts';
import { benchEngineFleet } from './engine-fleet.bench.ts';
import { benchEngineScale } from './engine-scale.bench.ts';
import { benchEngine } from './engine.bench.ts';
import { benchEngineFootprint } from './engine-footprint.bench.ts';
import { benchFleetMetrics } from './fleet-metrics.bench.ts';
import { benchFleetShares } from './fleet-shares.bench.ts';
import { benchGpuMetrics } from './gpu-metrics.bench.ts';
import { benchIntake } from './intake.bench.ts';
import { benchJobLayer } from './job-layer.bench.ts';
import { benchJobLog } from './job-log.bench.ts';
import { benchKernel, benchKernelFlood } from './kernel.bench.ts';
import { benchNotifier } from './notifier.bench.ts';
import { benchNotifierStorm } from './notifier-storm.bench.ts';
import { benchNotifierFootprint } from './notifier-footprint.bench.ts';
import { benchRemediation } from './remediation.bench.ts';
import { benchTimeline } from './timeline.bench.ts';
import { benchUsage } from './usage.bench.ts';

/** `npm run bench`: every hot path's figures, printed. Compare ratios within one run. */
const benches: Record<string, () => Promise<void>> = {
  kernel: benchKernel,
  engine: benchEngine,
  'gpu-metrics': benchGpuMetrics,
  bus: benchBus,
  intake: benchIntake,
  notifier: benchNotifier,
  timeline: benchTimeline,
  agent: benchAgent,
  e2e: benchE2e,
  'engine-scale': benchEngineScale,
  'engine-fleet': benchEngineFleet,
  bmc: benchBmc,
  'job-log': benchJobLog,
  usage: benchUsage,
  'alertmanager-api': benchAlertmanagerApi,
};
benches.console = benchConsole;
benches['console-engines'] = benchConsoleEngines;
benches['fleet-metrics'] = benchFleetMetrics;
benches['fleet-shares'] = benchFleetShares;
benches['job-layer'] = benchJobLayer;
benches['notifier-storm'] = benchNotifierStorm;
benches['notifier-footprint'] = benchNotifierFootprint;
benches['engine-footprint'] = benchEngineFootprint;
benches.remediation = benchRemediation;
benches['kernel-flood'] = benchKernelFlood;
const only = process.argv.slice(2);
for (const [name, bench] of Object.entries(benches)) {
  if (only.length === 0 || only.includes(name)) await bench();
}
