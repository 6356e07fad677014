import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Envelope, newEnvelope } from '@gpualert/schema';
import { loadJobPatterns, parseJobPatterns } from '../services/collectors/src/job/job-patterns.ts';
import {
  classifyJobLine,
  matchJobLine,
  MAX_JOB_LINE_LENGTH,
  parseJobLog,
  readJobLine,
  recogniseJobLine,
} from '../services/collectors/src/job/match-job-line.ts';

const patterns = (() => {
  const loaded = loadJobPatterns();
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.value;
})();
const fixture = (name: string) => parseJobLog(readFileSync(`test/fixtures/jobs/${name}`, 'utf8'), patterns, { job: 'run-7', rank: 5 });
const brief = (name: string) =>
  fixture(name).events.map(({ line, data }) => ({ line, kind: data.kind, pattern: data.pattern, rank: data.rank, gpu: data.gpu, step: data.step }));

describe('job logs from real issue threads (test/fixtures/jobs/README.md) through rules/job-patterns.yaml', () => {
  it('NCCL watchdog timeouts: one collective_timeout per rank, torch 1.x and 2.x, the timeout beating a progress bar on the same line', () => {
    const old = fixture('pytorch-118369-lightning-watchdog.log').events;
    expect(old.map((e) => [e.data.kind, e.data.rank, e.data.fields?.seq])).toEqual([
      ['collective_timeout', 0, 96120],
      ['collective_timeout', 0, 96117],
      ['collective_timeout', 0, 96125],
      ['collective_timeout', 0, 96125],
      ['collective_timeout', 7, 64088],
    ]);
    expect(old[0]!.data.fields).toMatchObject({ op: 'ALLREDUCE', timeout_ms: 1_800_000, ran_ms: 25_624_887 });
    expect(brief('basicsr-737-watchdog-torch2.log').map((e) => [e.pattern, e.rank])).toEqual([
      ['nccl_watchdog_timeout', 1],
      ['nccl_watchdog_exception', 1],
      ['nccl_watchdog_timeout', 0],
      ['nccl_watchdog_exception', 0],
      ['nccl_watchdog_timeout', 2],
    ]);
  });

  it('NCCL WARN and NCCL errors: the CUDA device of an NCCL line is the GPU; a CUDA failure inside NCCL is a cuda_error', () => {
    expect(brief('nccl-629-illegal-memory.log')).toEqual([
      { line: 6, kind: 'nccl_error', pattern: 'nccl_warn', rank: 5, gpu: 0, step: undefined },
      { line: 14, kind: 'cuda_error', pattern: 'nccl_warn_cuda_failure', rank: 5, gpu: 1, step: undefined },
    ]);
    expect(fixture('pytorch-131755-nccl-warn-cuda-700.log').events.map((e) => [e.data.gpu, e.data.fields?.cuda_code, e.data.fields?.error])).toEqual([
      [1, 700, 'an illegal memory access was encountered'],
      [1, 700, 'an illegal memory access was encountered'],
    ]);
    expect(fixture('pytorch-111187-nccl-error.log').events[0]!.data).toMatchObject({ kind: 'nccl_error', fields: { error: 'unhandled cuda error' } });
    expect(fixture('vllm-4108-watchdog-cuda-error.log').events.map((e) => [e.data.kind, e.data.rank])).toEqual([['cuda_error', 0]]);
  });

  it("out of memory names the GPU; an elastic agent's failed worker is an exit with its code", () => {
    expect(fixture('pytorch-16417-oom.log').events[0]!.data).toMatchObject({ kind: 'oom', gpu: 0, fields: { tried: '22.00 MiB' } });
    expect(fixture('nccl-1657-elastic-exit.log').events.map((e) => [e.line, e.data.kind, e.data.exit_code, e.data.fields?.local_rank])).toEqual([
      [3, 'exit', 1, 0],
    ]);
  });

  it('progress: Megatron-LM iterations with their step time and loss, DeepSpeed steps, Hugging Face Trainer dicts', () => {
    expect(fixture('megatron-llm-11-iterations.log').events.map((e) => [e.data.step, e.data.step_time_ms, e.data.fields?.loss])).toEqual([
      [122, 86545.2, 2.50422],
      [123, 87871.6, 2.493043],
      [124, 89474.8, 2.559583],
      [125, 89075.2, 2.477393],
    ]);
    expect(brief('deepspeed-3742-megatron-deepspeed.log').map((e) => [e.line, e.pattern, e.step])).toEqual([
      [4, 'megatron_iteration', 34],
      [6, 'deepspeed_step', 35],
    ]);
    expect(brief('deepspeed-1825-steps.log').map((e) => [e.rank, e.step])).toEqual([
      [0, 40],
      [0, 50],
    ]);
    const hf = fixture('transformers-14531-trainer-deepspeed.log').events;
    expect(hf.map((e) => e.data.pattern)).toEqual(['hf_trainer_log', 'hf_trainer_log', 'hf_trainer_log', 'deepspeed_step', 'hf_trainer_log', 'hf_trainer_log']);
    expect(hf[0]!.data.fields).toEqual({ loss: 6.2645, learning_rate: 0.001, epoch: 0.02 });
  });

  it('a PyTorch Lightning progress bar (the bar of a real line, without the error NCCL printed after it): the step time from it/s', () => {
    const line = readFileSync('test/fixtures/jobs/pytorch-118369-lightning-watchdog.log', 'utf8').split('\n')[0]!;
    const bar = line.slice(0, line.indexOf('[E ProcessGroupNCCL'));
    expect(matchJobLine(bar, patterns)).toMatchObject({
      kind: 'step',
      pattern: 'lightning_progress',
      stepTimeMs: 729.927,
      fields: { epoch: 0, batch: 32040, batches: 500150, loss: 2.6, v_num: '95nc' },
    });
  });

  it("checkpoints: Hugging Face saved (real), and saved, failed and an elastic restart (synthetic lines in the frameworks' own formats)", () => {
    expect(fixture('transformers-36076-checkpoint.log').events.map((e) => [e.line, e.data.kind, e.data.checkpoint, e.data.fields?.path])).toEqual([
      [6, 'checkpoint', 'ok', 'data/tmp-checkpoint-pe8ry7n_'],
    ]);
    expect(brief('synthetic-restart-checkpoint.log').map((e) => [e.kind, e.pattern, e.step])).toEqual([
      ['step', 'megatron_iteration', 1000],
      ['checkpoint', 'megatron_checkpoint_saved', 1000],
      ['checkpoint', 'lightning_checkpoint', 12000],
      ['checkpoint', 'checkpoint_failed', 2000],
      ['restart', 'elastic_restart', undefined],
    ]);
    expect(fixture('synthetic-restart-checkpoint.log').events.find((e) => e.data.kind === 'restart')!.data.fields).toEqual({
      state: 'FAILED',
      attempts_left: 2,
      max_restarts: 3,
    });
  });

  it('every event of every fixture is a valid job.event envelope', () => {
    const names = [
      'pytorch-118369-lightning-watchdog.log',
      'basicsr-737-watchdog-torch2.log',
      'nccl-629-illegal-memory.log',
      'pytorch-131755-nccl-warn-cuda-700.log',
      'vllm-4108-watchdog-cuda-error.log',
      'pytorch-16417-oom.log',
      'pytorch-111187-nccl-error.log',
      'nccl-1657-elastic-exit.log',
      'transformers-14531-trainer-deepspeed.log',
      'transformers-36076-checkpoint.log',
      'deepspeed-3742-megatron-deepspeed.log',
      'deepspeed-1825-steps.log',
      'megatron-llm-11-iterations.log',
      'synthetic-restart-checkpoint.log',
    ];
    let count = 0;
    for (const name of names) {
      for (const { data } of fixture(name).events) {
        const envelope = JSON.parse(JSON.stringify(newEnvelope({ type: 'job.event', host: 'gpu-node-1', source: 'test', data })));
        expect(Envelope.safeParse(envelope).success, `${name}: ${data.message}`).toBe(true);
        count += 1;
      }
    }
    expect(count).toBe(5 + 5 + 2 + 2 + 1 + 1 + 1 + 1 + 6 + 1 + 2 + 2 + 4 + 5); // the events listed file by file above
  });

  it('recognising a line without its groups (what the collector does for progress) picks the same pattern as reading it', () => {
    const lines = readdirSync('test/fixtures/jobs')
      .filter((f) => f.endsWith('.log'))
      .flatMap((f) => readFileSync(`test/fixtures/jobs/${f}`, 'utf8').split('\n'));
    let recognised = 0;
    for (const line of lines) {
      const index = classifyJobLine(line, patterns);
      const full = matchJobLine(line, patterns);
      expect(index < 0 ? undefined : patterns[index]!.name, line).toBe(full?.pattern);
      const seen = recogniseJobLine(line, patterns);
      expect(seen?.pattern.name, line).toBe(full?.pattern);
      expect(seen?.match ?? (seen ? readJobLine(seen.text, seen.pattern) : undefined)).toEqual(full);
      if (index >= 0) recognised += 1;
    }
    expect(recognised).toBeGreaterThan(30);
  });

  it('a line no pattern knows is no event; a runaway line is cut before matching; the message holds no control characters', () => {
    expect(matchJobLine('NCCL INFO Bootstrap : Using eth0:10.156.28.90<0>', patterns)).toBeUndefined();
    const long = `${'x'.repeat(MAX_JOB_LINE_LENGTH)} torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB`;
    expect(matchJobLine(long.slice(MAX_JOB_LINE_LENGTH), patterns)?.kind).toBe('oom');
    expect(matchJobLine(long, patterns)).toBeUndefined();
    const m = matchJobLine('\u001b[31mtorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\u001b[0m', patterns);
    expect(m?.kind).toBe('oom');
    expect(m?.message).not.toMatch(/\u001b/);
  });
});

