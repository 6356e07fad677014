// Writes demo/job-incident.jsonl, the recording `gpualert up --demo job` plays: a 4-host training
// job (Slurm job 73012 of user mchen, 4 GPUs a host, 16 ranks) in which GPU 1 of train-node-002
// falls off the bus at 03:14:20; two minutes later (the job's NCCL timeout) the other ranks'
// watchdogs catch the collective timeout and exit. SYNTHETIC: made here, not captured; its log
// messages follow the formats of the real excerpts in test/fixtures/jobs/ (Megatron-LM iteration
// lines, PyTorch's ProcessGroupNCCL watchdog) and the Xid 79 lines of demo/incident.jsonl.
// Deterministic, so the file only changes when this script does. Run: npx tsx tools/make-job-demo.ts
import { writeFileSync } from 'node:fs';
import { syntheticFleet } from '@gpualert/test-support';
import { newEnvelope, stableId, type Envelope, type JobEventData } from '@gpualert/schema';

const T0 = Date.parse('2026-06-02T03:00:00Z');
const SEC = 1_000;
const MIN = 60 * SEC;
const at = (minutes: number) => T0 + minutes * MIN;
const HOSTS = 4;
const GPUS = 4;
const JOB = '73012';
const FAULT_HOST = 2;
const FAULT_GPU = 1;
const FAULT = at(14) + 20 * SEC;
const TIMEOUT = FAULT + 120 * SEC; // the job runs with init_process_group(timeout=timedelta(seconds=120))
const EXIT = TIMEOUT + 15 * SEC;
const labels = { cluster: 'demo-train' };
const host = (h: number) => `train-node-${String(h).padStart(3, '0')}`;
const attribution = { job: JOB, job_user: 'mchen', job_name: 'llama-70b-pretrain' };

const fleet = [
  ...syntheticFleet({
    hosts: HOSTS,
    gpusPerHost: GPUS,
    start: T0,
    minutes: 20,
    seed: 73012,
    cluster: 'demo-train',
    fault: (h, gpu, t) => {
      if (h === FAULT_HOST && gpu.index === FAULT_GPU && t >= FAULT) return null; // off the bus: nvidia-smi no longer lists it
      const running = t < EXIT;
      // Training until the fault; hung in the collective (processes alive, nothing computed) until the watchdog; then gone.
      const util = t < FAULT ? 96 + (gpu.index % 3) : 0;
      return {
        ...gpu,
        util_pct: running ? util : 0,
        processes: running ? 1 : 0,
        pcie_gen: 5,
        temp_c: running && t < FAULT ? 61 + (gpu.index % 3) : 38,
        power_w: running && t < FAULT ? 640 + gpu.index * 4 : 120,
        throttle: [],
        ...(running ? { job: attribution } : {}),
      };
    },
  }),
].map((e) => ({ ...e, host: e.host.replace('gpu-node-', 'train-node-'), labels }) as Envelope);

const jobEvent = (h: number, t: number, data: JobEventData): Envelope =>
  newEnvelope({
    type: 'job.event',
    id: stableId('job-demo', h, t, data.kind, data.rank ?? -1),
    host: host(h),
    source: 'collector-job/demo',
    ts: new Date(t).toISOString(),
    labels,
    data,
  });

const story: Envelope[] = [];
// Every host's first rank logs Megatron-LM's iteration line every 30 s: 10 iterations of about 3 s.
for (let t = at(0) + 30 * SEC, step = 1010; t < FAULT; t += 30 * SEC, step += 10) {
  for (let h = 0; h < HOSTS; h += 1) {
    const ms = 2_980 + ((step / 10 + h * 7) % 5) * 11;
    story.push(
      jobEvent(h, t + h * 40, {
        job: JOB,
        kind: 'step',
        rank: h * GPUS,
        gpu: 0,
        step,
        step_time_ms: ms,
        pattern: 'megatron-iteration',
        message: ` iteration     ${step}/  250000 | consumed samples:     ${step * 1024} | elapsed time per iteration (ms): ${ms.toFixed(1)} | learning rate: 1.500E-04 | global batch size:  1024 | lm loss: 2.10${h}E+00 |`,
      }),
    );
  }
}
// Rank 0 saves a checkpoint every 5 minutes.
for (const minute of [1.5, 6.5, 11.5]) {
  const step = 1000 + Math.floor((minute * 60) / 30) * 10;
  story.push(
    jobEvent(0, at(minute) + 5 * SEC, {
      job: JOB,
      kind: 'checkpoint',
      checkpoint: 'ok',
      rank: 0,
      gpu: 0,
      step,
      pattern: 'megatron-checkpoint-saved',
      message: `  successfully saved checkpoint at iteration    ${step} to /ckpt/llama-70b/73012`,
    }),
  );
}
// GPU 1 of train-node-002 falls off the bus.
const kernel = (t: number, text: string): Envelope =>
  newEnvelope({
    type: 'kernel.line',
    id: stableId('job-demo', 'kernel', t, text),
    host: host(FAULT_HOST),
    source: 'collector-kernel/demo',
    ts: new Date(t).toISOString(),
    labels,
    data: { line: text },
  });
story.push(kernel(FAULT, "[91311.548779] NVRM: Xid (PCI:0000:29:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus."));
story.push(kernel(FAULT + 1, '[91311.548783] NVRM: GPU 0000:29:00.0: GPU has fallen off the bus.'));
// Two minutes on, every other rank's watchdog catches the timed-out all-reduce; the ranks exit.
for (let h = 0; h < HOSTS; h += 1) {
  for (let g = 0; g < GPUS; g += 1) {
    if (h === FAULT_HOST && g === FAULT_GPU) continue;
    const rank = h * GPUS + g;
    story.push(
      jobEvent(h, TIMEOUT + rank * 25, {
        job: JOB,
        kind: 'collective_timeout',
        rank,
        gpu: g,
        pattern: 'pytorch-watchdog-timeout',
        message: `[rank${rank}]:[E602 03:16:20.9038819 ProcessGroupNCCL.cpp:616] [Rank ${rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=38811, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=120000) ran for 120020 milliseconds before timing out.`,
      }),
    );
    story.push(
      jobEvent(h, EXIT + rank * 25, {
        job: JOB,
        kind: 'exit',
        rank,
        gpu: g,
        exit_code: -6,
        message: `[rank${rank}]: terminate called after throwing an instance of 'c10::DistBackendError'`,
      }),
    );
  }
}

const all = [...fleet, ...story].sort((a, b) => Date.parse(a.ts) - Date.parse(b.ts));
writeFileSync(new URL('../demo/job-incident.jsonl', import.meta.url), `${all.map((e) => JSON.stringify(e)).join('\n')}\n`);
console.log(`demo/job-incident.jsonl: ${all.length} envelopes`);
