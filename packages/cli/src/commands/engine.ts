import { Engine, RecordingError, replay as replayRecording } from '@gpualert/engine';
import { loadJobPatterns } from '@gpualert/collectors';
import {
  EngineFleetView,
  EngineMetrics,
  requestOperatorResolve,
  startEngineMetricsServer,
  startEngineService,
  type RunningEngine,
} from '@gpualert/engine-service';
import type { Logger } from '@gpualert/log';
import { bundledPath, formatRuleError } from '@gpualert/rules';
import { existsSync } from 'node:fs';
import { CliError, EXIT, errnoCode, errorMessage } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';
import { readInput } from '../read-input.ts';
import { runService } from '../run-service.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { ENGINE_SETTINGS } from '../settings/engine-settings.ts';
import { loadJudgement, loadPrices, loadRoutesOrExit, routesIn } from './load-files.ts';
import { stringOption } from '../option-values.ts';

type Options = Record<string, unknown>;

/** `gpualert rules check [DIR]`: every error with file, line and field; exit 2 if any. */
export async function rulesCheck(dir: string): Promise<number> {
  const { ruleSet, catalog } = loadJudgement(dir, 'rules check');
  const routesFile = routesIn(dir);
  const routes = routesFile ? loadRoutesOrExit(routesFile, 'rules check') : undefined;
  // The job log collector's patterns (RE2, named groups), when the directory has them.
  const patternsFile = `${dir}/job-patterns.yaml`;
  const patterns = existsSync(patternsFile) ? loadJobPatterns(patternsFile) : undefined;
  if (patterns && !patterns.ok) throw new CliError(patterns.errors.map((e) => `gpualert rules check: ${formatRuleError(e)}`).join('\n'));
  const rules = new Set(ruleSet.templates.flatMap((t) => t.rules.map((r) => r.id)));
  const routesNote = routes ? `, routes with ${routes.receivers.length} receivers and ${routes.inhibit_rules.length} inhibit rules` : '';
  const patternsNote = patterns?.ok ? `, ${patterns.value.length} job patterns` : '';
  process.stdout.write(
    `${dir}: ${rules.size} rules, ${ruleSet.templates.length} templates (${ruleSet.templates.map((t) => t.template.name).join(', ')}), ${catalog.size} Xid codes${routesNote}${patternsNote}: valid\n`,
  );
  return EXIT.ok;
}

/** Lines `replay` names one by one when it passes them over; the rest are counted. */
const SKIPPED_NAMED = 20;

/**
 * `gpualert replay <recording> [--rules DIR] [--strict]`: alerts as JSONL, the same every time. A
 * line that is not an envelope, or a sample dated more than MAX_CLOCK_LEAP_MS ahead of the clock
 * (StreamClock.admit), is passed over as the service dead-letters one, named on stderr (the first
 * 20) and counted at the end; `--strict` stops at the first, exit 2.
 */
export async function replay(file: string, options: Options): Promise<number> {
  const { ruleSet, catalog } = loadJudgement(stringOption(options, 'rules'), 'replay');
  const text = await readInput('replay', file);
  let skipped = 0;
  const skip = (line: number, reason: string) => {
    skipped += 1;
    if (skipped <= SKIPPED_NAMED) process.stderr.write(`gpualert replay: ${file}: line ${line} passed over: ${reason}\n`);
  };
  try {
    for (const alert of replayRecording(new Engine(ruleSet, catalog), text.split('\n'), undefined, options.strict === true ? {} : { skip }))
      process.stdout.write(`${JSON.stringify(alert)}\n`);
  } catch (error) {
    if (error instanceof RecordingError) throw new CliError(`gpualert replay: ${file}: ${error.message}`);
    throw error;
  }
  if (skipped > 0)
    process.stderr.write(
      `gpualert replay: ${file}: ${skipped} ${skipped === 1 ? 'line' : 'lines'} passed over (not envelopes, or samples dated too far ahead of the clock: dead-lettered by the service); --strict stops at the first\n`,
    );
  return EXIT.ok;
}

