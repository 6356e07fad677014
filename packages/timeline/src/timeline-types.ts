import type { AcknowledgementData, NotificationData, Severity } from '@gpualert/schema';

/** One line of the story, saying where it came from. */
export interface TimelineEntry {
  readonly ts: string;
  readonly source: 'kernel' | 'provider' | 'alert' | 'notification' | 'acknowledgement' | 'inventory' | 'collector' | 'job' | 'action';
  readonly host: string;
  readonly gpu?: number;
  readonly severity?: Severity;
  readonly title: string;
  readonly detail?: string;
  readonly id: string;
  /** The alert an alert or acknowledgement entry is about. */
  readonly fingerprint?: string;
}

/** One GPU metric over one minute. */
export interface MinuteSummary {
  readonly minute: string;
  readonly host: string;
  readonly gpu: number;
  readonly metric: SummarisedMetric;
  readonly min: number;
  readonly max: number;
  readonly mean: number;
  readonly samples: number;
}

export const SUMMARISED = ['temp_c', 'power_w', 'util_pct', 'mem_temp_c'] as const;
export type SummarisedMetric = (typeof SUMMARISED)[number];

/** One delivery attempt (or suppression, or silence) as the notifier recorded it on gpualert.notifications. */
export interface NotificationAttempt extends NotificationData {
  readonly ts: string;
  readonly host: string;
  readonly id: string;
}

/** A pager's word on a page (acknowledged, resolved…), from its webhook through the intake. */
export interface AcknowledgementRecord extends AcknowledgementData {
  readonly ts: string;
  readonly id: string;
}

export interface Timeline {
  readonly from: string;
  readonly to: string;
  readonly host?: string;
  readonly job?: string;
  readonly incident?: {
    fingerprint: string;
    summary: string;
    severity: Severity;
    host: string;
    gpu?: number;
    startsAt: string;
    endsAt?: string;
    /** Every alert of the incident (the root and those that carry it as `incident`). */
    fingerprints?: string[];
    /** The GPUs its alerts name, the root's first. */
    gpus?: { host: string; gpu: number }[];
    hosts?: string[];
  };
  readonly entries: TimelineEntry[];
  readonly metrics: MinuteSummary[];
  /** Every recorded delivery attempt in the story, oldest first: who was told what, when, and how it went. */
  readonly notifications: NotificationAttempt[];
  readonly acknowledgements: AcknowledgementRecord[];
  /** The last sample of each host in the range (whichever GPUs it held): a GPU whose samples stop before its host's was lost. */
  readonly samplesUntil?: { host: string; ts: string }[];
  /** With an incident: its times to detect, notify, acknowledge and resolve, and each charted GPU's baseline band. */
  readonly postmortem?: Postmortem;
}

/**
 * A GPU's normal for one metric, as the export reads it from the samples before the incident:
 * `mean ± k × spread` of its per-minute means over `from`–`to` (the part of the range that ends
 * `BASELINE_LEAD_MS` before the first alert, so the drift that led to it is not its own normal).
 */
export interface BaselineBand {
  readonly host: string;
  readonly gpu: number;
  readonly metric: SummarisedMetric;
  readonly mean: number;
  readonly spread: number;
  readonly k: number;
  readonly low: number;
  readonly high: number;
  readonly from: string;
  readonly to: string;
  readonly minutes: number;
}

/** One moment of the incident: when, and what it was. */
export interface Moment {
  readonly ts: string;
  readonly what: string;
}

/** A time-to figure, or why it is not given. */
export type Duration = { readonly ms: number } | { readonly notMeasured: string };

export interface Postmortem {
  readonly firstSignal?: Moment;
  readonly firstAlert: Moment;
  readonly firstNotified?: Moment;
  readonly firstAcknowledged?: Moment;
  readonly resolved?: Moment;
  /** First signal → first alert. */
  readonly toDetect: Duration;
  /** First alert → first notification delivered. */
  readonly toNotify: Duration;
  /** First alert → first acknowledgement in the pager. */
  readonly toAcknowledge: Duration;
  /** First alert → the last of its alerts resolved. */
  readonly toResolve: Duration;
  readonly attempts: { readonly sent: number; readonly failed: number; readonly suppressed: number; readonly retried: number };
  readonly bands: BaselineBand[];
}
