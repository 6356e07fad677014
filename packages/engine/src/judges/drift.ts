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
    if (cluster) (ctx.state.fleet.clusters[cluster] ??= dict())[host.host] = { driver: data.driver_version, cuda: data.cuda_version };
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
    const drivers = Object.values(members).map((m) => m.driver);
    const majority = mostCommon(drivers);
    if (drivers.length >= rule.min_hosts && majority && majority.count > drivers.length / 2 && majority.value !== driver) {
      reasons.push(`driver ${driver} while ${majority.count} of ${drivers.length} hosts in ${cluster} run ${majority.value}`);
    }
  }
  ctx.conditions.observe(host, hostKey(rule.id), rule, undefined, ctx.at, { breaching: reasons.length > 0, summary: fill(rule.summary, { host: host.host, detail: reasons.join('; ') }) });
}

function mostCommon(values: readonly string[]): { value: string; count: number } | undefined {
  const counts = new Map<string, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best: { value: string; count: number } | undefined;
  for (const [value, count] of counts) if (!best || count > best.count || (count === best.count && value < best.value)) best = { value, count };
  return best;
}
