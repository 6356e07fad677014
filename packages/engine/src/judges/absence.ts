import { busByIndex } from '../bus-by-index.ts';
import { fill, type Conditions } from '../conditions.ts';
import { newGpuState, type HostState } from '../engine-state.ts';
import { withRecent } from '../evidence.ts';
import type { Judge } from '../judge.ts';
import type { RuleOf } from '../rule-set.ts';
import { hostKey } from './keys.ts';

/**
 * `scope: host`: no sample for `intervals` of the host's own typical interval (judged as time
 * passes). `scope: gpu`: a GPU the host should have is missing from `intervals` samples, or the
 * collector says it was lost; a lost GPU stays lost until it reports again after a reset.
 */
export const absence: Judge<'absence'> = {
  tick(ctx, rule) {
    const { host, at } = ctx;
    if (rule.scope !== 'host' || host.lastSample === undefined) return;
    const silentFor = at - host.lastSample;
    ctx.conditions.observe(host, hostKey(rule.id), rule, undefined, at, {
      breaching: silentFor > rule.intervals * host.intervalMs,
      summary: fill(rule.summary, { host: host.host, detail: `${Math.round(silentFor / 1000)} s` }),
    });
  },
  afterGpus(ctx, rule) {
    if (rule.scope !== 'gpu') return;
    const { host, at, present } = ctx;
    const { gpus, error } = ctx.sample;
    const lost = error?.code === 'gpu_lost' && error.pci_bus ? host.inventory?.buses[error.pci_bus] : undefined;
    if (gpus.length === 0 && lost === undefined) return;
    const known = host.inventory?.indexes ?? Object.keys(host.gpus).map(Number);
    for (const index of known) {
      const gs = (host.gpus[index] ??= newGpuState());
      if (present.has(index) && index !== lost) {
        lostGpu(host, rule, ctx.conditions, index, at, false, '', ctx.evidence);
        continue;
      }
      gs.missing += 1;
      const breaching = index === lost || gs.missing >= rule.intervals;
      const detail = index === lost ? `nvidia-smi: ${error?.message ?? ''}` : `missing from the last ${gs.missing} samples`;
      if (breaching) lostGpu(host, rule, ctx.conditions, index, at, true, detail, ctx.evidence);
    }
  },
};

/** The tracker key of a lost GPU: by its bus, so an Xid 79 and the GPU missing from samples are one alert in any order. */
export function lostKey(gpu: number, bus: string | undefined): string {
  const id = bus ?? gpu;
  let key = LOST_KEYS.get(id);
  if (key === undefined) {
    if (LOST_KEYS.size >= MAX_CACHED_KEYS) LOST_KEYS.clear(); // made-up buses must not grow it
    LOST_KEYS.set(id, (key = `gpu-absent|${id}`));
  }
  return key;
}

/** Made once per bus (the same few per host model across a fleet), not once per GPU per sample. */
const LOST_KEYS = new Map<string | number, string>();
const MAX_CACHED_KEYS = 10_000;

function lostGpu(
  host: HostState,
  rule: RuleOf<'absence'>,
  conditions: Conditions,
  index: number,
  at: number,
  breaching: boolean,
  detail: string,
  evidence: readonly string[],
): void {
  const key = lostKey(index, busOf(host, index));
  const tracker = host.trackers[key];
  if (!breaching && !tracker) return; // present, and never lost: nothing to format or record
  // A lost GPU stays lost until it reports again after a reset or reboot (a sample with it).
  if (!breaching && tracker?.firing && tracker.latched) {
    if (host.inventory && host.inventory.at > (tracker.startsAt ?? 0)) conditions.resolve(host, key, tracker, at);
    return;
  }
  conditions.observe(
    host,
    key,
    rule,
    index,
    at,
    {
      breaching,
      summary: fill(rule.summary, { host: host.host, gpu: index, detail }),
      evidence: withRecent(evidence, host, index, at),
    },
    true,
  );
}

/** A GPU's PCI address, from the inventory or, before one arrives, from its samples. */
function busOf(host: HostState, index: number): string | undefined {
  return busByIndex(host.inventory?.buses, index) ?? busByIndex(host.buses, index);
}
