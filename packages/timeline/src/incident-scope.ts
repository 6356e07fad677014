import type { Envelope, EnvelopeOf } from '@gpualert/schema';

/** How far around an incident its export reads: its signals' lead-in before, the aftermath after. */
export const INCIDENT_MARGIN_MS = 30 * 60_000;

/**
 * One incident as the engine grouped it: the alert whose fingerprint names it (the root) and every
 * alert that carries it as `incident` (the same host's GPU alerts within minutes, a cooling fault's
 * GPUs), with the hosts and GPUs they are about.
 */
export interface IncidentScope {
  /** The root alert's fingerprint: what `incident` on its members says. */
  readonly root: string;
  readonly fingerprints: ReadonlySet<string>;
  readonly hosts: ReadonlySet<string>;
  /** `host\u0000gpu` of each GPU an alert of the incident names. */
  readonly gpus: ReadonlySet<string>;
  /** Hosts the incident names no GPU of (a host down, a fan): every GPU of them is in the story. */
  readonly wholeHosts: ReadonlySet<string>;
  /** The latest word on each member, by fingerprint (the facts block reads it). */
  readonly alerts: readonly EnvelopeOf<'alert'>[];
  readonly firstAlertAt: number;
  /** When the last member resolved; undefined while any still fires. */
  readonly resolvedAt?: number;
}

export const gpuKey = (host: string, gpu: number): string => `${host}\u0000${gpu}`;

/**
 * The incident an id names: the id may be the root's fingerprint or any member's (a member's
 * `incident` leads to its root). Undefined when no alert in `alerts` has that fingerprint.
 */
export function resolveIncident(alerts: readonly EnvelopeOf<'alert'>[], id: string): IncidentScope | undefined {
  const named = alerts.find((a) => a.data.fingerprint === id);
  if (!named) return undefined;
  const root = named.data.incident ?? id;
  const mine = alerts.filter((a) => a.data.fingerprint === root || a.data.incident === root || a.data.fingerprint === id);
  const fingerprints = new Set(mine.map((a) => a.data.fingerprint));
  const latest = new Map<string, EnvelopeOf<'alert'>>();
  for (const a of [...mine].sort((x, y) => (x.ts < y.ts ? -1 : x.ts > y.ts ? 1 : 0))) latest.set(a.data.fingerprint, a);
  const hosts = new Set(mine.map((a) => a.host));
  const gpus = new Set(mine.flatMap((a) => (a.data.gpu ? [gpuKey(a.host, a.data.gpu.index)] : [])));
  const hostsWithGpuAlerts = new Set(mine.flatMap((a) => (a.data.gpu ? [a.host] : [])));
  const wholeHosts = new Set([...hosts].filter((h) => !hostsWithGpuAlerts.has(h)));
  // Loops, not spreads: an incident of 200,000 alerts would overflow the call stack as arguments.
  const firstAlertAt = least(mine.map((a) => Date.parse(a.data.starts_at)));
  const last = [...latest.values()];
  const resolvedAt = last.every((a) => a.data.status === 'resolved') ? most(last.map((a) => Date.parse(a.data.ends_at ?? a.ts))) : undefined;
  return { root, fingerprints, hosts, gpus, wholeHosts, alerts: last, firstAlertAt, ...(resolvedAt !== undefined ? { resolvedAt } : {}) };
}

/** The range an incident's export reads: from its margin before the first alert to its margin after it resolved (or after its latest word). */
export function incidentRange(scope: IncidentScope): { from: number; to: number } {
  const latest = most(scope.alerts.map((a) => Date.parse(a.ts)));
  return { from: scope.firstAlertAt - INCIDENT_MARGIN_MS, to: Math.max(scope.resolvedAt ?? latest, latest) + INCIDENT_MARGIN_MS };
}

/**
 * What belongs to an incident's story. Alerts: its own, and any other on its GPUs or about its
 * hosts as a whole. Signals (kernel events, samples, provider notices, inventories, job events,
 * actions): on its hosts, GPU-level ones on its GPUs only (`pciGpu` names the GPU of a kernel event
 * that gives only its PCI address). Who was told: notifications and acknowledgements naming one
 * of `told` (the fingerprints of the alerts kept), and the silences made for its hosts.
 */
export function inIncident(e: Envelope, scope: IncidentScope, told: ReadonlySet<string>, pciGpu: (host: string, pci: string) => number | undefined): boolean {
  const onGpu = (gpu: number | undefined) => gpu === undefined || scope.wholeHosts.has(e.host) || scope.gpus.has(gpuKey(e.host, gpu));
  switch (e.type) {
    case 'notification':
      return (
        e.data.fingerprints.some((f) => told.has(f)) || (e.data.channel === 'silence' && [...scope.hosts].some((h) => e.data.reason.includes(`host="${h}"`)))
      );
    case 'acknowledgement':
      return told.has(e.data.fingerprint);
    case 'alert':
      return scope.fingerprints.has(e.data.fingerprint) || (scope.hosts.has(e.host) && onGpu(e.data.gpu?.index));
    default:
      break;
  }
  if (!scope.hosts.has(e.host)) return false;
  switch (e.type) {
    case 'kernel.event':
      return onGpu(e.data.gpu ?? (e.data.pci_bus ? pciGpu(e.host, e.data.pci_bus) : undefined));
    case 'job.event':
      return onGpu(e.data.gpu);
    case 'action':
      return onGpu(e.data.gpu);
    default:
      return true; // samples (their GPUs filtered one by one), notices, inventories, approvals, results
  }
}

/** The least of numbers (Infinity for none), in a loop: any count, no spread into arguments. */
function least(values: readonly number[]): number {
  let min = Infinity;
  for (const v of values) if (v < min) min = v;
  return min;
}

/** The greatest of numbers (-Infinity for none), in a loop. */
function most(values: readonly number[]): number {
  let max = -Infinity;
  for (const v of values) if (v > max) max = v;
  return max;
}