/** `gpualert engine`: the rules engine service. */
export async function engine(options: Options): Promise<number> {
  const settings = loadSettings(ENGINE_SETTINGS, options);
  const { clock, port } = settings;
  const { ruleSet, catalog } = loadJudgement(settings.rules, 'engine');
  return runService('engine', settings, async ({ bus, store }, log) => {
    const metrics = new EngineMetrics(ruleSet, bundledPrices('engine'));
    // The console's reads of the hosts this engine owns, beside /metrics: the notifiers ask here, not the samples topic.
    const fleetView = new EngineFleetView(ruleSet, clock);
    const service = await startEngineService({
      fleetView,
      bus,
      store,
      log,
      ruleSet,
      catalog,
      clock,
      metrics,
      ...(settings.forgetAfter !== undefined ? { forgetAfterMs: settings.forgetAfter } : {}),
    });
    let server: Awaited<ReturnType<typeof startEngineMetricsServer>>;
    try {
      server = await startEngineMetricsServer(metrics, port, settings.listen, {}, () => service.ready(), fleetView);
    } catch (error) {
      await service.stop();
      throw new CliError(
        `gpualert engine: port ${port} for /metrics ${errnoCode(error) === 'EADDRINUSE' ? 'is in use' : 'cannot be opened'}; choose another with --metrics-port or GPUALERT_ENGINE_PORT (0 picks a free one)`,
      );
    }
    log.info({ templates: ruleSet.templates.map((t) => t.template.name), clock, metrics_port: server.port }, 'engine_started');
    // SIGHUP reads the rules and the Xid catalog again, as Prometheus does its rules (it would otherwise end the process).
    const onHangup = () => void reloadRules(settings.rules, service, metrics, log);
    process.on('SIGHUP', onHangup);
    return {
      stop: async () => {
        process.off('SIGHUP', onHangup);
        await server.close();
        await service.stop();
      },
    };
  });
}

/** `gpualert alert resolve <fingerprint>`: hands the engine an operator's resolve. */
export async function alertResolve(fingerprint: string, options: Options): Promise<number> {
  if (!/^[0-9a-f]{8,64}$/.test(fingerprint)) throw new CliError(`gpualert alert resolve: "${fingerprint}" is not an alert fingerprint`);
  const config = commonConfig(options);
  if (!config.redisUrl) {
    throw new CliError("gpualert alert resolve: needs REDIS_URL (the embedded mode's store lives inside gpualert up)");
  }
  // Loaded here, not with the module: `gpualert up` imports this module, and without REDIS_URL runs on its in-process store.
  const { RedisStore } = await import('@gpualert/state/redis');
  const store = new RedisStore({ url: config.redisUrl, prefix: config.keyPrefix });
  await requestOperatorResolve(store, fingerprint, Date.now());
  await store.close();
  process.stdout.write(`resolve of ${fingerprint} handed to the engine\n`);
  return EXIT.ok;
}

/** The bundled price list, to price idle GPU-hours in /metrics (none when it is absent). */
export function bundledPrices(command: string) {
  const file = bundledPath('rules/prices.yaml');
  return existsSync(file) ? loadPrices(file, command) : undefined;
}

/**
 * The rules directory read again and, when it loads, judged by from the next step on (every host
 * bound again, its baselines and open alerts kept); when it does not, each error with its
 * file:line is logged (`config_reload_failed`), the metric says so, and the running rules stay.
 * Resolves to those errors (none when the rules took). Never throws: nobody awaits a SIGHUP's reload.
 */
export async function reloadRules(
  dir: string | undefined,
  service: RunningEngine,
  metrics: EngineMetrics | undefined,
  log: Logger,
): Promise<readonly string[]> {
  try {
    const { ruleSet, catalog } = loadJudgement(dir, 'engine');
    const moved = await service.reload(ruleSet, catalog);
    metrics?.reloaded(true, Date.now(), ruleSet);
    log.info({ templates: ruleSet.templates.map((t) => t.template.name), hosts_rebound: moved }, 'config_reloaded');
    return [];
  } catch (error) {
    metrics?.reloaded(false);
    const errors = errorMessage(error).split('\n').slice(0, MAX_RELOAD_ERRORS);
    log.error({ dir: dir ?? 'rules/ (bundled)', errors }, 'config_reload_failed');
    return errors;
  }
}

/** Errors one failed reload's line names (a broken directory can have hundreds). */
const MAX_RELOAD_ERRORS = 50;
