import type { IncidentScope } from './incident-scope.ts';
import { gpuKey } from './incident-scope.ts';
import type { BaselineBand, Duration, MinuteSummary, Moment, Postmortem, SummarisedMetric, Timeline } from './timeline-types.ts';

export type { BaselineBand, Duration, Moment, Postmortem } from './timeline-types.ts';

/** How many spreads from the mean the band reaches: the engine's usual default for a baseline rule. */
export const BAND_K = 3;
/** The baseline ends this long before the first alert: what came just before is the lead-in, not the normal. */
export const BASELINE_LEAD_MS = 10 * 60_000;
/** Fewer minutes than this and there is no band to speak of. */
export const MIN_BASELINE_MINUTES = 3;
/** The narrowest band per metric: a flat line's spread of 0 would call every wobble a departure. */
export const MIN_HALF_WIDTH: Readonly<Record<SummarisedMetric, number>> = { temp_c: 2, power_w: 15, util_pct: 5, mem_temp_c: 2 };
/**
 * Two records further apart than this were not dated by one clock (a recording replayed: the engine
 * on the data's time, the notifier on the wall's), so no time-to figure is drawn from them. Nothing
 * gpualert does takes this long: a delivery gives up after an hour.
 */
export const SAME_CLOCK_MS = 24 * 3_600_000;

/** The baseline band of each of these GPUs and metrics, from minutes before `before` (see BaselineBand). */
export function baselineBands(metrics: readonly MinuteSummary[], gpus: readonly { host: string; gpu: number }[], before: number): BaselineBand[] {
  const wanted = new Set(gpus.map((g) => gpuKey(g.host, g.gpu)));
  const rows = new Map<string, MinuteSummary[]>();
  for (const m of metrics) {
    if (!wanted.has(gpuKey(m.host, m.gpu))) continue;
    const key = `${gpuKey(m.host, m.gpu)}\u0000${m.metric}`;
    let list = rows.get(key);
    if (!list) rows.set(key, (list = []));
    list.push(m);
  }
  const bands: BaselineBand[] = [];
  for (const list of rows.values()) {
    const first = list[0];
    if (!first) continue;
    const lead = list.filter((m) => Date.parse(m.minute) + 60_000 <= before - BASELINE_LEAD_MS);
    const base = lead.length >= MIN_BASELINE_MINUTES ? lead : list.filter((m) => Date.parse(m.minute) + 60_000 <= before);
    if (base.length < MIN_BASELINE_MINUTES) continue;
    const mean = base.reduce((s, m) => s + m.mean, 0) / base.length;
    const spread = Math.sqrt(base.reduce((s, m) => s + (m.mean - mean) ** 2, 0) / base.length);
    const half = Math.max(BAND_K * spread, MIN_HALF_WIDTH[first.metric]);
    const round = (v: number) => Math.round(v * 100) / 100;
    bands.push({
      host: first.host,
      gpu: first.gpu,
      metric: first.metric,
      mean: round(mean),
      spread: round(spread),
      k: BAND_K,
      low: round(mean - half),
      high: round(mean + half),
      from: base[0]?.minute ?? first.minute,
      to: new Date(Date.parse(base.at(-1)?.minute ?? first.minute) + 60_000).toISOString(),
      minutes: base.length,
    });
  }
  return bands.sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : a.gpu - b.gpu || (a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : 0)));
}

const LABEL: Readonly<Record<SummarisedMetric, string>> = {
  temp_c: 'temperature',
  power_w: 'power',
  util_pct: 'utilisation',
  mem_temp_c: 'memory temperature',
};

function between(from: Moment | undefined, to: Moment | undefined, missing: string, names: [string, string]): Duration {
  if (!from || !to) return { notMeasured: missing };
  const ms = Date.parse(to.ts) - Date.parse(from.ts);
  if (ms < 0 || ms > SAME_CLOCK_MS)
    return {
      notMeasured: `the ${names[1]} is dated ${to.ts}, the ${names[0]} ${from.ts}: two clocks (a recording replayed, its notifier on the wall clock)`,
    };
  return { ms };
}

