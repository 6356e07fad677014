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

/**
 * What the engine judges: one judge per rule kind. A kind in `RuleSpec` with no entry here is a
 * compile error, so a new kind cannot be loaded and silently do nothing.
 */
export const JUDGES = {
  threshold, baseline, peer, straggler, event, counter, flag, throttle,
  stuck_job: stuckJob, low_memory_use: lowMemoryUse, idle_cost: idleCost, absence, collector, link, drift, maintenance,
} as const satisfies JudgeRegistry;
