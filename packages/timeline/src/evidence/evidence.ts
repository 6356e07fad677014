import { canonicalPciBus, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { buildTimeline, type Timeline, type TimelineQuery } from '../timeline.ts';

/** The most of each part an archive holds; a bound that cut something is said in its README. */
export const EVIDENCE_BOUNDS = {
  /** Xid, ECC and row-remap events and ECC counter changes (xid-ecc-history.jsonl): the newest. */
  faults: 10_000,
  /** BMC log entries (bmc-sel.jsonl): the newest. */
  selEntries: 10_000,
  /** Action envelopes (actions.jsonl): the newest. */
  actions: 10_000,
  /** Inventories of the host kept to name its identity and its changes: the newest. */
  inventories: 64,
  /** The timeline's lines and per-minute metric rows: the newest. */
  timelineEntries: 20_000,
  timelineMetrics: 100_000,
  /** The host's envelopes read from one topic in the window: the newest. */
  envelopesPerTopic: 250_000,
} as const;

/** `--gpu`: an index, or a UUID as nvidia-smi prints it. */
export type GpuSelector = { readonly index: number } | { readonly uuid: string };

export interface EvidenceQuery {
  readonly host: string;
  readonly from: number;
  readonly to: number;
  readonly gpu?: GpuSelector;
}

/** What was read for the host: its inventories up to the window's end, and its envelopes in the window. */
export interface HostRecord {
  /** Oldest first; the newest `EVIDENCE_BOUNDS.inventories`. */
  readonly inventories: readonly EnvelopeOf<'host.inventory'>[];
  /** Every other envelope of the host in the window, in the order read. */
  readonly envelopes: readonly Envelope[];
  /** Per topic, envelopes of the host the read bound left out (the oldest), and inventories left out. */
  readonly dropped: ReadonlyMap<string, number>;
  /** Topics the deployment does not have (read as empty). */
  readonly missing: readonly string[];
}

export interface GpuIdentity {
  readonly index: number;
  readonly uuid: string | null;
  readonly serial: string | null;
  readonly pci_bus: string | null;
  readonly name: string | null;
  /** Where the row came from: the inventory, or (no inventory names the GPU) its last sample. */
  readonly source: 'host.inventory' | 'gpu.sample';
}

export interface Identity {
  readonly host: string;
  readonly inventory_at: string | null;
  readonly gpu_model: string | null;
  readonly driver_version: string | null;
  readonly cuda_version: string | null;
  /** The inventory's VBIOS: nvidia-smi's vbios_version of the first GPU that reports one (per-GPU versions are not collected). */
  readonly vbios: string | null;
  readonly kernel: string | null;
  readonly provider: string | null;
  readonly instance_id: string | null;
  readonly instance_type: string | null;
  readonly gpus: readonly GpuIdentity[];
  /** Each inventory the host published in the window (a driver or VBIOS change shows here). */
  readonly inventory_changes: readonly { ts: string; gpu_count: number; driver_version: string; vbios: string | null; gpu_model: string }[];
}

export interface FaultLine {
  readonly ts: string;
  readonly source: 'kernel' | 'gpu.sample';
  readonly kind: string;
  readonly gpu: number | null;
  readonly [field: string]: unknown;
}

export interface RemapRow {
  readonly gpu: number;
  readonly uuid: string | null;
  readonly last_sample_at: string | null;
  readonly remap_pending: boolean | null;
  readonly remap_failure: boolean | null;
  readonly pending_seen: { first: string; last: string } | null;
  readonly failure_seen: { first: string; last: string } | null;
  readonly row_remap_events: number;
}

/** Everything an archive says, before it is written out. */
export interface Evidence {
  readonly query: EvidenceQuery;
  /** The GPU `--gpu` named, as an index; undefined for the whole host. */
  readonly gpu: number | undefined;
  readonly identity: Identity;
  readonly faults: readonly FaultLine[];
  readonly remaps: readonly RemapRow[];
  readonly sel: readonly Record<string, unknown>[];
  readonly actions: readonly Envelope[];
  readonly timeline: Timeline;
  /** The provider the inventory names (else the host's provider events), or undefined. */
  readonly provider: string | undefined;
  /** One line per bound that cut something. */
  readonly truncated: readonly string[];
  /** Topics the deployment does not have (read as empty). */
  readonly missing: readonly string[];
}

const FAULT_KINDS: ReadonlySet<string> = new Set(['xid', 'sxid', 'ecc', 'row_remap', 'fallen_off_bus']);
const ECC_COUNTERS = ['ecc_sbe_volatile', 'ecc_dbe_volatile', 'ecc_sbe_aggregate', 'ecc_dbe_aggregate'] as const;

/** The newest `max` of a list in time order, and how many older ones went. */
function newest<T>(list: readonly T[], max: number): { kept: T[]; cut: number } {
  return list.length <= max ? { kept: [...list], cut: 0 } : { kept: list.slice(list.length - max), cut: list.length - max };
}

function inWindow(ts: string, query: EvidenceQuery): boolean {
  const at = Date.parse(ts);
  return at >= query.from && at <= query.to;
}

/** The GPU `--gpu` names, as an index; a message when the host has no such GPU. */
export function resolveGpu(selector: GpuSelector | undefined, gpus: readonly GpuIdentity[]): { index: number | undefined } | { problem: string } {
  if (selector === undefined) return { index: undefined };
  if ('uuid' in selector) {
    const wanted = selector.uuid.toLowerCase();
    const found = gpus.find((g) => g.uuid?.toLowerCase() === wanted);
    return found ? { index: found.index } : { problem: `no GPU with UUID ${selector.uuid} in the host's inventory or samples` };
  }
  if (gpus.length > 0 && !gpus.some((g) => g.index === selector.index)) {
    return { problem: `no GPU ${selector.index} in the host's inventory or samples (it has ${gpus.map((g) => g.index).join(', ')})` };
  }
  return { index: selector.index };
}

function identityOf(host: string, record: HostRecord, query: EvidenceQuery): Identity {
  const inventory = record.inventories.at(-1);
  const d = inventory?.data;
  const rows = new Map<number, GpuIdentity>();
  for (const g of d?.gpus ?? []) {
    rows.set(g.index, { index: g.index, uuid: g.uuid, serial: g.serial ?? null, pci_bus: g.pci_bus, name: g.name, source: 'host.inventory' });
  }
  // GPUs no inventory names (none published, or a GPU that came later): their last sample's facts.
  for (const e of record.envelopes) {
    if (e.type !== 'gpu.sample') continue;
    for (const g of e.data.gpus) {
      const known = rows.get(g.index);
      if (known?.source === 'host.inventory') continue;
      rows.set(g.index, {
        index: g.index,
        uuid: g.uuid ?? known?.uuid ?? null,
        serial: null,
        pci_bus: g.pci_bus ?? known?.pci_bus ?? null,
        name: g.name ?? known?.name ?? null,
        source: 'gpu.sample',
      });
    }
  }
  return {
    host,
    inventory_at: inventory?.ts ?? null,
    gpu_model: d?.gpu_model ?? null,
    driver_version: d?.driver_version ?? null,
    cuda_version: d?.cuda_version ?? null,
    vbios: d?.vbios ?? null,
    kernel: d?.kernel ?? null,
    provider: d?.provider ?? null,
    instance_id: d?.instance_id ?? null,
    instance_type: d?.instance_type ?? null,
    gpus: [...rows.values()].sort((a, b) => a.index - b.index),
    inventory_changes: record.inventories
      .filter((i) => inWindow(i.ts, query))
      .map((i) => ({ ts: i.ts, gpu_count: i.data.gpu_count, driver_version: i.data.driver_version, vbios: i.data.vbios ?? null, gpu_model: i.data.gpu_model })),
  };
}

/** Kernel fault events and each change of a GPU's ECC counters, in time order. */
function faultsOf(record: HostRecord, gpuOfBus: ReadonlyMap<string, number>, gpu: number | undefined): FaultLine[] {
  const out: FaultLine[] = [];
  const lastCounters = new Map<number, string>();
  for (const e of record.envelopes) {
    if (e.type === 'kernel.event' && FAULT_KINDS.has(e.data.kind)) {
      const d = e.data;
      const bus = d.pci_bus === undefined ? null : canonicalPciBus(d.pci_bus);
      const index = d.gpu ?? (bus === null ? undefined : gpuOfBus.get(bus));
      // An event that names no GPU stays in a narrowed archive: it may be this one.
      if (gpu !== undefined && index !== undefined && index !== gpu) continue;
      out.push({
        ts: e.ts,
        source: 'kernel',
        kind: d.kind,
        gpu: index ?? null,
        pci_bus: d.pci_bus ?? null,
        xid: d.xid ?? null,
        severity: d.severity,
        meaning: d.meaning ?? null,
        action: d.action ?? null,
        count: d.count ?? 1,
        message: d.message,
        envelope_id: e.id,
      });
    } else if (e.type === 'gpu.sample') {
      for (const g of e.data.gpus) {
        if (gpu !== undefined && g.index !== gpu) continue;
        if (ECC_COUNTERS.every((c) => g[c] === null)) continue;
        const counters = ECC_COUNTERS.map((c) => g[c]);
        const key = JSON.stringify(counters);
        const before = lastCounters.get(g.index);
        if (before === key) continue;
        lastCounters.set(g.index, key);
        out.push({
          ts: e.ts,
          source: 'gpu.sample',
          kind: before === undefined ? 'ecc_counters_first_read' : 'ecc_counters_changed',
          gpu: g.index,
          uuid: g.uuid,
          ...Object.fromEntries(ECC_COUNTERS.map((c) => [c, g[c]])),
          envelope_id: e.id,
        });
      }
    }
  }
  return out.sort((a, b) => a.ts.localeCompare(b.ts));
}

function remapsOf(record: HostRecord, identity: Identity, gpuOfBus: ReadonlyMap<string, number>, gpu: number | undefined): RemapRow[] {
  interface Acc {
    uuid: string | null;
    last: string | null;
    pending: boolean | null;
    failure: boolean | null;
    pendingSeen: { first: string; last: string } | null;
    failureSeen: { first: string; last: string } | null;
    events: number;
  }
  const rows = new Map<number, Acc>();
  const row = (index: number): Acc => {
    let acc = rows.get(index);
    if (!acc)
      rows.set(
        index,
        (acc = {
          uuid: identity.gpus.find((g) => g.index === index)?.uuid ?? null,
          last: null,
          pending: null,
          failure: null,
          pendingSeen: null,
          failureSeen: null,
          events: 0,
        }),
      );
    return acc;
  };
  const seen = (span: { first: string; last: string } | null, ts: string) => (span ? { first: span.first, last: ts } : { first: ts, last: ts });
  for (const e of record.envelopes) {
    if (e.type === 'gpu.sample') {
      for (const g of e.data.gpus) {
        if ((gpu !== undefined && g.index !== gpu) || (g.remap_pending === null && g.remap_failure === null)) continue;
        const acc = row(g.index);
        acc.uuid = g.uuid ?? acc.uuid;
        acc.last = e.ts;
        acc.pending = g.remap_pending;
        acc.failure = g.remap_failure;
        if (g.remap_pending === true) acc.pendingSeen = seen(acc.pendingSeen, e.ts);
        if (g.remap_failure === true) acc.failureSeen = seen(acc.failureSeen, e.ts);
      }
    } else if (e.type === 'kernel.event' && (e.data.kind === 'row_remap' || e.data.xid === 63 || e.data.xid === 64)) {
      const bus = e.data.pci_bus === undefined ? null : canonicalPciBus(e.data.pci_bus);
      const index = e.data.gpu ?? (bus === null ? undefined : gpuOfBus.get(bus));
      if (index === undefined || (gpu !== undefined && index !== gpu)) continue;
      row(index).events += e.data.count ?? 1;
    }
  }
  return [...rows.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, a]) => ({
      gpu: index,
      uuid: a.uuid,
      last_sample_at: a.last,
      remap_pending: a.pending,
      remap_failure: a.failure,
      pending_seen: a.pendingSeen,
      failure_seen: a.failureSeen,
      row_remap_events: a.events,
    }));
}

