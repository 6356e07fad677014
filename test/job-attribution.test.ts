import { describe, expect, it } from 'vitest';
import { Envelope, newEnvelope } from '@gpualert/schema';
import { attributeGpus, computeAppPids } from '../services/collectors/src/gpu/attribute-gpus.ts';
import { cgroupOwner } from '../services/collectors/src/gpu/cgroup-path.ts';
import { ProcessAttributor } from '../services/collectors/src/gpu/process-attribution.ts';
import { readFileSync } from 'node:fs';

const TREES = 'test/fixtures/jobs/proc';
const attribute = async (tree: string, pid: number, podsFile?: string) =>
  (await new ProcessAttributor({ root: `${TREES}/${tree}`, ...(podsFile ? { podsFile: `${TREES}/${podsFile}` } : {}) }).attribute([pid])).get(pid);

describe('who runs on a GPU, from /proc under a root (fixtures: test/fixtures/jobs/README.md)', () => {
  it('Slurm: the job, its user and name from the environment of a rank', async () => {
    expect(await attribute('slurm-v1', 4242)).toEqual({ job: '12345', job_user: 'alice', job_name: 'llama-70b-pretrain' });
  });

  it('Slurm on cgroup v1 and v2 without a readable environment: the job from the cgroup path, the user from the uid', async () => {
    const v1 = readFileSync(`${TREES}/slurm-v1/proc/4242/cgroup`, 'utf8');
    expect(cgroupOwner(v1)).toEqual({ slurmJob: '12345', slurmUid: 1001 });
    expect(await attribute('slurm-v2', 5151)).toEqual({ job: '8812', job_user: 'carol' });
  });

  it('Kubernetes, cgroup v1 with the cgroupfs driver (real layout): the pod UID and the container id', async () => {
    expect(await attribute('k8s-v1-cgroupfs', 777)).toEqual({
      pod_uid: 'd7874f44-eee0-423c-83c9-f246075bdde1',
      container: 'fbaa59723cd1f05d310e6f48b5d49a9d9e9552b7fde2205d0a2e2b5f60ec21ba',
    });
  });

  it('Kubernetes, cgroup v1 with the systemd driver, CRI-O and containerd (real layouts): the UID with dashes again', async () => {
    expect(await attribute('k8s-v1-systemd-crio', 21689)).toEqual({
      pod_uid: 'a5c1f8d5-1919-434d-add7-4afaafdaef89',
      container: '5eed917563583925ffdbd40a64efb2aaffe58638e57add8becaf460fe74f5b1c',
    });
    expect(await attribute('k8s-v1-containerd-systemd', 4310)).toEqual({
      pod_uid: 'b96a7488-3ee1-4bdc-9c98-155cc887b417',
      container: '6ef14b5a76df7b5d24285e3a04ccbc6fd323620272b3787b5dc440fc1b75d294',
    });
  });

  it("Kubernetes, cgroup v2: the namespace, pod and container names from the kubelet's /pods", async () => {
    expect(await attribute('k8s-v2-systemd', 9001)).toEqual({
      pod_uid: '03f3f104-3215-44f2-9686-d4dd1f05a7ed',
      container: '09d185410c4e25236cc24717f881589bb0978b24eafd101624e627a4dd8d3439',
    });
    expect(await attribute('k8s-v2-systemd', 9001, 'kubelet-pods.json')).toEqual({
      namespace: 'ml-research',
      pod: 'llama-trainer-worker-0',
      pod_uid: '03f3f104-3215-44f2-9686-d4dd1f05a7ed',
      container: 'pytorch',
    });
  });

  it('a plain process: its user from the passwd file under the root, and its command', async () => {
    expect(await attribute('plain', 3131)).toEqual({ job_user: 'bob', job_name: 'train.py' });
  });

  it('a process that is gone is not attributed, and a bad pods file is reported, not thrown', async () => {
    const attributor = new ProcessAttributor({ root: `${TREES}/plain`, podsFile: `${TREES}/plain/etc/passwd` });
    const result = await attributor.attribute([3131, 999999]);
    expect([...result.keys()]).toEqual([3131]);
    expect(attributor.podsFileProblem).toMatch(/not JSON/);
  });

  it("samples carry each GPU's job, valid as an envelope; a pod-resources dump names the pod holding a GPU by UUID", async () => {
    const apps = computeAppPids('GPU-aaaa, 4242\nGPU-aaaa, 4243\nGPU-bbbb, 5151\n');
    const parsed = Envelope.parse(minimal());
    if (parsed.type !== 'gpu.sample') throw new Error('not a sample');
    const gpu = (index: number, uuid: string) => ({ ...parsed.data.gpus[0]!, index, uuid });
    const attributor = new ProcessAttributor({ root: `${TREES}/slurm-v1` });
    const gpus = await attributeGpus([gpu(0, 'GPU-aaaa'), gpu(1, 'GPU-bbbb')], apps, attributor);
    expect(gpus.map((g) => g.job)).toEqual([{ job: '12345', job_user: 'alice', job_name: 'llama-70b-pretrain' }, undefined]);
    const envelope = newEnvelope({ type: 'gpu.sample', host: 'h', source: 't', data: { gpus } });
    expect(Envelope.parse(JSON.parse(JSON.stringify(envelope))).data).toEqual(JSON.parse(JSON.stringify(envelope.data)));
    const k8s = new ProcessAttributor({ root: `${TREES}/plain`, podsFile: `${TREES}/pod-resources.json` });
    const held = await attributeGpus([gpu(2, 'GPU-5a1f9c8e-2b7d-4c1e-9f3a-6d2e8b4c7a10')], new Map(), k8s);
    expect(held[0]!.job).toEqual({ namespace: 'ml-research', pod: 'llama-trainer-worker-1', container: 'pytorch' });
  });

  it('hostile environments: control characters are blanked and values cut to the bound', async () => {
    const { attributionOf } = await import('../services/collectors/src/gpu/process-attribution.ts');
    const job = attributionOf({ environ: `SLURM_JOB_ID=1\u001b[2J\0SLURM_JOB_NAME=${'x'.repeat(5000)}\0`, users: new Map() });
    expect(job?.job).toBe('1 [2J');
    expect(job?.job_name).toHaveLength(256);
  });
});

function minimal() {
  return { id: 'x', type: 'gpu.sample', ts: '2026-01-01T00:00:00Z', host: 'h', labels: {}, source: 's', data: { gpus: [{ index: 0 }] } };
}
