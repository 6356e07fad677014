import { checkSilence, describeReach, ReachCounter, silenceMatchers, tooBroad, type Silence, type SilenceReach } from '@gpualert/notify';
import type { StateStore } from '@gpualert/state';
import { FIRING_KEY } from './notifier-state-store.ts';
import { addSilence, SilenceError, type NewSilence } from './silences.ts';

/** At most this many firing alerts are read to judge a silence's reach (a larger set is judged on these). */
export const MAX_FIRING_JUDGED = 100_000;
/** Entries read and matched between two turns of the event loop (about 10 ms of work): the API's process keeps answering. */
const PER_TURN = 2_000;

/**
 * Counts the firing alerts as the notifiers saved them (`notifier:firing`), at most
 * MAX_FIRING_JUDGED of them, into `counter`; returns how many more there are. An entry that does
 * not read as labels is passed over.
 */
export async function countFiring(store: StateStore, counter: ReachCounter): Promise<number> {
  const { fields, total } = await store.hashGetSome(FIRING_KEY, MAX_FIRING_JUDGED);
  let read = 0;
  for (const text of Object.values(fields)) {
    if (++read % PER_TURN === 0) await new Promise((resolve) => setImmediate(resolve));
    let entry: unknown;
    try {
      entry = JSON.parse(text);
    } catch {
      continue;
    }
    const labels: unknown = typeof entry === 'object' && entry !== null && 'labels' in entry ? entry.labels : undefined;
    if (typeof labels !== 'object' || labels === null || Array.isArray(labels)) continue;
    const clean = Object.create(null) as Record<string, string>;
    for (const [name, value] of Object.entries(labels)) if (typeof value === 'string') clean[name] = value;
    counter.add(clean);
  }
  return Math.max(0, total - read);
}

/**
 * A new silence from a person (the CLI, the API, the console), told how many firing alerts it
 * matches, and refused when it reaches more than half of them across hosts unless `force`
 * (@gpualert/notify's silence-reach.ts says why).
 */
export async function makeSilence(store: StateStore, input: NewSilence, now: number, force = false): Promise<{ silence: Silence; reach: SilenceReach }> {
  const checked = checkSilence(input, now);
  if (!checked.ok) throw new SilenceError(checked.error);
  const matchers = silenceMatchers(checked.value.matchers);
  if (!matchers) throw new SilenceError('a matcher of this silence does not parse');
  const counter = new ReachCounter(matchers);
  const reach = counter.reach(await countFiring(store, counter));
  if (tooBroad(reach) && !force) {
    throw new SilenceError(
      `this silence ${describeReach(reach)}: more than half of what is firing, on more than one host; make it with force (--force, "force": true) if that is meant`,
    );
  }
  return { silence: await addSilence(store, input, now), reach };
}
