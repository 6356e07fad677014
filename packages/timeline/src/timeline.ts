import type { Envelope, EnvelopeOf } from '@gpualert/schema';
import { gpuKey, inIncident, type IncidentScope } from './incident-scope.ts';
import { postmortem } from './postmortem.ts';
import { SUMMARISED, type AcknowledgementRecord, type MinuteSummary, type NotificationAttempt, type Timeline, type TimelineEntry } from './timeline-types.ts';

export {
  SUMMARISED,
  type AcknowledgementRecord,
  type MinuteSummary,
  type NotificationAttempt,
  type SummarisedMetric,
  type Timeline,
  type TimelineEntry,
} from './timeline-types.ts';

export interface TimelineQuery {
  readonly from: number;
  readonly to: number;
  readonly host?: string;
  readonly gpu?: number;
  /** Narrow to one job: its events, and what happened on its hosts' GPUs (see `jobScope`). */
  readonly job?: string;
  /** Narrow to one incident's story (`inIncident`). */
  readonly incident?: IncidentScope;
  /**
   * Notifications and acknowledgements are kept up to this time rather than `to`: the notifier may
   * date them by another clock (a recording replayed) or long after (retries, a person's ack).
   */
  readonly recordsTo?: number;
}

/**
 * Where a job ran, per the envelopes: the GPUs its events name and the GPUs samples attribute to
 * it, and the hosts of either. On a host where neither names a GPU (a log that says only its
 * rank), every GPU of the host counts as the job's.
 */
export interface JobScope {
  readonly hosts: ReadonlySet<string>;
  /** `host\u0000gpu` for each GPU; a host in `wholeHosts` counts every GPU of it. */
  readonly gpus: ReadonlySet<string>;
  readonly wholeHosts: ReadonlySet<string>;
}

export function jobScope(envelopes: Iterable<Envelope>, job: string): JobScope {
  const hosts = new Set<string>();
  const gpus = new Set<string>();
  const gpuless = new Set<string>();
  const known = new Set<string>();
  for (const e of envelopes) {
    if (e.type === 'job.event' && e.data.job === job) {
      hosts.add(e.host);
      if (e.data.gpu !== undefined) {
        gpus.add(`${e.host}\u0000${e.data.gpu}`);
        known.add(e.host);
      } else {
        gpuless.add(e.host);
      }
    } else if (e.type === 'gpu.sample') {
      for (const g of e.data.gpus) {
        if (g.job?.job === job || g.job?.pod === job) {
          hosts.add(e.host);
          known.add(e.host);
          gpus.add(`${e.host}\u0000${g.index}`);
        }
      }
    }
  }
  return { hosts, gpus, wholeHosts: new Set([...gpuless].filter((h) => !known.has(h))) };
}

/** Whether an envelope belongs in a job's timeline: its own events, and kernel events, alerts and samples on its GPUs (host-wide ones on its hosts). */
function inJob(e: Envelope, job: string, scope: JobScope): boolean {
  if (e.type === 'job.event') return e.data.job === job;
  if (!scope.hosts.has(e.host)) return false;
  const onGpu = (gpu: number | undefined) => gpu === undefined || scope.wholeHosts.has(e.host) || scope.gpus.has(`${e.host}\u0000${gpu}`);
  switch (e.type) {
    case 'alert':
      return onGpu(e.data.gpu?.index);
    case 'kernel.event':
      return onGpu(e.data.gpu);
    case 'gpu.sample':
      return true; // its GPUs are filtered one by one below
    case 'provider.event':
      return true;
    default:
      return false;
  }
}

/**
 * Merges what every topic said in a range into one list ordered by event time, and summarises
 * the GPU samples per minute instead of dumping them. Pure: the caller reads the topics.
 */
