/** What a process's cgroup says about who runs it: a Slurm job, a Kubernetes pod and container. */
export interface CgroupOwner {
  readonly slurmJob?: string;
  readonly slurmUid?: number;
  readonly podUid?: string;
  readonly containerId?: string;
}

/** A pod UID as the API writes it (dashes); the systemd cgroup driver writes `_` for `-`. */
const POD = /(?:^|[/-])pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12}|[0-9a-f]{32})(?:\.slice)?(?=$|[/:])/;
/** A container: `cri-containerd-<id>.scope`, `crio-<id>.scope`, `docker-<id>.scope`, `…slice:cri-containerd:<id>`, or a bare 64-hex folder under the pod. */
const CONTAINER = /(?:(?:cri-containerd|crio|docker|containerd)[-:]([0-9a-f]{64})(?:\.scope)?|\/([0-9a-f]{64}))(?=$|\/)/;
/** Slurm: `/slurm/uid_1000/job_12345/step_0/…` (cgroup v1, `slurm_<node>` with multiple slurmd) or `/system.slice/slurmstepd.scope/job_12345/…` (v2). */
const SLURM_JOB = /\/(?:slurm(?:_[^/]+)?\/uid_(\d+)\/|slurmstepd\.scope\/)job_(\d+)(?=$|\/)/;

/** The longest `/proc/<pid>/cgroup` read: a v1 host lists a dozen hierarchies of a few hundred bytes. */
export const MAX_CGROUP_BYTES = 16 * 1024;

/**
 * Reads `/proc/<pid>/cgroup` in both layouts: v1 (`12:memory:/kubepods/…`, one line per
 * hierarchy) and v2 (`0::/kubepods.slice/…`). The first line that names an owner wins; a pod's
 * UID comes back with dashes whichever cgroup driver wrote it.
 */
export function cgroupOwner(text: string): CgroupOwner {
  let owner: { slurmJob?: string; slurmUid?: number; podUid?: string; containerId?: string } = {};
  for (const line of text.slice(0, MAX_CGROUP_BYTES).split('\n')) {
    const first = line.indexOf(':');
    const second = first === -1 ? -1 : line.indexOf(':', first + 1);
    if (second === -1) continue;
    const path = line.slice(second + 1).trim();
    if (owner.slurmJob === undefined) {
      const [, uid, job] = SLURM_JOB.exec(path) ?? [];
      if (job !== undefined) owner = { ...owner, slurmJob: job, ...(uid !== undefined ? { slurmUid: Number(uid) } : {}) };
    }
    if (owner.podUid === undefined) {
      const pod = POD.exec(path);
      const podUid = pod?.[1];
      if (pod && podUid !== undefined) {
        const container = CONTAINER.exec(path.slice(pod.index + pod[0].length));
        const containerId = container?.[1] ?? container?.[2];
        owner = { ...owner, podUid: dashed(podUid), ...(containerId !== undefined ? { containerId } : {}) };
      }
    }
  }
  return owner;
}

function dashed(uid: string): string {
  const u = uid.replace(/_/g, '-');
  return u.length === 32 ? `${u.slice(0, 8)}-${u.slice(8, 12)}-${u.slice(12, 16)}-${u.slice(16, 20)}-${u.slice(20)}` : u;
}
