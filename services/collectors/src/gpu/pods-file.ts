import { z } from 'zod';

/** What a pods file says: pods by UID, containers by id, and which pod holds which GPU (pod-resources). */
export interface PodIndex {
  readonly byUid: ReadonlyMap<string, { readonly namespace: string; readonly pod: string }>;
  readonly containerNames: ReadonlyMap<string, string>;
  readonly byGpu: ReadonlyMap<string, { readonly namespace: string; readonly pod: string; readonly container: string }>;
}

/** A node holds at most a few hundred pods (kubelet's default max-pods is 110). */
export const MAX_PODS = 1_000;
/** The largest pods file read: the kubelet's /pods for 110 pods is a few MiB. */
export const MAX_PODS_FILE_BYTES = 32 * 1024 * 1024;

const name = z.string().min(1).max(253);
const KubeletPods = z.object({
  items: z
    .array(
      z.object({
        metadata: z.object({ name, namespace: name, uid: name }),
        status: z
          .object({
            containerStatuses: z
              .array(z.object({ name, containerID: z.string().max(300).optional() }))
              .max(100)
              .optional(),
          })
          .optional(),
      }),
    )
    .max(MAX_PODS),
});
const device = z.object({
  resource_name: z.string().optional(),
  resourceName: z.string().optional(),
  device_ids: z.array(z.string()).max(64).optional(),
  deviceIds: z.array(z.string()).max(64).optional(),
});
const PodResources = z.object({
  pod_resources: z
    .array(z.object({ name, namespace: name, containers: z.array(z.object({ name, devices: z.array(device).max(64).optional() })).max(100) }))
    .max(MAX_PODS)
    .optional(),
  podResources: z
    .array(z.object({ name, namespace: name, containers: z.array(z.object({ name, devices: z.array(device).max(64).optional() })).max(100) }))
    .max(MAX_PODS)
    .optional(),
});

/**
 * Reads a pods file: the kubelet's `/pods` (a PodList: each pod's UID, name, namespace and its
 * containers' ids) or a pod-resources `List` dump as JSON (which pod and container hold which
 * device ids; NVIDIA's device plugin uses GPU UUIDs). The answer, or why it is not one.
 */
export function parsePodsFile(text: string): PodIndex | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    // What operators save instead: `kubectl get pods` tables name no pod UID, which is what a cgroup path holds.
    if (/^\s*(?:NAMESPACE\s+)?NAME\s+READY\s+STATUS\b/m.test(text))
      return "a `kubectl get pods` table names no pod UIDs: save `kubectl get pods -o json` (or the kubelet's /pods) instead";
    if (/^(?:apiVersion|kind|items|metadata):/m.test(text)) return 'YAML: save the pods as JSON (`kubectl get pods -o json`)';
    return `not JSON: ${error instanceof Error ? error.message : String(error)}`;
  }
  const byUid = new Map<string, { namespace: string; pod: string }>();
  const containerNames = new Map<string, string>();
  const byGpu = new Map<string, { namespace: string; pod: string; container: string }>();
  const kubelet = KubeletPods.safeParse(json);
  if (kubelet.success) {
    for (const item of kubelet.data.items) {
      byUid.set(item.metadata.uid, { namespace: item.metadata.namespace, pod: item.metadata.name });
      for (const c of item.status?.containerStatuses ?? []) {
        const id = c.containerID?.replace(/^[a-z-]+:\/\//, '');
        if (id) containerNames.set(id, c.name);
      }
    }
    return { byUid, containerNames, byGpu };
  }
  const resources = PodResources.safeParse(json);
  const pods = resources.success ? (resources.data.pod_resources ?? resources.data.podResources) : undefined;
  if (!pods) return 'neither a kubelet /pods PodList (items[].metadata) nor a pod-resources List (pod_resources[])';
  for (const p of pods) {
    for (const c of p.containers) {
      for (const d of c.devices ?? []) {
        for (const id of d.device_ids ?? d.deviceIds ?? []) byGpu.set(id, { namespace: p.namespace, pod: p.name, container: c.name });
      }
    }
  }
  return { byUid, containerNames, byGpu };
}
