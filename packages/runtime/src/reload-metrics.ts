import { Gauge, type Registry } from 'prom-client';

/**
 * Whether a service's last configuration reload took, named as Alertmanager and Prometheus name
 * theirs (`…_config_last_reload_successful`, `…_success_timestamp_seconds`); one pair per service,
 * in its own registry. A load at start counts as a reload that took.
 */
export class ReloadMetrics {
  private readonly successful: Gauge;
  private readonly successTime: Gauge;

  constructor(registry: Registry, what: string) {
    this.successful = new Gauge({
      name: 'gpualert_config_last_reload_successful',
      help: `Whether the last configuration reload (${what}) succeeded.`,
      registers: [registry],
    });
    this.successTime = new Gauge({
      name: 'gpualert_config_last_reload_success_timestamp_seconds',
      help: 'When the configuration was last loaded successfully (at start, or a reload).',
      registers: [registry],
    });
  }

  /** A load (at start) or a reload, and whether it took. */
  reloaded(ok: boolean, at = Date.now()): void {
    this.successful.set(ok ? 1 : 0);
    if (ok) this.successTime.set(at / 1000);
  }
}
