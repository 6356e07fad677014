import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadJobPatterns } from '../services/collectors/src/job/job-patterns.ts';
import { matchJobLine, parseJobLog } from '../services/collectors/src/job/match-job-line.ts';

/** Issue 31: the frameworks' own lines, verbatim from public threads (test/fixtures/jobs/README.md). */
const patterns = (() => {
  const loaded = loadJobPatterns();
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.errors));
  return loaded.value;
})();
const events = (name: string) => parseJobLog(readFileSync(`test/fixtures/jobs/${name}`, 'utf8'), patterns, { job: 'run-31' }).events;
const brief = (name: string) =>
  events(name).map(({ line, data }) => ({ line, kind: data.kind, pattern: data.pattern, rank: data.rank, step: data.step, checkpoint: data.checkpoint }));

describe('collective timeouts and NCCL errors in every shape torch prints them', () => {
  it('"Work WorkNCCL(…) timed out in blocking wait" is a collective_timeout of its rank, with the work it names', () => {
    const all = events('diffusers-12422-blocking-wait.log');
    const blocking = all.filter((e) => e.data.pattern === 'nccl_blocking_wait_timeout');
    expect(blocking.map((e) => [e.line, e.data.kind, e.data.rank])).toEqual([
      [2, 'collective_timeout', 1],
      [4, 'collective_timeout', 7],
    ]);
    expect(blocking[0]!.data.fields).toEqual({ seq: 2521, op: 'ALLREDUCE', timeout_ms: 600_000 });
    // Every line of the paste is read: the watchdog's lines too.
    expect(all).toHaveLength(4);
  });

  it('the blocking-wait line with newer torch\'s "[PG ID … Rank N]" prefix and "(TORCH_NCCL_BLOCKING_WAIT=1)." suffix', () => {
    // Synthetic: the shape torch's ProcessGroupNCCL.cpp logs (logPrefix(), "Work ", work, " timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).").
    const m = matchJobLine(
      '[rank3]:[E1002 18:16:40.662691402 ProcessGroupNCCL.cpp:756] [PG ID 0 PG GUID 0(default_pg) Rank 3] Work WorkNCCL(SeqNum=9, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).',
      patterns,
    );
    expect(m).toMatchObject({
      pattern: 'nccl_blocking_wait_timeout',
      kind: 'collective_timeout',
      rank: 3,
      fields: { seq: 9, op: 'BROADCAST', timeout_ms: 1_800_000 },
    });
  });

  it('"[PG 1 Rank N]" process-group prefixes (torch 2.4+): the watchdog timeout, its exception line, the thread that died of it', () => {
    expect(brief('llamafactory-6269-pg-watchdog.log').map((e) => [e.line, e.pattern, e.rank])).toEqual([
      [1, 'nccl_watchdog_timeout', 0],
      [2, 'nccl_watchdog_exception', 0],
      [3, 'nccl_watchdog_timeout', 6],
    ]);
  });

  it('unhandled system error (ncclSystemError) is an nccl_error naming it', () => {
    expect(events('cogvlm2-178-unhandled-system-error.log').map((e) => [e.data.kind, e.data.fields?.error])).toEqual([
      ['nccl_error', 'unhandled system error'],
    ]);
  });
});

describe('step progress in its several formats', () => {
  it('torchtitan: step, loss, memory, tps (thousands separators read as numbers), mfu, and the rank of "[rank0]:"; its warnings are no event', () => {
    const read = events('torchtitan-950-steps.log');
    expect(read.map((e) => [e.line, e.data.kind, e.data.rank, e.data.step])).toEqual([
      [1, 'step', 0, 22],
      [2, 'step', 0, 23],
      [4, 'step', 0, 24],
    ]);
    expect(read[0]!.data.fields).toEqual({ loss: 6.225, memory_gib: 1.41, tps: 193_831, tflops: 18.36, mfu_pct: 1.86 });
    expect(events('torchtitan-3393-grad-norm-steps.log')[0]!.data).toMatchObject({ step: 14, fields: { grad_norm: 0.8319, tps: 7_282 } });
  });

  it("NeMo 2's progress printer: the global step, the loss, and the step time when it prints one", () => {
    expect(events('nemo-10128-iterations.log').map((e) => [e.data.step, e.data.fields?.loss, e.data.step_time_ms])).toEqual([
      [0, 11.02, undefined],
      [1, 9.761, undefined],
      [2, 9.21, undefined],
    ]);
    expect(events('bionemo-740-step-timing.log').map((e) => [e.data.pattern, e.data.step, e.data.step_time_ms])).toEqual([
      ['nemo_iteration', 120, 31.46],
      ['nemo_iteration', 121, 31.63],
    ]);
  });

  it("NeMo 1's Lightning progress bar: the step is its global_step, not the batch within the epoch", () => {
    expect(events('nemo-launcher-55-progress.log').map((e) => [e.data.pattern, e.data.step, e.data.step_time_ms, e.data.fields?.batch])).toEqual([
      ['lightning_progress', 794, 41_360, 795],
    ]);
  });
});

describe('checkpoints saved and loaded', () => {
  it('DeepSpeed: each file written is a good checkpoint at its global step; "about to be saved" and "Saving" are not', () => {
    expect(brief('transformers-27820-deepspeed-save.log')).toEqual([
      { line: 1, kind: 'checkpoint', pattern: 'hf_trainer_checkpoint', rank: undefined, step: 10, checkpoint: 'ok' },
      { line: 8, kind: 'checkpoint', pattern: 'deepspeed_checkpoint_saved', rank: undefined, step: 10, checkpoint: 'ok' },
    ]);
  });

  it("Megatron's load that cannot read the optimizer state and exits is an exit naming what it could not load", () => {
    expect(events('megatron-deepspeed-14-load-failed.log').map((e) => [e.line, e.data.kind, e.data.fields?.what])).toEqual([[3, 'exit', 'optimizer']]);
  });

  it("Megatron's successful load is the job resuming from that iteration; torchtitan's save is a good checkpoint", () => {
    // Synthetic, in the formats of Megatron-LM megatron/training/checkpointing.py and torchtitan's
    // torchtitan/components/checkpoint.py (no public paste of these lines was found).
    expect(matchJobLine('  successfully loaded checkpoint from /ckpt/gpt [ t 1/2, p 1/1 ] at iteration 5000', patterns)).toMatchObject({
      pattern: 'megatron_checkpoint_loaded',
      kind: 'restart',
      step: 5000,
    });
    expect(matchJobLine('  successfully loaded checkpoint from /nas/megatron_gpt/ at iteration 100', patterns)).toMatchObject({ kind: 'restart', step: 100 });
    expect(
      matchJobLine('[rank0]:2025-04-01 00:25:59,616 - root - INFO - Finished saving the checkpoint (or staging if async is enabled)in 5.53 seconds.', patterns),
    ).toMatchObject({
      pattern: 'torchtitan_checkpoint_saved',
      kind: 'checkpoint',
      checkpoint: 'ok',
      fields: { save_s: 5.53 },
    });
    expect(matchJobLine('[titan] Finished saving the checkpoint in 0.60 seconds.', patterns)).toMatchObject({ checkpoint: 'ok', fields: { save_s: 0.6 } });
    // A load that is only starting says nothing yet.
    expect(matchJobLine(' loading checkpoint from /nas/megatron_gpt/ at iteration 100', patterns)).toBeUndefined();
  });
});