export function buildTimeline(input: Iterable<Envelope>, query: TimelineQuery, incident?: EnvelopeOf<'alert'>): Timeline {
  const entries: TimelineEntry[] = [];
  const notifications: NotificationAttempt[] = [];
  const acknowledgements: AcknowledgementRecord[] = [];
  const envelopes = Array.isArray(input) ? (input as readonly Envelope[]) : [...input];
  const scope = query.job === undefined ? undefined : jobScope(envelopes, query.job);
  const pci = pciIndex(envelopes);
  const pciGpu = (host: string, bus: string) => pci.get(`${host}\u0000${bus}`);
  const told = query.incident ? toldFingerprints(envelopes, query.incident, pciGpu) : undefined;
  const recordsTo = Math.max(query.to, query.recordsTo ?? query.to);
  // Per host and minute, per GPU: [min, max, sum, n] for each summarised metric. One map access
  // per sample rather than one per GPU and metric: a day of a fleet is millions of values.
  const minutes = new Map<string, { host: string; minute: number; gpus: Map<number, Float64Array> }>();
  const seen = new Set<string>();
  const lastSample = new Map<string, string>();
  for (const e of envelopes) {
    const at = Date.parse(e.ts);
    const record = e.type === 'notification' || e.type === 'acknowledgement';
    if (at < query.from || at > (record ? recordsTo : query.to) || seen.has(e.id)) continue;
    if (query.host && e.host !== query.host && !(record && told)) continue;
    if (scope && query.job !== undefined && !inJob(e, query.job, scope)) continue;
    if (query.incident && told && !inIncident(e, query.incident, told, pciGpu)) continue;
    seen.add(e.id); // a message delivered twice is told once
    const entry = toEntry(e, query.gpu, query.job !== undefined, pciGpu);
    if (entry) entries.push(entry);
    if (e.type === 'notification') notifications.push({ ...e.data, ts: e.ts, host: e.host, id: e.id });
    if (e.type === 'acknowledgement') acknowledgements.push({ ...e.data, ts: e.ts, id: e.id });
    if (e.type !== 'gpu.sample') continue;
    if (!(e.ts <= (lastSample.get(e.host) ?? ''))) lastSample.set(e.host, e.ts);
    const minute = Math.floor(at / 60_000);
    const key = `${e.host}|${minute}`;
    let bucket = minutes.get(key);
    if (!bucket) minutes.set(key, (bucket = { host: e.host, minute, gpus: new Map() }));
    for (const gpu of e.data.gpus) {
      if (query.gpu !== undefined && gpu.index !== query.gpu) continue;
      if (scope && !scope.wholeHosts.has(e.host) && !scope.gpus.has(`${e.host}\u0000${gpu.index}`)) continue;
      if (query.incident && !query.incident.wholeHosts.has(e.host) && !query.incident.gpus.has(gpuKey(e.host, gpu.index))) continue;
      let acc = bucket.gpus.get(gpu.index);
      if (!acc) {
        acc = new Float64Array(SUMMARISED.length * 4);
        for (let m = 0; m < SUMMARISED.length; m += 1) {
          acc[m * 4] = Infinity;
          acc[m * 4 + 1] = -Infinity;
        }
        bucket.gpus.set(gpu.index, acc);
      }
      for (let m = 0; m < SUMMARISED.length; m += 1) {
        const metric = SUMMARISED[m];
        const value = metric === undefined ? undefined : gpu[metric];
        if (typeof value !== 'number') continue;
        const o = m * 4;
        if (value < (acc[o] ?? Infinity)) acc[o] = value;
        if (value > (acc[o + 1] ?? -Infinity)) acc[o + 1] = value;
        acc[o + 2] = (acc[o + 2] ?? 0) + value;
        acc[o + 3] = (acc[o + 3] ?? 0) + 1;
      }
    }
  }
  entries.sort((a, b) => a.ts.localeCompare(b.ts) || a.source.localeCompare(b.source) || a.id.localeCompare(b.id));
  const metrics: MinuteSummary[] = [];
  for (const { host, minute, gpus } of minutes.values()) {
    const iso = new Date(minute * 60_000).toISOString();
    for (const [gpu, acc] of gpus) {
      SUMMARISED.forEach((metric, m) => {
        const n = acc[m * 4 + 3] ?? 0;
        if (n === 0) return;
        metrics.push({
          minute: iso,
          host,
          gpu,
          metric,
          min: acc[m * 4] ?? 0,
          max: acc[m * 4 + 1] ?? 0,
          mean: Math.round(((acc[m * 4 + 2] ?? 0) / n) * 100) / 100,
          samples: n,
        });
      });
    }
  }
  metrics.sort(
    (a, b) =>
      (a.host < b.host ? -1 : a.host > b.host ? 1 : 0) ||
      a.gpu - b.gpu ||
      (a.metric < b.metric ? -1 : a.metric > b.metric ? 1 : 0) ||
      (a.minute < b.minute ? -1 : a.minute > b.minute ? 1 : 0),
  );
  const byTime = <T extends { ts: string; id: string }>(a: T, b: T) => (a.ts < b.ts ? -1 : a.ts > b.ts ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  notifications.sort(byTime);
  acknowledgements.sort(byTime);
  const timeline: Timeline = {
    from: new Date(query.from).toISOString(),
    to: new Date(query.to).toISOString(),
    entries,
    metrics,
    notifications,
    acknowledgements,
    samplesUntil: [...lastSample].map(([host, ts]) => ({ host, ts })).sort((a, b) => (a.host < b.host ? -1 : a.host > b.host ? 1 : 0)),
    ...(query.host ? { host: query.host } : {}),
    ...(query.job !== undefined ? { job: query.job } : {}),
  };
  if (!incident) return timeline;
  const d = incident.data;
  const s = query.incident;
  const gpus = s
    ? [...s.gpus].map((k) => {
        const [host = '', gpu = '0'] = k.split('\u0000');
        return { host, gpu: Number(gpu) };
      })
    : [];
  const own = d.gpu ? gpuKey(incident.host, d.gpu.index) : undefined;
  gpus.sort(
    (a, b) => Number(gpuKey(b.host, b.gpu) === own) - Number(gpuKey(a.host, a.gpu) === own) || (a.host < b.host ? -1 : a.host > b.host ? 1 : a.gpu - b.gpu),
  );
  const withIncident: Timeline = {
    ...timeline,
    incident: {
      fingerprint: d.fingerprint,
      summary: d.summary,
      severity: d.severity,
      host: incident.host,
      startsAt: d.starts_at,
      ...(d.gpu ? { gpu: d.gpu.index } : {}),
      ...(d.ends_at ? { endsAt: d.ends_at } : {}),
      ...(s ? { fingerprints: [...s.fingerprints].sort(), gpus, hosts: [...s.hosts].sort() } : {}),
    },
  };
  return s ? { ...withIncident, postmortem: postmortem(withIncident, s) } : withIncident;
}

/** `host\u0000pci_bus` → the GPU's index, from the inventories read: a kernel line that names only its PCI address still lands on its GPU. */
function pciIndex(envelopes: readonly Envelope[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of envelopes) {
    if (e.type !== 'host.inventory') continue;
    for (const g of e.data.gpus) out.set(`${e.host}\u0000${g.pci_bus}`, g.index);
  }
  return out;
}

/** The fingerprints whose notifications belong to an incident: its own alerts' and those of the other alerts its story keeps. */
function toldFingerprints(envelopes: readonly Envelope[], scope: IncidentScope, pciGpu: (host: string, pci: string) => number | undefined): Set<string> {
  const told = new Set(scope.fingerprints);
  for (const e of envelopes) if (e.type === 'alert' && inIncident(e, scope, told, pciGpu)) told.add(e.data.fingerprint);
  return told;
}

/** How a job event reads in a timeline. Progress (`step`) is told only in a job's own timeline: a fleet's would drown in it. */
function jobEntry(e: EnvelopeOf<'job.event'>, gpuFilter: number | undefined, steps: boolean): TimelineEntry | undefined {
  const d = e.data;
  if (d.kind === 'step' && !steps) return undefined;
  if (gpuFilter !== undefined && d.gpu !== undefined && d.gpu !== gpuFilter) return undefined;
  const who = `job ${d.job}${d.rank !== undefined ? ` rank ${d.rank}` : ''}`;
  const at = d.step !== undefined ? ` at step ${d.step}` : '';
  const title =
    d.kind === 'checkpoint'
      ? `${who}: checkpoint ${d.checkpoint === 'failed' ? 'FAILED' : 'saved'}${at}`
      : d.kind === 'step'
        ? `${who}: step${d.step !== undefined ? ` ${d.step}` : ''}${d.step_time_ms !== undefined ? ` (${d.step_time_ms} ms/step)` : ''}`
        : d.kind === 'exit'
          ? `${who}: exited${d.exit_code !== undefined ? ` with status ${d.exit_code}` : ''}`
          : `${who}: ${d.kind.replace('_', ' ')}${at}`;
  const severity =
    d.kind === 'step' || (d.kind === 'checkpoint' && d.checkpoint === 'ok')
      ? 'info'
      : d.kind === 'restart' || d.kind === 'checkpoint' || (d.kind === 'exit' && d.exit_code === 0)
        ? 'warning'
        : 'error';
  return {
    ts: e.ts,
    host: e.host,
    id: e.id,
    source: 'job',
    severity,
    title,
    ...(d.message !== '' ? { detail: d.message } : {}),
    ...(d.gpu !== undefined ? { gpu: d.gpu } : {}),
  };
}

function toEntry(
  e: Envelope,
  gpuFilter: number | undefined,
  steps = false,
  pciGpu?: (host: string, pci: string) => number | undefined,
): TimelineEntry | undefined {
  const base = { ts: e.ts, host: e.host, id: e.id };
  switch (e.type) {
    case 'kernel.event': {
      const d = e.data;
      const gpu = d.gpu ?? (d.pci_bus ? pciGpu?.(e.host, d.pci_bus) : undefined);
      if (gpuFilter !== undefined && gpu !== undefined && gpu !== gpuFilter) return undefined;
      const what = d.kind === 'xid' ? `Xid ${d.xid}${d.meaning ? `: ${d.meaning}` : ''}` : d.kind === 'sxid' ? `SXid ${d.xid}` : (d.meaning ?? d.kind);
      return {
        ...base,
        source: 'kernel',
        severity: d.severity,
        title: `${what}${(d.count ?? 1) > 1 ? ` (×${d.count})` : ''}`,
        detail: d.message,
        ...(gpu !== undefined ? { gpu } : {}),
      };
    }
    case 'acknowledgement': {
      const d = e.data;
      const pager = d.pager === 'pagerduty' ? 'PagerDuty' : 'Opsgenie';
      return {
        ...base,
        source: 'acknowledgement',
        fingerprint: d.fingerprint,
        title: `${d.action} in ${pager}${d.by ? ` by ${d.by}` : ''}`,
        detail: `alert ${d.fingerprint}, ${pager} ${d.pager_incident}${d.title ? `: ${d.title}` : ''}`,
      };
    }
    case 'action': {
      // What the remediator decided for the node: proposed, waiting for a person, a dry run, refused by the breaker, skipped.
      const d = e.data;
      if (gpuFilter !== undefined && d.gpu !== undefined && d.gpu !== gpuFilter) return undefined;
      const phase = d.breaker_closed === true ? 'breaker closed' : d.breaker_tripped === true ? 'refused (breaker tripped)' : d.phase.replaceAll('_', ' ');
      return { ...base, source: 'action', title: `${d.kind} ${phase} (${d.action_id})`, detail: d.reason, ...(d.gpu !== undefined ? { gpu: d.gpu } : {}) };
    }
    case 'action.approval':
      return {
        ...base,
        source: 'action',
        title: `${e.data.action_id} ${e.data.decision} by ${e.data.by}`,
        ...(e.data.comment ? { detail: e.data.comment } : {}),
      };
    case 'action.result': {
      const d = e.data;
      return {
        ...base,
        source: 'action',
        ...(d.outcome === 'failed' ? { severity: 'error' as const } : {}),
        title: `${d.kind} ${d.outcome.replaceAll('_', ' ')} on ${d.executor} (${d.action_id}, attempt ${d.attempt})`,
        ...(d.error ? { detail: d.error } : {}),
      };
    }
    case 'provider.event': {
      const d = e.data;
      return {
        ...base,
        source: 'provider',
        title: `${d.provider} ${d.kind} ${d.status}`,
        detail: `${d.description}${d.window_start ? ` (window ${d.window_start}${d.window_end ? ` – ${d.window_end}` : ''})` : ''}`,
      };
    }
    case 'alert': {
      const d = e.data;
      if (gpuFilter !== undefined && d.gpu !== undefined && d.gpu.index !== gpuFilter) return undefined;
      const flags = [d.expected ? 'expected (maintenance)' : '', d.incident ? `incident ${d.incident}` : ''].filter(Boolean).join(', ');
      return {
        ...base,
        source: 'alert',
        severity: d.severity,
        fingerprint: d.fingerprint,
        title: `${d.status === 'firing' ? 'FIRING' : 'RESOLVED'} ${d.severity}: ${d.summary}`,
        detail: `rule ${d.rule}, fingerprint ${d.fingerprint}${flags ? `, ${flags}` : ''}${d.evidence.length > 0 ? `, evidence ${d.evidence.slice(0, 5).join(' ')}` : ''}`,
        ...(d.gpu ? { gpu: d.gpu.index } : {}),
      };
    }
    case 'notification': {
      const d = e.data;
      return {
        ...base,
        source: 'notification',
        ...(d.outcome === 'failed' ? { severity: 'error' as const } : {}),
        title: `${d.outcome} → ${d.receiver} (${d.channel}): ${d.reason}`,
        detail: `attempt ${d.attempt}${d.retry_in_ms !== undefined ? `, retried in ${Math.round(d.retry_in_ms / 1000)} s` : d.outcome === 'failed' && d.notification_id !== undefined ? ', the last attempt' : ''}${d.fingerprints.length > 0 ? `, alerts ${d.fingerprints.join(' ')}` : ''}${d.error ? `, error: ${d.error}` : ''}`,
      };
    }
    case 'host.inventory':
      return {
        ...base,
        source: 'inventory',
        title: `inventory: ${e.data.gpu_count}× ${e.data.gpu_model}, driver ${e.data.driver_version}, CUDA ${e.data.cuda_version}`,
      };
    case 'job.event':
      return jobEntry(e, gpuFilter, steps);
    case 'gpu.sample':
      return e.data.error
        ? { ...base, source: 'collector', severity: 'error', title: `GPU collector: ${e.data.error.code}`, detail: e.data.error.message }
        : undefined;
    default:
      return undefined;
  }
}
