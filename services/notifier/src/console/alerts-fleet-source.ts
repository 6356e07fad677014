import {
  emptyMetricView,
  FLEET_SNAPSHOT_VERSION,
  isGpuIndex,
  isHostName,
  MAX_FLEET_HOSTS,
  MAX_GPU_ALERTS,
  MAX_VIEW_TEXT,
  SEVERITIES,
  worseState,
  type AlertView,
  type FleetSnapshot,
  type FleetSource,
  type GpuView,
  type HostView,
  type Severity,
} from '@gpualert/schema';
import type { NotifierView } from '../alertmanager-api.ts';

/**
 * The fleet as the notifier alone knows it, for `gpualert notifier` run without the engine's
 * state: the hosts and GPUs its firing alerts name, each in its worst severity. No metrics, no
 * baselines: those are the engine's (`gpualert up` gives the console the engine's snapshot).
 */
export function alertsFleetSource(view: NotifierView): FleetSource {
  return {
    snapshot(now) {
      const state = view.state();
      const hosts = new Map<string, HostView & { byGpu: Map<number, GpuView> }>();
      let omitted = 0;
      for (const fingerprint of Object.keys(state.firing).sort()) {
        const labels = state.firing[fingerprint];
        if (!labels) continue;
        // As the API names a pushed alert's host: its `host` label, else its `instance` without the port.
        const name = labels.host ?? labels.instance?.replace(/:\d+$/, '');
        if (!isHostName(name)) continue;
        let host = hosts.get(name);
        if (!host) {
          if (hosts.size >= MAX_FLEET_HOSTS) {
            omitted += 1;
            continue;
          }
          host = {
            host: name,
            last_seen: null,
            template: labels.template ?? '',
            drift: [],
            maintenance: [],
            state: 'ok',
            alerts: [],
            gpus: [],
            byGpu: new Map(),
          };
          hosts.set(name, host);
        }
        const about = Object.hasOwn(state.about, fingerprint) ? state.about[fingerprint] : undefined;
        const severity: Severity = SEVERITIES.find((s) => s === labels.severity) ?? 'warning';
        const since = about ? Date.parse(about.startsAt) : NaN;
        const alert: AlertView = {
          fingerprint,
          rule: labels.rule ?? labels.alertname ?? '',
          category: labels.category ?? 'other',
          severity,
          summary: (about?.summary ?? '').slice(0, MAX_VIEW_TEXT),
          since: Number.isFinite(since) ? since : null,
          incident: null,
        };
        host.state = worseState(host.state, severity);
        const index = labels.gpu === undefined ? NaN : Number(labels.gpu);
        if (!isGpuIndex(index)) {
          if (host.alerts.length < MAX_GPU_ALERTS) host.alerts.push(alert);
          continue;
        }
        let gpu = host.byGpu.get(index);
        if (!gpu) {
          const metrics = { temp_c: emptyMetricView(), power_w: emptyMetricView(), util_pct: emptyMetricView(), mem_used_mib: emptyMetricView() };
          gpu = { index, uuid: null, name: null, state: 'ok', metrics, mem_total_mib: null, alerts: [], events: [] };
          host.byGpu.set(index, gpu);
        }
        gpu.state = worseState(gpu.state, severity);
        if (gpu.alerts.length < MAX_GPU_ALERTS) gpu.alerts.push(alert);
      }
      const list: HostView[] = [...hosts.values()].map(({ byGpu, ...host }) => ({ ...host, gpus: [...byGpu.values()].sort((a, b) => a.index - b.index) }));
      const snapshot: FleetSnapshot = { version: FLEET_SNAPSHOT_VERSION, at: now, source: 'alerts', hosts: list, omitted_hosts: omitted, events: [] };
      return Promise.resolve(snapshot);
    },
  };
}
