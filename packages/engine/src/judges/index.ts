import type { JudgeRegistry } from '../judge.ts';
import { absence } from './absence.ts';
import { baseline } from './baseline.ts';
import { collector } from './collector.ts';
import { counter } from './counter.ts';
import { drift } from './drift.ts';
import { event } from './event.ts';
import { flag } from './flag.ts';
import { idleCost } from './idle-cost.ts';
import { link } from './link.ts';
import { lowMemoryUse } from './low-memory-use.ts';
import { maintenance } from './maintenance.ts';
import { peer } from './peer.ts';
import { straggler } from './straggler.ts';
import { stuckJob } from './stuck-job.ts';
import { threshold } from './threshold.ts';
import { throttle } from './throttle.ts';
import { bmcEvent } from './host-bmc-event.ts';
import { fan } from './host-fan.ts';
import { hostFault } from './host-fault.ts';
import { ibPort } from './host-ib-port.ts';
import { inletTemp } from './host-inlet.ts';
import { pciePort } from './host-pcie-port.ts';
import { jobCheckpoint } from './job-checkpoint.ts';
import { jobFault } from './job-fault.ts';
import { jobStalled, jobStepTime, jobStraggler } from './job-progress.ts';
import { psuRedundancy } from './host-psu.ts';
import { telemetry } from './telemetry.ts';

/**
 * What the engine judges: one judge per rule kind. A kind in `RuleSpec` with no entry here is a
 * compile error, so a new kind cannot be loaded and silently do nothing.
 */
export const JUDGES = {
  threshold,
  baseline,
  peer,
  straggler,
  event,
  counter,
  flag,
  throttle,
  stuck_job: stuckJob,
  low_memory_use: lowMemoryUse,
  idle_cost: idleCost,
  absence,
  collector,
  telemetry,
  link,
  drift,
  maintenance,
  fan,
  psu_redundancy: psuRedundancy,
  inlet_temp: inletTemp,
  bmc_event: bmcEvent,
  ib_port: ibPort,
  host_fault: hostFault,
  pcie_port: pciePort,
  job_fault: jobFault,
  job_checkpoint: jobCheckpoint,
  job_step_time: jobStepTime,
  job_straggler: jobStraggler,
  job_stalled: jobStalled,
} as const satisfies JudgeRegistry;
