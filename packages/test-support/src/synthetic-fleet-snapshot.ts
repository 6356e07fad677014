import { FLEET_SNAPSHOT_VERSION, type FleetSnapshot, type FleetSource, type GpuView, type HostView, type ViewState } from '@gpualert/schema';

/**
 * A made-up fleet (synthetic, not a recording) for the console's tests and bench: `hosts` hosts
 * of `gpus` H100s each, every GPU with metrics and baseline bands, a few in trouble in each
 * severity, one host in an open maintenance window and one drifting. Deterministic.
 */
export function syntheticFleetSnapshot(hosts: number, gpus: number, now: number): FleetSnapshot {
  const list: HostView[] = [];
  const troubled: [number, number, ViewState][] = [
    [1, 3, 'critical'],
    [2, 0, 'error'],
    [2, 5, 'warning'],
    [3, 7, 'info'],
  ];
  for (let h = 0; h < hosts; h += 1) {
    const host = `syn-node-${String(h).padStart(4, '0')}`;
    const cards: GpuView[] = [];
    for (let i = 0; i < gpus; i += 1) {
      const state = troubled.find(([th, tg]) => th === h && tg === i)?.[2] ?? 'ok';
      const hot = state === 'critical' || state === 'error';
      const temp = hot ? 88 : 62 + ((h * 7 + i * 3) % 6);
      const alerts =
        state === 'ok'
          ? []
          : [
              {
                fingerprint: `syn${h}-${i}`,
                rule: hot ? 'baseline_temp' : 'ecc_sbe_rate',
                category: hot ? 'baseline' : 'ecc',
                severity: state,
                summary: `${host} GPU ${i}: ${hot ? `${temp} °C, above its own normal of 64 °C` : 'correctable ECC errors rising'}`,
                since: now - 600_000,
                incident: hot ? `inc-${h}` : null,
              },
            ];
      cards.push({
        index: i,
        uuid: `GPU-syn-${h}-${i}`,
        name: 'NVIDIA H100 80GB HBM3',
        state,
        metrics: {
          temp_c: { value: temp, band: { mean: 64, spread: 1.5, k: 3, n: 4_320, load: 'util 75-100%' }, siblings_median: 64.5 },
          power_w: { value: 610 + i, band: { mean: 600, spread: 12, k: 3, n: 4_320, load: 'util 75-100%' }, siblings_median: 605 },
          util_pct: { value: 97, band: { mean: 95, spread: 2, k: 3, n: 4_320, load: null }, siblings_median: 96 },
          mem_used_mib: { value: 61_000, band: null, siblings_median: 60_500 },
        },
        mem_total_mib: 81_559,
        alerts: alerts.map((a) => ({ ...a, severity: a.severity as Exclude<ViewState, 'ok'> })),
        events: alerts.slice(0, hot ? 1 : 0).map((a) => ({ at: now - 300_000, host, gpu: i, kind: 'alert', summary: a.summary })),
      });
    }
    const state = cards.reduce<ViewState>(
      (worst, g) =>
        ['ok', 'info', 'warning', 'error', 'critical'].indexOf(g.state) > ['ok', 'info', 'warning', 'error', 'critical'].indexOf(worst) ? g.state : worst,
      'ok',
    );
    list.push({
      host,
      last_seen: now - 5_000 - (h % 10) * 1_000,
      template: 'h100-sxm',
      drift: h === 4 ? ['driver 550.54.15, the cluster runs 550.90.07'] : [],
      maintenance: h === 5 ? [{ id: 'mw-1', open: true, status: 'started', start: now - 3_600_000, end: now + 3_600_000, description: 'firmware update' }] : [],
      state,
      alerts: [],
      gpus: cards,
    });
  }
  return { version: FLEET_SNAPSHOT_VERSION, at: now, source: 'synthetic', hosts: list, omitted_hosts: 0, events: [] };
}

/** The same fleet as a source, rebuilt (with its times) for each snapshot. */
export function syntheticFleetSource(hosts: number, gpus: number): FleetSource {
  return { snapshot: (now) => Promise.resolve(syntheticFleetSnapshot(hosts, gpus, now)) };
}