/**
 * The post-mortem's figures for one incident: the first signal (the earliest kernel event or
 * collector error in its story up to its first alert, or the first minute one of its GPUs left its
 * baseline band), the first alert, the first notification delivered, the first acknowledgement,
 * the resolution, and the times between.
 */
export function postmortem(t: Timeline, scope: IncidentScope): Postmortem {
  const firstAlertAt = scope.firstAlertAt;
  const first = scope.alerts.find((a) => Date.parse(a.data.starts_at) === firstAlertAt);
  const firstAlert: Moment = { ts: new Date(firstAlertAt).toISOString(), what: first ? `${first.host}: ${first.data.summary}` : 'the first alert' };
  const gpus = t.incident?.gpus ?? [];
  const bands = baselineBands(t.metrics, gpus, firstAlertAt);
  const candidates: Moment[] = [];
  for (const e of t.entries) {
    if (Date.parse(e.ts) > firstAlertAt) break;
    if (e.source === 'kernel' || e.source === 'collector')
      candidates.push({ ts: e.ts, what: `${e.host}${e.gpu !== undefined ? ` GPU ${e.gpu}` : ''}: ${e.title}` });
  }
  for (const band of bands) {
    const out = t.metrics.find(
      (m) =>
        m.host === band.host &&
        m.gpu === band.gpu &&
        m.metric === band.metric &&
        m.minute >= band.to &&
        Date.parse(m.minute) + 60_000 <= firstAlertAt && // a whole minute before the alert: its mean holds nothing after it
        (m.mean > band.high || m.mean < band.low),
    );
    if (out)
      candidates.push({
        ts: out.minute,
        what: `${band.host} GPU ${band.gpu}: ${LABEL[band.metric]} ${out.mean} left its band ${band.low}–${band.high}`,
      });
  }
  candidates.sort((a, b) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : 0));
  const firstSignal = candidates[0];
  const delivered = t.notifications.find((n) => n.outcome === 'sent' && n.fingerprints.some((f) => scope.fingerprints.has(f)));
  const firstNotified = delivered ? { ts: delivered.ts, what: `${delivered.receiver} (${delivered.channel}) told` } : undefined;
  const ack = t.acknowledgements.find((a) => a.action === 'acknowledged' && scope.fingerprints.has(a.fingerprint));
  const firstAcknowledged = ack ? { ts: ack.ts, what: `acknowledged in ${ack.pager}${ack.by ? ` by ${ack.by}` : ''}` } : undefined;
  const resolved = scope.resolvedAt !== undefined ? { ts: new Date(scope.resolvedAt).toISOString(), what: 'the last of its alerts resolved' } : undefined;
  const mine = t.notifications.filter((n) => n.fingerprints.some((f) => scope.fingerprints.has(f)));
  return {
    ...(firstSignal ? { firstSignal } : {}),
    firstAlert,
    ...(firstNotified ? { firstNotified } : {}),
    ...(firstAcknowledged ? { firstAcknowledged } : {}),
    ...(resolved ? { resolved } : {}),
    toDetect: between(firstSignal, firstAlert, 'no signal earlier than the first alert in the record', ['signal', 'alert']),
    toNotify: between(firstAlert, firstNotified, 'no notification of its alerts was delivered', ['alert', 'notification']),
    toAcknowledge: between(firstAlert, firstAcknowledged, 'no acknowledgement came from a pager', ['alert', 'acknowledgement']),
    toResolve: between(firstAlert, resolved, 'still firing when exported', ['alert', 'resolution']),
    attempts: {
      sent: mine.filter((n) => n.outcome === 'sent').length,
      failed: mine.filter((n) => n.outcome === 'failed').length,
      suppressed: mine.filter((n) => n.outcome === 'suppressed').length,
      retried: mine.filter((n) => n.retry_in_ms !== undefined).length,
    },
    bands,
  };
}