describe('rules/job-patterns.yaml as data', () => {
  it('refuses a regex RE2 cannot take, a name twice and a checkpoint pattern without its outcome (at the pattern), each at its file and line', () => {
    const text = [
      'patterns:',
      '  - name: a',
      '    kind: step',
      '    contains: x',
      "    regex: '(?<=lookbehind)x'",
      '  - name: a',
      '    kind: checkpoint',
      '    contains: y',
      "    regex: 'y'",
    ].join('\n');
    const result = parseJobPatterns('bad.yaml', text);
    expect(result.ok).toBe(false);
    const errors = result.ok ? [] : result.errors.map((e) => `${e.file}:${e.line}: ${e.field}`);
    expect(errors).toEqual(['bad.yaml:5: patterns.0.regex', 'bad.yaml:6: patterns.1.name', 'bad.yaml:6: patterns.1.checkpoint']);
  });

  it("a site's own pattern reads its own named groups into fields", () => {
    const result = parseJobPatterns(
      'site.yaml',
      "patterns:\n  - name: mine\n    kind: step\n    contains: 'STEP '\n    regex: 'STEP (?P<step>\\d+) tok/s=(?P<tokens_per_s>[\\d.]+)'\n",
    );
    expect(result.ok).toBe(true);
    if (result.ok) expect(matchJobLine('STEP 41200 tok/s=3100.5', result.value)).toMatchObject({ step: 41200, fields: { tokens_per_s: 3100.5 } });
  });
});
