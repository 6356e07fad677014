import type { GpuMetrics, JobAttribution } from '@gpualert/schema';
import type { ProcessAttributor } from './process-attribution.ts';

/** `--query-compute-apps=gpu_uuid,pid` output (with or without a header) → pids per GPU UUID, in nvidia-smi's order. */
export function computeAppPids(text: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const line of text.split('\n')) {
    const [uuid, pid] = line.split(',').map((c) => c.trim());
    const n = Number(pid);
    if (!uuid?.startsWith('GPU-') || !Number.isSafeInteger(n) || n <= 0) continue;
    const list = out.get(uuid);
    if (list) list.push(n);
    else out.set(uuid, [n]);
  }
  return out;
}

/**
 * Each GPU with the job of its first compute process that can be attributed (a GPU shared by
 * jobs names the first; the process count says it is shared). A pod-resources dump that names
 * the GPU fills namespace, pod and container where the cgroup did not.
 */
export async function attributeGpus(
  gpus: readonly GpuMetrics[],
  pids: ReadonlyMap<string, readonly number[]>,
  attributor: ProcessAttributor,
): Promise<GpuMetrics[]> {
  const all = [...new Set([...pids.values()].flat())];
  const byPid = await attributor.attribute(all);
  const out: GpuMetrics[] = [];
  for (const gpu of gpus) {
    const mine = gpu.uuid ? (pids.get(gpu.uuid) ?? []) : [];
    let job: JobAttribution | undefined;
    for (const pid of mine) {
      job = byPid.get(pid);
      if (job) break;
    }
    const holder = gpu.uuid ? await attributor.podOfGpu(gpu.uuid) : undefined;
    if (holder) job = { namespace: holder.namespace, pod: holder.pod, container: holder.container, ...job };
    out.push(job ? { ...gpu, job } : gpu);
  }
  return out;
}
