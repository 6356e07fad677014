import { fill } from '../conditions.ts';
import { dict } from '../engine-state.ts';
import type { Judge } from '../judge.ts';
import { median } from '../peer-medians.ts';
import { hostKey } from './keys.ts';

/**
 * A host whose mean utilisation is well below the median of the other hosts of its job (label
 * `job`): it slows the whole job down. Only a host running the job can; an idle one is not a straggler.
 */
export const straggler: Judge<'straggler'> = {
  afterGpus(ctx, rule) {
    const { host, at } = ctx;
    const { gpus } = ctx.sample;
    const key = hostKey(rule.id);
    let processes = 0;
    let util = 0;
    for (const g of gpus) {
      processes += g.processes ?? 0;
      util += g.util_pct ?? 0;
    }
    if (processes === 0 && !host.trackers[key]) return;
    const job = host.labels.job;
    if (!job || gpus.length === 0) return;
    const meanUtil = processes > 0 ? util / gpus.length : 100;
    const hosts = (ctx.state.fleet.jobs[job] ??= dict());
    const mine = hosts[host.host];
    const own = mine ? mine.util * rule.smoothing + meanUtil * (1 - rule.smoothing) : meanUtil;
    hosts[host.host] = { util: own, at };
    // The job's other hosts heard from within the window, into a scratch array (one per sample would be garbage).
    const others = SCRATCH;
    others.length = 0;
    for (const name in hosts) {
      const h = hosts[name];
      if (h !== undefined && name !== host.host && at - h.at < rule.window) others.push(h.util);
    }
    if (others.length + 1 < rule.min_hosts) return;
    const peers = median(others);
    const breaching = peers > rule.peers_busy_above && own < rule.fraction * peers;
    if (!breaching && !host.trackers[key]) return;
    ctx.conditions.observe(host, key, rule, undefined, at, {
      breaching,
      value: own,
      summary: fill(rule.summary, { host: host.host, value: own, peers, detail: job }),
      evidence: ctx.evidence,
    });
  },
};

const SCRATCH: number[] = [];
