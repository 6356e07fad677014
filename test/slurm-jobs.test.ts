import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ProcessAttributor } from '../services/collectors/src/gpu/process-attribution.ts';
import { parseSlurmJobs } from '../services/collectors/src/gpu/slurm-jobs.ts';

/** Real `squeue`, `sacct` and `scontrol show job` outputs (test/fixtures/jobs/README.md, "Slurm listings"). */
const DIR = 'test/fixtures/jobs/slurm';
const listing = (name: string) => readFileSync(join(DIR, name), 'utf8');

describe('Slurm job listings as the attribution reads them', () => {
  it("squeue's table (after its prompt line): each job's user and name", () => {
    const { jobs, problems } = parseSlurmJobs(listing('squeue-quickstart.txt'));
    expect([...jobs]).toEqual([
      ['65646', { user: 'mike', name: 'chem' }],
      ['65647', { user: 'joan', name: 'bio' }],
      ['65648', { user: 'phil', name: 'math' }],
    ]);
    expect(problems).toEqual([]);
  });

  it("scontrol show job, today's shape (JobName=, UserId=user(uid)) and the older one (Name= on its own line)", () => {
    expect([...parseSlurmJobs(listing('scontrol-goosesllurm-32.txt')).jobs]).toEqual([
      ['10804568', { user: 'tdegeus', name: 'velocity_python_PinAndTrigger.py-00' }],
    ]);
    expect(parseSlurmJobs(listing('scontrol-quickstart.txt'))).toEqual({ jobs: new Map([['65672', { user: 'phil', name: 'math' }]]), problems: [] });
  });

  it('sacct: jobs without their steps (20.0, 19.0); no User column, so names only', () => {
    const { jobs, problems } = parseSlurmJobs(listing('sacct-soperator-321.txt'));
    expect([...jobs]).toEqual([
      ['20', { name: 'sleep' }],
      ['21', { name: 'sleep' }],
      ['22', { name: 'sleep' }],
    ]);
    expect(problems).toEqual([]);
  });

  it('sacct -P (pipes) reads the same; a row without a job id and a file that is no listing are said', () => {
    // Synthetic: `sacct -P --format=JobID,JobName,User` layout (sacct(1): --parsable2, "|" between fields).
    const piped = parseSlurmJobs('JobID|JobName|User\n4242|train-llm|alice\n4242.batch|batch|\nbogus|x|y\n');
    expect([...piped.jobs]).toEqual([['4242', { name: 'train-llm', user: 'alice' }]]);
    expect(piped.problems).toEqual(['line 4: "bogus|x|y" has no job id in the JOBID column (header at line 1)']);
    expect(parseSlurmJobs('NAME READY STATUS\ntrainer-0 1/1 Running\n').problems).toEqual([
      'no JOBID header and no JobId= record: not squeue, sacct or scontrol show job output',
    ]);
  });

  it('fills the user and name of a GPU process whose cgroup v2 path names only its job (no readable environment)', async () => {
    const root = mkdtempSync(join(tmpdir(), 'slurm-attr-'));
    cpSync('test/fixtures/jobs/proc/slurm-v2', root, { recursive: true });
    // The tree's process is in job 8812 (synthetic ids); point it at a job the real squeue listing names.
    writeFileSync(join(root, 'proc', '5151', 'cgroup'), '0::/system.slice/slurmstepd.scope/job_65646/step_0/user/task_0\n');
    const without = await new ProcessAttributor({ root }).attribute([5151]);
    expect(without.get(5151)).toEqual({ job: '65646', job_user: 'carol' });
    const attributor = new ProcessAttributor({ root, slurmJobsFile: join(DIR, 'squeue-quickstart.txt') });
    expect((await attributor.attribute([5151])).get(5151)).toEqual({ job: '65646', job_user: 'mike', job_name: 'chem' });
    expect(attributor.slurmJobsProblem).toBeUndefined();
    const missing = new ProcessAttributor({ root, slurmJobsFile: join(root, 'no-such-listing') });
    expect((await missing.attribute([5151])).get(5151)).toEqual({ job: '65646', job_user: 'carol' });
    expect(missing.slurmJobsProblem).toMatch(/no-such-listing: ENOENT/);
  });
});

describe('Kubernetes pod listings the pods file is given', () => {
  it('a `kubectl get pods` table (real, NVIDIA/k8s-device-plugin #72) is refused with what to save instead; a PodList is read', async () => {
    const { parsePodsFile } = await import('../services/collectors/src/gpu/pods-file.ts');
    expect(parsePodsFile(readFileSync('test/fixtures/jobs/k8s/kubectl-get-pod-table-k8s-device-plugin-72.txt', 'utf8'))).toBe(
      "a `kubectl get pods` table names no pod UIDs: save `kubectl get pods -o json` (or the kubelet's /pods) instead",
    );
    expect(parsePodsFile('apiVersion: v1\nkind: Pod\nmetadata:\n  name: x\n')).toBe('YAML: save the pods as JSON (`kubectl get pods -o json`)');
    const list = parsePodsFile(readFileSync('test/fixtures/jobs/proc/kubelet-pods.json', 'utf8'));
    expect(typeof list === 'string' ? list : list.byUid.size).toBeGreaterThan(0);
  });
});
