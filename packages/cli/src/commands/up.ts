import { engineService } from '@gpualert/engine-service';
import { notifierService } from '@gpualert/notifier';
import { intakeConfigFrom, startIntake } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { embeddedDataDir, openInfrastructure, stopWithin, untilSignal, type RunningService, type ServiceDefinition } from '@gpualert/runtime';
import { printAlerts } from '../alert-printer.ts';
import { commonConfig } from '../common-options.ts';
import { playDemo } from '../demo-feeder.ts';
import { loadJudgement } from './engine.ts';
import { loadRoutesOrExit } from './notifier.ts';

const EMBEDDED_ROUTES = new URL('../../../../rules/routes.embedded.yaml', import.meta.url).pathname;

/**
 * Everything in one process: the in-process bus and store unless Kafka and Redis are
 * configured. `--demo` plays the bundled incident through it.
 */
export async function up(options: Record<string, unknown>): Promise<number> {
  const started = performance.now();
  const config = commonConfig(options);
  const log = createLogger({ name: 'gpualert-up', level: config.logLevel });
  const demo = options.demo === true;
  const { ruleSet, catalog } = loadJudgement(options.rules as string | undefined, 'up');
  const services: ServiceDefinition[] = [
    // The demo's recording lives in the past: only its own event time may move the clock.
    engineService(ruleSet, catalog, demo ? 'event' : 'wall'),
    { name: 'intake', start: (context) => startIntake(intakeConfigFrom(process.env, {}), context) },
    notifierService(loadRoutesOrExit((options.routes as string | undefined) ?? process.env.GPUALERT_ROUTES ?? EMBEDDED_ROUTES, 'up'), process.env),
  ];
  const dataDir = embeddedDataDir(options.dataDir);
  const infra = await openInfrastructure(config, log, { dataDir });
  const printer = await printAlerts(infra.bus);
  const running: RunningService[] = [];
  for (const service of services) {
    try {
      running.push(await service.start({ bus: infra.bus, store: infra.store, log: log.child({ service: service.name }) }));
    } catch (error) {
      // One service that cannot start (a port in use) must not take the others down.
      log.error({ service: service.name, error: error instanceof Error ? error.message : String(error) }, 'service_failed_to_start');
    }
  }
  log.info(
    {
      mode: infra.mode,
      bus: infra.bus.kind,
      store: infra.store.kind,
      services: running.map((s) => s.name),
      startup_ms: Math.round(performance.now() - started),
      ...(infra.bus.kind === 'memory' ? { data_dir: dataDir } : {}),
    },
    'gpualert_up',
  );
  let stopping = false;
  const demoRun = demo
    ? playDemo(infra.bus, catalog, Number(options.speed ?? 120), () => stopping).then((n) => {
        if (n > 0) log.info({ envelopes: n }, 'demo_played');
      })
    : Promise.resolve();
  const signal = await untilSignal();
  stopping = true;
  log.info({ signal }, 'gpualert_stopping');
  const stopped = await stopWithin(20_000, async () => {
    await demoRun.catch(() => {});
    await printer.stop();
    for (const service of running.reverse()) await service.stop();
    await infra.close();
  });
  if (!stopped) {
    log.error({ deadline_ms: 20_000 }, 'gpualert_stop_timed_out');
    return 1;
  }
  log.info({}, 'gpualert_stopped');
  return 0;
}
