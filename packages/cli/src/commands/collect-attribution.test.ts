import { describe, expect, it } from 'vitest';
import { attributionOf } from './collect.ts';

describe('collect gpu / agent: --proc-root and --pods-file reach the GPU source as its attribution', () => {
  it('without either, the source keeps its own default (/ and no pods file)', () => {
    expect(attributionOf({})).toEqual({});
  });

  it('both, or one with the other defaulted', () => {
    expect(attributionOf({ procRoot: '/host', podsFile: '/run/pods.json' })).toEqual({ attribution: { root: '/host', podsFile: '/run/pods.json' } });
    expect(attributionOf({ podsFile: '/run/pods.json' })).toEqual({ attribution: { root: '/', podsFile: '/run/pods.json' } });
    expect(attributionOf({ procRoot: '/host' })).toEqual({ attribution: { root: '/host' } });
  });

  it('--slurm-jobs alone reaches the source with the default root', () => {
    expect(attributionOf({ slurmJobs: '/run/squeue.txt' })).toEqual({ attribution: { root: '/', slurmJobsFile: '/run/squeue.txt' } });
  });
});
