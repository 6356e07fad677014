import { loadXidCatalog } from '@gpualert/rules';
import { newEnvelope, type Envelope } from '@gpualert/schema';
import { Engine, loadRuleSet } from '@gpualert/engine';
import { emptyEngineState } from '../packages/engine/src/engine-state.ts';
import { StreamClock } from '../packages/engine/src/time-policy.ts';
import { syntheticFleet } from '@gpualert/test-support';
import { measure } from './harness.ts';

const T0 = Date.parse('2026-06-01T00:00:00Z');

/** `job.event`s through the engine (default rules): one job's ranks, one job with 1e5 ranks (past its 4,096 bound), 1e5 jobs (past 1,024). */
export async function benchJobLayer(): Promise<void> {
  const rules = loadRuleSet();
  const catalog = loadXidCatalog();
  if (!rules.ok || !catalog.ok) throw new Error('the bundled rules do not load');
  const engine = new Engine(rules.value, catalog.value);
  const N = 100_000;
  const feed = (make: (i: number) => { job: string; rank: number }) => () => {
    const state = emptyEngineState();
    const clock = new StreamClock(engine);
    for (const e of syntheticFleet({ hosts: 1, gpusPerHost: 2, start: T0, minutes: 1, seed: 5 })) clock.judge(state, e);
    const events: Envelope[] = [];
    for (let i = 0; i < N; i += 1) {
      const { job, rank } = make(i);
      events.push(
        newEnvelope({
          type: 'job.event',
          id: `j${i}`,
          host: 'gpu-node-000',
          source: 'bench',
          ts: new Date(T0 + 60_000 + Math.floor(i / 100)).toISOString(),
          data: { job, kind: 'step', rank, step: 1 + Math.floor(i / 64), step_time_ms: 1_000, message: 'step' },
        }),
      );
    }
    for (const e of events) clock.judge(state, e);
    return N;
  };
  await measure(
    'job.event: one job, 64 ranks stepping',
    'events/s',
    3,
    feed((i) => ({ job: 'j', rank: i % 64 })),
  );
  await measure(
    'job.event: one job, 100,000 distinct ranks (bound 4,096)',
    'events/s',
    3,
    feed((i) => ({ job: 'j', rank: i })),
  );
  await measure(
    'job.event: 100,000 distinct jobs (bound 1,024)',
    'events/s',
    3,
    feed((i) => ({ job: `job-${i}`, rank: 0 })),
  );
}
