import { engineService, type EngineFleetView } from '@gpualert/engine-service';
import type { FleetSource } from '@gpualert/schema';
import type { Server } from 'node:http';
import { createNotifierServer, NotifierConfigError, NotifierMetrics, startNotifier } from '@gpualert/notifier';
import { ReceiverConfigError, type RoutesFile } from '@gpualert/notify';
import { IntakeConfig, startIntake } from '@gpualert/intake';
import { createLogger, defaultLogFormat, type LogFormat } from '@gpualert/log';
import {
  embeddedDataDir,
  exitAfterStop,
  listenForStop,
  openInfrastructure,
  stopWithin,
  type RunningService,
  type ServiceContext,
  type ServiceDefinition,
} from '@gpualert/runtime';
import { bundledPath } from '@gpualert/rules';
import { printAlerts } from '../alert-printer.ts';
import { CliError, errnoCode } from '../cli-error.ts';
import { resolveSettings, unprefixed } from '../settings/command-settings.ts';
import { DEFAULT_NOTIFIER_PORT } from '../settings/notifier-settings.ts';
import { UP_SETTINGS } from '../settings/up-settings.ts';
import { DEMO_RECORDINGS, playDemo } from '../demo-feeder.ts';
import { startBanner, type ServiceLine } from '../start-banner.ts';
import { bundledPrices, reloadRules } from './engine.ts';
import { loadJudgement, loadRoutesOrExit } from './load-files.ts';
import { reloadRoutes } from './notifier.ts';
import { UpReload } from './up-reload.ts';
import { usageServiceFor } from './report.ts';
import { stringOption } from '../option-values.ts';

const EMBEDDED_ROUTES = bundledPath('rules/routes.embedded.yaml');
/** How long `up` gives its services to stop after Ctrl-C or SIGTERM. */
export const UP_STOP_LIMIT_MS = 20_000;

/** A number a service or an error carries beyond its type (`port`, `metricsPort`): where it listens or wanted to. */
function numberField(value: unknown, name: 'port' | 'metricsPort'): number | undefined {
  const field: unknown = typeof value === 'object' && value !== null && name in value ? Reflect.get(value, name) : undefined;
  return typeof field === 'number' ? field : undefined;
}

/** What a service says on the banner: where it listens, or why it is not running. */
function describe(service: RunningService): string {
  const port = numberField(service, 'port');
  const metricsPort = numberField(service, 'metricsPort');
  if (typeof metricsPort === 'number') return `running; /metrics and /healthz on port ${metricsPort}`;
  return typeof port === 'number' ? `listening on port ${port}` : 'running';
}

/** One readable line for a service that could not start; a port in use names the setting that moves it. */
export function startFailure(name: string, error: unknown): string {
  const code = errnoCode(error);
  if ((name === 'intake' || name === 'notifier') && (code === 'EADDRINUSE' || code === 'EACCES')) {
    const port = numberField(error, 'port');
    const why = code === 'EADDRINUSE' ? 'is in use' : 'is not allowed';
    return `port ${String(port ?? '?')} ${why}; choose another with --${name}-port or GPUALERT_${name.toUpperCase()}_PORT (0 picks a free one)`;
  }
  return error instanceof Error ? error.message : String(error);
}

export { DEFAULT_NOTIFIER_PORT };

/** Whether `up` serves the notifier's API (Alertmanager's v2 and the silences), and if not, why: the banner says it. A token too short never gets here: the settings refuse it. */
export function notifierApi(token: string | undefined): { token: string } | { off: string } {
  return token
    ? { token }
    : { off: "off: set GPUALERT_NOTIFIER_TOKEN (16+ characters) to serve Alertmanager's v2 API and the silences (the API takes no request without a token)" };
}

/** The console's fleet, made when the notifier starts and stopped with it. */
type FleetFor = (context: ServiceContext) => Promise<{ source: FleetSource; stop(): Promise<void> } | undefined>;

/** The console's fleet in `up`: the in-process engine's own view (its state, latest samples and history rings), read directly. */
function engineFleet(view: () => EngineFleetView | undefined): FleetFor {
  return () => {
    const source = view();
    return Promise.resolve(source ? { source, stop: () => Promise.resolve() } : undefined);
  };
}

/** Where the console answers, for the banner: the notifier's port on the address it listens on (localhost for all of them). */
export function consoleAddress(running: readonly RunningService[], listen: string | undefined): string | undefined {
  const port = numberField(
    running.find((s) => s.name === 'notifier'),
    'port',
  );
  if (typeof port !== 'number') return undefined;
  const host = !listen || listen === '0.0.0.0' || listen === '::' ? 'localhost' : listen.includes(':') ? `[${listen}]` : listen;
  return `http://${host}:${port}/console/`;
}

