import { PrometheusQueryError, queryPrometheusGpus, startPrometheusCollector, type PrometheusQueryOptions } from '@gpualert/collectors';
import { CliError, EXIT } from '../cli-error.ts';
import { parseDuration } from '../duration.ts';
import { runService } from '../run-service.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { PROMETHEUS_SETTINGS } from '../settings/collector-settings.ts';
import { stringListOption } from '../option-values.ts';

type Options = Record<string, unknown>;

/**
 * How the collector proves who it is to Prometheus, from the environment only (a token on the
 * command line is in every `ps`): GPUALERT_PROMETHEUS_TOKEN (bearer), or
 * GPUALERT_PROMETHEUS_USER with GPUALERT_PROMETHEUS_PASSWORD (basic).
 */
export function prometheusAuthorization(settings: {
  prometheusToken?: string | undefined;
  prometheusUser?: string | undefined;
  prometheusPassword?: string | undefined;
}): string | undefined {
  if (settings.prometheusToken) return `Bearer ${settings.prometheusToken}`;
  if (settings.prometheusUser) return `Basic ${Buffer.from(`${settings.prometheusUser}:${settings.prometheusPassword ?? ''}`).toString('base64')}`;
  return undefined;
}

function queryOptions(options: Options, settings: Parameters<typeof prometheusAuthorization>[0]): PrometheusQueryOptions {
  const url = String(options.url ?? '');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliError(`gpualert collect prometheus: --url must be Prometheus' base URL, e.g. http://prometheus:9090 (got "${url.slice(0, 200)}")`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new CliError('gpualert collect prometheus: --url must be http or https');
  if (parsed.username || parsed.password)
    throw new CliError('gpualert collect prometheus: put credentials in GPUALERT_PROMETHEUS_USER/GPUALERT_PROMETHEUS_PASSWORD, not in --url');
  const authorization = prometheusAuthorization(settings);
  const hostLabels = stringListOption(options, 'hostLabel');
  return {
    url,
    timeoutMs: parseDuration('timeout', String(options.timeout)),
    ...(options.selector ? { selector: String(options.selector) } : {}),
    ...(hostLabels && hostLabels.length > 0 ? { hostLabels } : {}),
    ...(authorization ? { authorization } : {}),
  };
}

/**
 * `gpualert collect prometheus --url URL`: one central collector that reads the fleet's
 * dcgm-exporter series through Prometheus and publishes a `gpu.sample` per host. `--once` prints
 * the hosts and GPUs it would publish and exits (a check before it runs for real).
 */
export async function collectPrometheus(options: Options): Promise<number> {
  const settings = loadSettings(PROMETHEUS_SETTINGS, options);
  const query = queryOptions(options, settings);
  const intervalMs = parseDuration('interval', String(options.interval));
  if (options.once) {
    try {
      const answer = await queryPrometheusGpus(query);
      for (const [host, gpus] of answer.hosts) process.stdout.write(`${JSON.stringify({ host, gpus })}\n`);
      process.stderr.write(
        `${answer.hosts.size} hosts, ${[...answer.hosts.values()].reduce((n, g) => n + g.length, 0)} GPUs, ${answer.skipped} series skipped\n`,
      );
      return 0;
    } catch (error) {
      // Prometheus away or too slow is worth trying again (exit 75); an answer it cannot use is not (exit 1).
      if (error instanceof PrometheusQueryError)
        throw new CliError(`gpualert collect prometheus: ${error.message}`, error.retriable ? EXIT.unavailable : EXIT.failed, { cause: error });
      throw error;
    }
  }
  return runService('collector-prometheus', settings, async ({ bus }, log) => {
    log.info({ url: new URL(query.url).origin, interval_ms: intervalMs, selector: query.selector }, 'prometheus_collector_started');
    return startPrometheusCollector({ bus, query, intervalMs, log });
  });
}