/** The remediator's actions for the host, narrowed to a GPU's and the host-wide ones, with their approvals and results. */
function actionsOf(record: HostRecord, gpu: number | undefined): Envelope[] {
  const kept = new Set<string>();
  const out: Envelope[] = [];
  for (const e of record.envelopes) {
    if (e.type === 'action') {
      if (gpu !== undefined && e.data.gpu !== undefined && e.data.gpu !== gpu) continue;
      kept.add(e.data.action_id);
      out.push(e);
    } else if ((e.type === 'action.approval' || e.type === 'action.result') && (gpu === undefined || kept.has(e.data.action_id))) {
      out.push(e);
    }
  }
  return out.sort((a, b) => a.ts.localeCompare(b.ts));
}

function selOf(record: HostRecord): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const e of record.envelopes) {
    if (e.type !== 'bmc.event') continue;
    const d = e.data;
    out.push({
      ts: e.ts,
      created: d.created ?? null,
      log: d.log,
      entry_id: d.entry_id,
      severity: d.severity,
      sensor: d.sensor ?? null,
      code: d.code ?? null,
      asserted: d.asserted ?? null,
      message: d.message,
      envelope_id: e.id,
    });
  }
  return out.sort((a, b) => String(a.ts).localeCompare(String(b.ts)));
}

