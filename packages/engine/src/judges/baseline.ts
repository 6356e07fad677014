import { fill } from '../conditions.ts';
import type { Baseline } from '../engine-state.ts';
import type { Judge } from '../judge.ts';
import { ruleKey } from './keys.ts';
import { observeMetric } from './metric.ts';

/**
 * A metric far from this GPU's own normal at comparable load (idle or busy), learned online and
 * seeded from the template's fleet prior while the GPU is young. Samples between idle and busy teach nothing.
 */
export const baseline: Judge<'baseline'> = {
  gpu(ctx, rule) {
    const { gpu, host, gs } = ctx;
    const value = gpu[rule.metric];
    const util = gpu.util_pct;
    if (value === null || util === null || (util >= rule.idle_below && util < rule.busy_at_least)) return;
    const bucket = util < rule.idle_below ? 'idle' : 'busy';
    const key = ruleKey(rule.id, gpu.index);
    const prior = ctx.bound.template.priors[rule.metric]?.[bucket];
    const learned = (gs.baselines[baselineKey(rule.metric, bucket)] ??= { n: 0, mean: prior?.[0] ?? value, dev: prior?.[1] ?? 1 });
    const weight = Math.min(1, learned.n / rule.warmup_samples);
    const mean = weight * learned.mean + (1 - weight) * (prior?.[0] ?? learned.mean);
    const dev = Math.max(weight * learned.dev + (1 - weight) * (prior?.[1] ?? learned.dev), rule.min_delta / rule.sigmas / 2);
    const delta = value - mean;
    const breaching = delta / dev > rule.sigmas && delta > rule.min_delta;
    const tracker = host.trackers[key];
    if (breaching || tracker) {
      observeMetric(ctx, key, rule, breaching, value, fill(rule.summary, { host: host.host, gpu: gpu.index, value, baseline: mean, delta }));
    }
    // Learn only from normal samples, so a fault is not taken for the new normal.
    if (!breaching && !host.trackers[key]?.firing) learn(learned, value);
  },
};

function learn(b: Baseline, value: number): void {
  b.n += 1;
  // Fast while young, then slow: a GPU's normal changes over hours, not minutes.
  const alpha = Math.max(1 / b.n, 0.01);
  const deviation = Math.min(Math.abs(value - b.mean), 4 * Math.max(b.dev, 0.5));
  b.mean += alpha * (Math.sign(value - b.mean) * Math.min(Math.abs(value - b.mean), 4 * Math.max(b.dev, 0.5)));
  b.dev += alpha * (deviation - b.dev);
}

/** `metric:idle` or `metric:busy`, the key of a learned baseline, made once. */
function baselineKey(metric: string, bucket: 'idle' | 'busy'): string {
  let keys = BASELINE_KEYS.get(metric);
  if (!keys) BASELINE_KEYS.set(metric, (keys = { idle: `${metric}:idle`, busy: `${metric}:busy` }));
  return keys[bucket];
}

const BASELINE_KEYS = new Map<string, { idle: string; busy: string }>();