/** The notifier with its HTTP server on a port of its own when the API is on: Prometheus, amtool and Grafana talk to `up` too. */
function notifierWithApi(
  routesFile: string,
  routes: RoutesFile,
  listen: { port: number; address: string },
  api: ReturnType<typeof notifierApi>,
  reloads: UpReload,
  fleetFor?: FleetFor,
): ServiceDefinition {
  return {
    name: 'notifier',
    async start(context) {
      const metrics = new NotifierMetrics();
      const service = await startNotifier({ ...context, routes, env: process.env, metrics });
      reloads.notifierStarted(() => reloadRoutes(routesFile, service, metrics, context.log));
      if (!('token' in api)) return { name: 'notifier', stop: () => service.stop() };
      const fleet = await fleetFor?.(context);
      // POST /-/reload reads the engine's rules again too, as SIGHUP does.
      const server: Server = createNotifierServer(context.store, metrics, api.token, context.bus, {}, routes, service, fleet?.source, () => reloads.run());
      try {
        await new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(listen.port, listen.address, resolve);
        });
      } catch (error) {
        await fleet?.stop();
        await service.stop();
        throw Object.assign(error instanceof Error ? error : new Error(String(error)), { port: listen.port });
      }
      const address = server.address();
      const running: RunningService & { readonly port: number } = {
        name: 'notifier',
        port: typeof address === 'object' && address ? address.port : listen.port,
        async stop() {
          server.closeAllConnections();
          server.close();
          await fleet?.stop();
          await service.stop();
        },
      };
      return running;
    },
  };
}

/**
 * Everything in one process: the in-process bus and store unless Kafka and Redis are
 * configured. `--demo` plays the bundled incident through it. On a terminal it reads like a
 * tool: a start banner, the alert lines, and warnings and errors as readable lines; JSON log
 * lines elsewhere or with `--log-format json`.
 */
function notifierApiLine(running: readonly RunningService[]): string {
  const port = numberField(
    running.find((s) => s.name === 'notifier'),
    'port',
  );
  return typeof port === 'number'
    ? `Alertmanager's v2 API on port ${port} (/api/v2, /v1/silences; bearer GPUALERT_NOTIFIER_TOKEN)`
    : 'off: the notifier did not start';
}

