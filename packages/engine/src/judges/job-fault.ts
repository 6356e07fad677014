import { fill, fingerprintOf } from '../conditions.ts';
import type { JobRun } from '../engine-state.ts';
import type { Judge, JudgeContext } from '../judge.ts';
import { faultAt, jobOnGpu, jobProgressWords, restartedSinceFault, runKey } from '../job-runs.ts';
import type { RuleOf } from '../rule-set.ts';
import { ruleKey } from './keys.ts';

/** Job events that are a rank's fallout from a lost peer. */
const FALLOUT = new Set(['collective_timeout', 'nccl_error', 'cuda_error']);

/**
 * A training job and a dead GPU as one incident. A fatal GPU fault (a GPU fallen off the bus, or
 * an Xid of `xids`) on a GPU a job runs on is the incident's root: its alert names the GPU, the
 * job, the step it reached and the minutes since its last checkpoint (the work at risk), and goes
 * to the job's owner (the `job_user` label). Collective timeouts, NCCL and CUDA errors of the
 * job's ranks within `window` after it are linked to that incident (info, `incident` set): told
 * once, not once per rank. A timeout judged before its fault (the topics come in any order) waits
 * `grace` for it; with no fault by then, it fires on its own as the job's problem. A job is its id
 * and owner (`jobKey`): the same id in another's hands is never linked. A restart (a restart event,
 * a rank's step going back) ends the fault's window: what comes after it is the job's own.
 */
export const jobFault: Judge<'job_fault'> = {
  kernel(ctx, rule) {
    const { host, at, event, gpu, id } = ctx;
    const fatal = event.kind === 'fallen_off_bus' || (event.kind === 'xid' && event.xid !== undefined && rule.xids.includes(event.xid));
    if (!fatal || gpu === undefined) return false;
    const found = jobOnGpu(ctx.state, host, gpu);
    if (!found) return false;
    const [, run] = found;
    const job = run.labels.job;
    const key = ruleKey(rule.id, gpu);
    const what =
      event.kind === 'xid'
        ? `Xid ${event.xid}: ${event.meaning ?? (event.xid !== undefined ? ctx.catalog.lookup(event.xid)?.meaning : undefined) ?? ''}`.trim()
        : 'fallen off the bus';
    // The same fault's further lines (Xid 79, then "GPU has fallen off the bus") add evidence to the one alert.
    const { fault } = run;
    const sameFault =
      fault !== undefined && fault.host === host.host && fault.gpu === gpu && at - fault.at < rule.window && !restartedSinceFault(run) ? fault : undefined;
    const same = sameFault !== undefined;
    const faultAt = sameFault?.at ?? at;
    ctx.conditions.observe(
      host,
      key,
      rule,
      gpu,
      at,
      {
        breaching: true,
        evidence: [id],
        labels: run.labels,
        description: event.message,
        summary: fill(rule.summary, {
          host: host.host,
          gpu,
          job,
          user: run.labels.job_user ?? 'unknown owner',
          detail: sameFault?.what ?? what,
          progress: jobProgressWords(run, faultAt),
        }),
      },
      false,
    );
    const tracker = host.trackers[key];
    if (tracker) tracker.quietMs = rule.window;
    if (!same) {
      // The incident the ranks join: the host's, which this alert opened or joined.
      const incident = host.incident && host.incident.until >= at ? host.incident.fingerprint : fingerprintOf(host.host, key);
      run.fault = { host: host.host, gpu, at, fingerprint: incident, what };
    }
    return false; // the GPU's own alerts (gpu-absent, the Xid) are raised too, in the same incident
  },

  job(ctx, rule) {
    const { data } = ctx;
    if (!FALLOUT.has(data.kind)) return;
    const key = falloutKey(rule.id, runKey(ctx.run));
    observeFallout(ctx, rule, key, data.job, ctx.run, [ctx.id], data.rank);
  },

  tick(ctx, rule) {
    // Timeouts waiting for their fault: linked once it is known, on their own after `grace`.
    const prefix = `${rule.id}|job|`;
    for (const key in ctx.host.trackers) {
      const tracker = ctx.host.trackers[key];
      if (tracker === undefined || tracker.firing || tracker.since === undefined || !key.startsWith(prefix)) continue;
      const run = ctx.state.fleet.training?.[key.slice(prefix.length)];
      if (run) observeFallout(ctx, rule, key, run.labels.job ?? '', run, [], undefined);
    }
  },
};

function falloutKey(rule: string, job: string): string {
  return `${rule}|job|${job}`;
}

function observeFallout(
  ctx: JudgeContext,
  rule: RuleOf<'job_fault'>,
  key: string,
  job: string,
  run: JobRun,
  evidence: string[],
  rank: number | undefined,
): void {
  const { host, at } = ctx;
  const fault = faultAt(run, at, rule.window, rule.grace);
  const first = rank !== undefined ? ` (rank ${rank} first)` : '';
  if (fault) {
    const waiting = host.trackers[key];
    const seen = waiting && !waiting.firing ? [...waiting.evidence, ...evidence] : evidence;
    if (waiting && !waiting.firing) delete host.trackers[key]; // never told: it starts again as the fault's fallout, with what it saw
    ctx.conditions.observe(host, key, { ...rule, for: 0 }, undefined, at, {
      breaching: true,
      severity: 'info',
      evidence: seen,
      labels: run.labels,
      incident: fault.fingerprint,
      summary: `Job ${job}'s ranks on ${host.host} timed out in a collective${first}: caused by GPU ${fault.gpu} on ${fault.host} (${fault.what})`,
    });
  } else {
    const since = host.trackers[key]?.since;
    if (evidence.length === 0 && since !== undefined && at - since < rule.grace) return; // still waiting for its fault
    ctx.conditions.observe(host, key, { ...rule, for: rule.grace }, undefined, at, {
      breaching: true,
      severity: rule.severity,
      evidence,
      labels: run.labels,
      summary: `Job ${job}'s ranks on ${host.host} timed out in a collective (or an NCCL/CUDA error)${first} with no GPU fault found: look at the network and the other ranks`,
    });
  }
  const tracker = host.trackers[key];
  if (tracker) tracker.quietMs = rule.window;
}
