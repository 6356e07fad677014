import { labelValue } from '../matchers.ts';
import type { AlertView, NotifierState, Suppression } from '../notifier-types.ts';
import type { ResolvedRoute } from '../notifier-types.ts';
import type { SilenceIndex } from '../silence-index.ts';
import { inInterval, type TimeInterval } from '../time-interval.ts';
import type { Inhibitor } from './inhibitor.ts';

/** Why a stage holds a firing alert back from a receiver. */
export type Hold = Omit<Suppression, 'receiver' | 'fingerprints'>;

/** What a stage looks at: the state, the route (its receiver and time intervals), the alert, the time. */
export interface StageInput {
  readonly state: NotifierState;
  readonly route: ResolvedRoute;
  readonly alert: AlertView;
  readonly now: number;
}

/**
 * One stage of the path a firing alert takes to a receiver, as Alertmanager's notify.Stage: each
 * may hold the alert back, and says why. The stages run in Alertmanager's order (MUTE_ORDER) and
 * the first that holds wins; what none holds goes on to the group stages (group-stages.ts).
 */
export interface MuteStage {
  readonly name: (typeof MUTE_ORDER)[number];
  hold(input: StageInput): Hold | undefined;
}

/** Alertmanager's order (notify.go, PipelineBuilder.New): inhibit, active time, mute time, silence. */
export const MUTE_ORDER = ['inhibit', 'active_time', 'mute_time', 'silence'] as const;

/** Inhibition: a firing source alert with the same `equal` values mutes the target (inhibitor.ts). */
export function inhibitStage(inhibitor: Inhibitor): MuteStage {
  return {
    name: 'inhibit',
    hold({ state, alert }) {
      const source = inhibitor.first(state, alert.fingerprint, alert.labels);
      if (source === undefined) return undefined;
      const labels = state.firing[source] ?? {};
      return { reason: 'inhibited', detail: `inhibited by ${labelValue(labels, 'category') || 'an alert'} ${source} on ${labelValue(labels, 'host')}` };
    },
  };
}

/** The route's active_time_intervals: outside all of them, its receiver is not told. */
export function activeTimeStage(intervals: readonly TimeInterval[]): MuteStage {
  return {
    name: 'active_time',
    hold({ route, now }) {
      if (route.active.length === 0 || route.active.some((name) => inside(intervals, name, now))) return undefined;
      return { reason: 'muted', detail: "outside the route's active time intervals" };
    },
  };
}

/** The route's mute_time_intervals: inside any of them, its receiver is not told. */
export function muteTimeStage(intervals: readonly TimeInterval[]): MuteStage {
  return {
    name: 'mute_time',
    hold({ route, now }) {
      const mutedBy = route.mute.find((name) => inside(intervals, name, now));
      return mutedBy === undefined ? undefined : { reason: 'muted', detail: `inside mute time interval ${mutedBy}` };
    },
  };
}

/** Silences: the first active silence (for every receiver, or for this one) whose matchers all match. */
export function silenceStage(index: (state: NotifierState) => SilenceIndex): MuteStage {
  return {
    name: 'silence',
    hold({ state, route, alert, now }) {
      const silence = index(state).first(alert.labels, now, route.receiver);
      return silence ? { reason: 'silenced', detail: `silence ${silence.id} by ${silence.createdBy}: ${silence.comment}` } : undefined;
    },
  };
}

function inside(intervals: readonly TimeInterval[], name: string, now: number): boolean {
  return intervals.some((i) => i.name === name && inInterval(i, now));
}

/** The first stage, in order, that holds the alert back, and why; undefined when none does. */
export function held(stages: readonly MuteStage[], input: StageInput): Hold | undefined {
  for (const stage of stages) {
    const hold = stage.hold(input);
    if (hold) return hold;
  }
  return undefined;
}