export async function up(options: Record<string, unknown>): Promise<number> {
  const started = performance.now();
  // Every setting checked before anything starts: a bad one is one GA-CONFIG-INVALID line, not a service quietly left out.
  const { config, effective } = resolveSettings(UP_SETTINGS, options);
  const format: LogFormat = config.logFormat ?? defaultLogFormat();
  // On a terminal, info lines would bury the alerts; an explicit --log-level still shows them.
  const levelGiven = effective.some((s) => s.key === 'logLevel' && s.origin !== 'default');
  const level = format === 'pretty' && !levelGiven ? 'warn' : config.logLevel;
  const loggerFor = (name: string) => createLogger({ name, level, format });
  const log = loggerFor('gpualert-up');
  const demo = options.demo === true;
  if (!demo && options.demoRecording !== undefined) {
    throw new CliError('gpualert up: --demo-recording chooses what --demo plays; add --demo (gpualert up --demo --demo-recording NAME)');
  }
  const recordingName = stringOption(options, 'demoRecording') ?? 'incident';
  if (!Object.hasOwn(DEMO_RECORDINGS, recordingName)) {
    throw new CliError(`gpualert up: --demo-recording must be one of ${Object.keys(DEMO_RECORDINGS).join(', ')} (got "${recordingName}")`);
  }
  const recording = DEMO_RECORDINGS[recordingName as keyof typeof DEMO_RECORDINGS];
  const { ruleSet, catalog } = loadJudgement(config.rules, 'up');
  const routesFile = config.routes ?? EMBEDDED_ROUTES;
  // Already checked as the intake's settings under `intake…`: read again under their own names.
  const intakeConfig = IntakeConfig.parse(unprefixed('intake', config));
  const api = notifierApi(config.notifierToken);
  // SIGHUP and POST /-/reload read the engine's rules and the notifier's routes again.
  const reloads = new UpReload();
  // The demo's recording lives in the past: only its own event time may move the clock.
  const engine = engineService(ruleSet, catalog, demo ? 'event' : 'wall', {
    metrics: { port: config.enginePort, listen: config.engineListen, prices: bundledPrices('up') },
    ...(config.engineForgetAfter !== undefined ? { forgetAfterMs: config.engineForgetAfter } : {}),
  });
  let engineView: EngineFleetView | undefined;
  const services: ServiceDefinition[] = [
    {
      name: 'engine',
      async start(context) {
        const started = await engine.start(context);
        engineView = started.fleetView;
        reloads.engineStarted(() => reloadRules(config.rules, started.engine, started.metrics, context.log));
        return started;
      },
    },
    { name: 'intake', start: (context) => startIntake(intakeConfig, context) },
    notifierWithApi(
      routesFile,
      loadRoutesOrExit(routesFile, 'up'),
      { port: config.notifierPort, address: config.notifierListen },
      api,
      reloads,
      engineFleet(() => engineView),
    ),
    usageServiceFor(ruleSet, demo ? 'event' : 'wall'),
  ];
  const dataDir = embeddedDataDir(config.dataDir);
  // Listened for before `gpualert_up` says it is ready (a supervisor's stop right after that line
  // finds the handler in place), and before anything opens (a SIGHUP then is ignored, not fatal).
  const stop = listenForStop();
  let infra: Awaited<ReturnType<typeof openInfrastructure>>;
  let printer: Awaited<ReturnType<typeof printAlerts>>;
  try {
    infra = await openInfrastructure(config, log, { dataDir });
    printer = await printAlerts(infra.bus);
  } catch (error) {
    stop.release();
    throw error;
  }
  const running: RunningService[] = [];
  const lines: ServiceLine[] = [];
  // A stop asked for while a service starts (Kafka away, a start that hangs) is not held back by it:
  // the services not started yet are skipped, and one still starting is stopped once it has.
  let stopAsked = false;
  void stop.signalled.then(() => (stopAsked = true));
  let stillStarting: Promise<RunningService | undefined> | undefined;
  for (const service of services) {
    if (stopAsked) break;
    try {
      const starting = service.start({ bus: infra.bus, store: infra.store, log: loggerFor(service.name) });
      const first = await Promise.race([starting.then((started) => ({ started })), stop.signalled.then(() => undefined)]);
      if (!first) {
        stillStarting = starting.catch(() => undefined);
        break;
      }
      const { started } = first;
      running.push(started);
      lines.push({ name: service.name, state: describe(started) });
    } catch (error) {
      if (error instanceof ReceiverConfigError || error instanceof NotifierConfigError) {
        // A receiver that cannot work is a config mistake, not a busy port: running on without the
        // notifier would route and page nothing while looking healthy.
        for (const started of running.reverse()) await started.stop();
        await printer.stop();
        await infra.close();
        stop.release();
        throw new CliError(`gpualert up: ${error.message}`);
      }
      // One service that cannot start (a port in use) must not take the others down.
      const why = startFailure(service.name, error);
      log.error({ failed: service.name }, `${service.name} did not start: ${why}`);
      lines.push({ name: service.name, state: `NOT RUNNING: ${why}` });
    }
  }
  log.info(
    {
      mode: infra.mode,
      bus: infra.bus.kind,
      store: infra.store.kind,
      services: running.map((s) => s.name),
      // Where each listens (a port of 0 picked a free one): what the banner says in pretty mode.
      ports: Object.fromEntries(
        running.flatMap((s) => {
          const value = numberField(s, 'port') ?? numberField(s, 'metricsPort');
          return value !== undefined ? [[s.name, value]] : [];
        }),
      ),
      startup_ms: Math.round(performance.now() - started),
      ...(infra.bus.kind === 'memory' ? { data_dir: dataDir } : {}),
    },
    'gpualert_up',
  );
  if (format === 'pretty') {
    const consoleAt = consoleAddress(running, config.notifierListen);
    process.stdout.write(
      startBanner({
        mode: infra.mode,
        bus: infra.bus.kind,
        store: infra.store.kind,
        ...(infra.bus.kind === 'memory' ? { dataDir } : {}),
        routes: routesFile === EMBEDDED_ROUTES ? 'the console only (set GPUALERT_ROUTES to page and chat)' : routesFile,
        services: lines,
        notifierApi: 'off' in api ? api.off : notifierApiLine(running),
        ...(consoleAt ? { console: consoleAt } : {}),
        demo,
        startupMs: Math.round(performance.now() - started),
      }),
    );
  }
  // SIGHUP reloads, as it does Prometheus and Alertmanager (it would otherwise end `up`); while
  // stopping it does nothing, and stays handled until the process exits.
  let stopping = false;
  const onHangup = () => {
    if (!stopping) void reloads.run();
  };
  process.on('SIGHUP', onHangup);
  const demoRun = demo
    ? playDemo(infra.bus, catalog, Number(options.speed ?? 120), () => stopping, recording).then((n) => {
        if (n > 0) log.info({ envelopes: n }, 'demo_played');
      })
    : Promise.resolve();
  const signal = await stop.signalled;
  stopping = true;
  log.info({ signal }, 'gpualert_stopping');
  if (format === 'pretty') process.stdout.write(`stopping (${signal}); at most ${UP_STOP_LIMIT_MS / 1000} s…\n`);
  const stopped = await stopWithin(UP_STOP_LIMIT_MS, async () => {
    await demoRun.catch(() => {});
    await printer.stop();
    await (await stillStarting)?.stop();
    for (const service of running.reverse()) await service.stop();
    await infra.close();
  });
  const code = stopped ? 0 : 1;
  if (stopped) log.info({}, 'gpualert_stopped');
  else log.error({ deadline_ms: UP_STOP_LIMIT_MS }, `gpualert_stop_timed_out: services still busy after ${UP_STOP_LIMIT_MS / 1000} s, exiting anyway`);
  exitAfterStop(code);
  return code;
}
