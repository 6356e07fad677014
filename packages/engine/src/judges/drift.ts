import { clusterMajority, setClusterMember } from '../cluster-members.ts';
import { fill } from '../conditions.ts';
import { dict } from '../engine-state.ts';
import type { Judge, JudgeContext } from '../judge.ts';
import type { RuleOf } from '../rule-set.ts';
import { hostKey } from './keys.ts';

/**
 * A host on other driver/CUDA versions than its template pins, or than most hosts of its cluster
 * (label `cluster`). Judged on each inventory, and again from the host's last inventory when
 * another engine's hosts change its cluster (`clusterChange`).
 */
export const drift: Judge<'drift'> = {
  inventory(ctx, rule) {
    const { host, data } = ctx;
    const cluster = host.labels.cluster;
    if (cluster) setClusterMember((ctx.state.fleet.clusters[cluster] ??= dict()), host.host, { driver: data.driver_version, cuda: data.cuda_version });
    judge(ctx, rule, data.driver_version, data.cuda_version);
  },
  clusterChange(ctx, rule) {
    const inventory = ctx.host.inventory;
    if (inventory) judge(ctx, rule, inventory.driver, inventory.cuda);
  },
};

function judge(ctx: JudgeContext, rule: RuleOf<'drift'>, driver: string, cuda: string): void {
  const { host } = ctx;
  const reasons: string[] = [];
  const pins = ctx.bound.template.pins;
  if (pins.driver_version && pins.driver_version !== driver) reasons.push(`driver ${driver}, pinned ${pins.driver_version}`);
  if (pins.cuda_version && pins.cuda_version !== cuda) reasons.push(`CUDA ${cuda}, pinned ${pins.cuda_version}`);
  const cluster = host.labels.cluster;
  const members = cluster === undefined ? undefined : ctx.state.fleet.clusters[cluster];
  if (cluster !== undefined && members !== undefined) {
    const majority = clusterMajority(members);
    if (majority && majority.of >= rule.min_hosts && majority.count > majority.of / 2 && majority.value !== driver) {
      reasons.push(`driver ${driver} while ${majority.count} of ${majority.of} hosts in ${cluster} run ${majority.value}`);
    }
  }
  ctx.conditions.observe(host, hostKey(rule.id), rule, undefined, ctx.at, {
    breaching: reasons.length > 0,
    summary: fill(rule.summary, { host: host.host, detail: reasons.join('; ') }),
  });
}