/**
 * Everything the archive says about one host (and GPU), from what was read for it. Pure: the
 * caller reads the topics and writes the files. `problem` when `--gpu` names no GPU of the host.
 */
export function assembleEvidence(record: HostRecord, query: EvidenceQuery): { evidence: Evidence } | { problem: string } {
  const identity = identityOf(query.host, record, query);
  const resolved = resolveGpu(query.gpu, identity.gpus);
  if ('problem' in resolved) return { problem: resolved.problem };
  const gpu = resolved.index;
  const narrowed: Identity = gpu === undefined ? identity : { ...identity, gpus: identity.gpus.filter((g) => g.index === gpu) };
  const gpuOfBus = new Map<string, number>();
  for (const g of identity.gpus) if (g.pci_bus !== null) gpuOfBus.set(g.pci_bus, g.index);
  const truncated: string[] = [];
  for (const [topic, count] of record.dropped) {
    if (count > 0)
      truncated.push(
        `${topic}: the ${count} oldest envelopes of the host were left out (at most ${topic === 'gpualert.host.inventory' ? EVIDENCE_BOUNDS.inventories : EVIDENCE_BOUNDS.envelopesPerTopic} are read)`,
      );
  }
  const cut = <T>(list: readonly T[], max: number, what: string): T[] => {
    const { kept, cut: n } = newest(list, max);
    if (n > 0) truncated.push(`${what}: the newest ${max} of ${list.length} are kept`);
    return kept;
  };
  const timelineQuery: TimelineQuery = { from: query.from, to: query.to, host: query.host, ...(gpu !== undefined ? { gpu } : {}) };
  const full = buildTimeline([...record.inventories.filter((i) => inWindow(i.ts, query)), ...record.envelopes], timelineQuery);
  const timeline: Timeline = {
    ...full,
    entries: cut(full.entries, EVIDENCE_BOUNDS.timelineEntries, 'timeline lines'),
    metrics: cut(
      [...full.metrics].sort((a, b) => a.minute.localeCompare(b.minute)),
      EVIDENCE_BOUNDS.timelineMetrics,
      'timeline per-minute metric rows',
    ).sort((a, b) => a.gpu - b.gpu || a.metric.localeCompare(b.metric) || a.minute.localeCompare(b.minute)),
  };
  const providerEvent = [...record.envelopes].reverse().find((e): e is EnvelopeOf<'provider.event'> => e.type === 'provider.event');
  return {
    evidence: {
      query,
      gpu,
      identity: narrowed,
      faults: cut(faultsOf(record, gpuOfBus, gpu), EVIDENCE_BOUNDS.faults, 'Xid and ECC history lines'),
      remaps: remapsOf(record, identity, gpuOfBus, gpu),
      sel: cut(selOf(record), EVIDENCE_BOUNDS.selEntries, 'BMC SEL entries'),
      actions: cut(actionsOf(record, gpu), EVIDENCE_BOUNDS.actions, 'actions'),
      timeline,
      provider: identity.provider ?? providerEvent?.data.provider,
      truncated,
      missing: record.missing,
    },
  };
}
