import { intakeConfigFrom, startIntake } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { openInfrastructure, untilSignal, type RunningService, type ServiceDefinition } from '@gpualert/runtime';
import { commonConfig } from '../common-options.ts';

/** The services `gpualert up` runs in one process; each later service registers here. */
export const EMBEDDED_SERVICES: readonly ServiceDefinition[] = [
  { name: 'intake', start: (context) => startIntake(intakeConfigFrom(process.env, {}), context) },
];

/** Everything in one process: the in-process bus and store unless Kafka and Redis are configured. */
export async function up(options: Record<string, unknown>): Promise<number> {
  const started = performance.now();
  const config = commonConfig(options);
  const log = createLogger({ name: 'gpualert-up', level: config.logLevel });
  const infra = await openInfrastructure(config, log);
  const running: RunningService[] = [];
  for (const service of EMBEDDED_SERVICES) {
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
    },
    'gpualert_up',
  );
  const signal = await untilSignal();
  log.info({ signal }, 'gpualert_stopping');
  for (const service of running.reverse()) await service.stop();
  await infra.close();
  log.info({}, 'gpualert_stopped');
  return 0;
}
