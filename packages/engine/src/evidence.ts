import { newGpuState, type HostState } from './engine-state.ts';

/** Kernel events this recent on a GPU are evidence of what it shows now. */
export const EVIDENCE_WINDOW_MS = 5 * 60_000;
/** Evidence ids one alert keeps (as `Conditions.observe` does). */
const MAX_TRACKER_EVIDENCE = 20;
/** Recent kernel events one GPU keeps. */
const RECENT_PER_GPU = 10;

/** Ids of the kernel events seen on `gpu` within the evidence window. */
export function recentEvidence(host: HostState, gpu: number, at: number): string[] {
  const gs = host.gpus[gpu];
  return gs ? gs.recent.filter(([, t]) => at - t <= EVIDENCE_WINDOW_MS).map(([id]) => id) : [];
}

/** A sample's evidence plus the GPU's recent kernel events: made only for a breaching observation. */
export function withRecent(evidence: readonly string[], host: HostState, gpu: number, at: number): string[] {
  return [...evidence, ...recentEvidence(host, gpu, at)];
}

/** A kernel event on `gpu`: kept as recent, and attached to every alert firing on that GPU. */
export function noteKernelEvidence(host: HostState, gpu: number, id: string, at: number): void {
  const gs = (host.gpus[gpu] ??= newGpuState());
  gs.recent.push([id, at]);
  gs.recent = gs.recent.filter(([, t]) => at - t <= EVIDENCE_WINDOW_MS).slice(-RECENT_PER_GPU);
  for (const key in host.trackers) {
    const tracker = host.trackers[key];
    if (tracker === undefined || !tracker.firing || tracker.gpu !== gpu || tracker.evidence.includes(id)) continue;
    tracker.evidence.push(id);
    // The same bound as `Conditions.observe` keeps: the latest; a stream of events must not grow every alert on the GPU.
    if (tracker.evidence.length > MAX_TRACKER_EVIDENCE) tracker.evidence.splice(0, tracker.evidence.length - MAX_TRACKER_EVIDENCE);
  }
}
