import { hostname, userInfo } from 'node:os';
import { checkSilence, describeReach, loadRoutes, ReceiverConfigError } from '@gpualert/notify';
import { storeFleetSource } from '@gpualert/engine';
import {
  makeSilence,
  createNotifierServer,
  engineFleetSource,
  expireSilence,
  loadSilences,
  NotifierMetrics,
  startNotifier,
  type ReloadResult,
  type RunningNotifier,
} from '@gpualert/notifier';
import { redactSecrets, type Logger } from '@gpualert/log';
import { formatRuleError } from '@gpualert/rules';
import type { StateStore } from '@gpualert/state';
import { CliError, EXIT, errorMessage } from '../cli-error.ts';
import { commonConfig } from '../common-options.ts';
import { parseDuration } from '../duration.ts';
import { runService } from '../run-service.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { NOTIFIER_SETTINGS } from '../settings/notifier-settings.ts';
import { loadJudgement, loadRoutesOrExit } from './load-files.ts';
import { stringListOption } from '../option-values.ts';

type Options = Record<string, unknown>;

/** `gpualert notifier`: routes, groups, dedups and delivers; silences over HTTP with a bearer token. */
export async function notifier(options: Options): Promise<number> {
  const settings = loadSettings(NOTIFIER_SETTINGS, options);
  const { routes: routesFile, token, port, partitions } = settings;
  const routes = loadRoutesOrExit(routesFile, 'notifier');
  // The console's fleet without engines to ask: the rules bind each saved host's template.
  const { ruleSet } = loadJudgement(settings.rules, 'notifier');
  return runService('notifier', settings, async (infra, log) => {
    const metrics = new NotifierMetrics();
    let service;
    try {
      const cluster =
        settings.replica === undefined ? undefined : { replica: settings.replica, peerTimeoutMs: settings.peerTimeout, address: `${hostname()}:${port}` };
      service = await startNotifier({ bus: infra.bus, store: infra.store, log, routes, env: process.env, metrics, ...(cluster ? { cluster } : {}) });
    } catch (error) {
      if (error instanceof ReceiverConfigError) throw new CliError(`gpualert notifier: ${error.message}`);
      throw error;
    }
    // The console's fleet: asked of the engines (each serves the hosts it owns) when a page asks;
    // this process reads alerts, never the samples. Without engines: the host states they saved, no values.
    const fleet = settings.engines?.length ? engineFleetSource(settings.engines) : storeFleetSource(infra.store, new Map(), ruleSet, partitions);
    if (!settings.engines?.length) log.warn({ setting: 'GPUALERT_NOTIFIER_ENGINES' }, 'console_without_engines');
    const running = service;
    const reload = () => reloadRoutes(routesFile, running, metrics, log);
    const server = createNotifierServer(infra.store, metrics, token, infra.bus, {}, routes, service, fleet, reload);
    // SIGHUP reloads, as it does Alertmanager (it would otherwise end the process).
    const onHangup = () => void reload();
    process.on('SIGHUP', onHangup);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, settings.listen, resolve);
    });
    const address = server.address();
    log.info({ port: typeof address === 'object' && address ? address.port : port, silences_api: token !== undefined }, 'notifier_listening');
    return {
      async stop() {
        process.off('SIGHUP', onHangup);
        server.close();
        await service.stop();
      },
    };
  });
}

/**
 * The routes file read again and, when it loads, put in place in the running notifier; when it
 * does not, every error with its file:line is logged (`config_reload_failed`), the metric says so,
 * and the running routes stay.
 */
export async function reloadRoutes(file: string, service: RunningNotifier, metrics: NotifierMetrics, log: Logger): Promise<ReloadResult> {
  // Never throws: a SIGHUP's reload is not awaited by anyone, and a rejection there would end the process.
  try {
    const loaded = loadRoutes(file);
    if (!loaded.ok) {
      const errors = loaded.errors.map(formatRuleError);
      metrics.reloaded(false);
      log.error({ file, errors }, 'config_reload_failed');
      return { ok: false, errors };
    }
    const moved = await service.reload(loaded.value);
    metrics.reloaded(true);
    return { ok: true, ...moved };
  } catch (error) {
    const errors = [redactSecrets(error instanceof Error ? error.message : String(error))];
    metrics.reloaded(false);
    log.error({ file, errors }, 'config_reload_failed');
    return { ok: false, errors };
  }
}

/** Redis's client loads here, not with the module: `gpualert up` imports this module, and without REDIS_URL runs on its in-process store. */
async function sharedStore(options: Options, command: string): Promise<StateStore> {
  const config = commonConfig(options);
  if (!config.redisUrl) throw new CliError(`gpualert ${command}: needs REDIS_URL, where the notifier keeps its silences`);
  const { RedisStore } = await import('@gpualert/state/redis');
  return new RedisStore({ url: config.redisUrl, prefix: config.keyPrefix });
}

export async function silenceAdd(options: Options): Promise<number> {
  const matchers = stringListOption(options, 'match') ?? [];
  const durationMs = parseDuration('for', String(options.for ?? ''));
  const input = { matchers, durationMs, createdBy: String(options.author ?? userInfo().username), comment: String(options.comment ?? '') };
  // Checked before the store is touched: a refused silence is one line, exit 2, and nothing stored.
  const checked = checkSilence(input, Date.now());
  if (!checked.ok) throw new CliError(`gpualert silence add: ${checked.error}`);
  const store = await sharedStore(options, 'silence add');
  try {
    const { silence, reach } = await makeSilence(store, input, Date.now(), options.force === true);
    process.stdout.write(
      `${silence.id}  until ${new Date(silence.endsAt).toISOString()}  ${silence.matchers.join(' ')}  by ${silence.createdBy}: ${silence.comment}  (${describeReach(reach)})\n`,
    );
    return EXIT.ok;
  } catch (error) {
    throw new CliError(`gpualert silence add: ${errorMessage(error)}`);
  } finally {
    await store.close();
  }
}

export async function silenceList(options: Options): Promise<number> {
  const store = await sharedStore(options, 'silence list');
  try {
    const now = Date.now();
    for (const s of Object.values(await loadSilences(store)).sort((a, b) => a.startsAt - b.startsAt)) {
      const state = s.expiredAt !== undefined || s.endsAt <= now ? 'expired' : s.startsAt > now ? 'pending' : 'active';
      process.stdout.write(
        `${s.id}  ${state.padEnd(7)}  ${new Date(s.startsAt).toISOString()} → ${new Date(s.endsAt).toISOString()}  ${s.matchers.join(' ')}  by ${s.createdBy}: ${s.comment}\n`,
      );
    }
    return EXIT.ok;
  } finally {
    await store.close();
  }
}

export async function silenceExpire(id: string, options: Options): Promise<number> {
  const store = await sharedStore(options, 'silence expire');
  try {
    const silence = await expireSilence(store, id, Date.now());
    if (!silence) throw new CliError(`gpualert silence expire: no silence ${id}`);
    process.stdout.write(`${id} expired\n`);
    return EXIT.ok;
  } finally {
    await store.close();
  }
}
