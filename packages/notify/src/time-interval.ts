import { z } from 'zod';

/**
 * Alertmanager's time intervals (timeinterval/timeinterval.go), parsed with its rules and messages:
 * times of day, weekday, day-of-month (negative counts from the month's end), month and year
 * ranges, in an IANA `location` (UTC when absent).
 */
export interface Range {
  readonly begin: number;
  readonly end: number;
}
export interface TimeRangeSpec {
  /** Minutes of the day, start inclusive, end exclusive. */
  readonly times?: readonly Range[];
  readonly weekdays?: readonly Range[];
  readonly days_of_month?: readonly Range[];
  readonly months?: readonly Range[];
  readonly years?: readonly Range[];
  readonly location?: string;
}
export interface TimeInterval {
  readonly name: string;
  /** Inside the interval when inside any of these (an empty list: never). */
  readonly time_intervals: readonly TimeRangeSpec[];
}

const WEEKDAYS: Record<string, number> = { sunday: 0, monday: 1, tuesday: 2, wednesday: 3, thursday: 4, friday: 5, saturday: 6 };
const MONTHS: Record<string, number> = {
  january: 1,
  february: 2,
  march: 3,
  april: 4,
  may: 5,
  june: 6,
  july: 7,
  august: 8,
  september: 9,
  october: 10,
  november: 11,
  december: 12,
};
const MONTH_NAMES = Object.keys(MONTHS);
const VALID_TIME = /^((([01][0-9])|(2[0-3])):[0-5][0-9])$|(^24:00$)/;
const INTEGER = /^[+-]?\d{1,9}$/;

function rangeOf(text: string, member: (s: string) => number | string): Range | string {
  const lower = text.toLowerCase();
  const parts = lower.includes(':') ? lower.split(':') : [lower, lower];
  const [first, second] = parts;
  if (parts.length !== 2 || first === undefined || second === undefined) return `couldn't parse range ${lower}, invalid format`;
  const begin = member(first);
  if (typeof begin === 'string') return begin;
  const end = member(second);
  if (typeof end === 'string') return end;
  return { begin, end };
}

const intMember = (s: string) => (INTEGER.test(s) ? Number(s) : `strconv.Atoi: parsing "${s}": invalid syntax`);

export function parseWeekdayRange(text: string): Range | string {
  const r = rangeOf(text, (s) => (Object.hasOwn(WEEKDAYS, s) ? WEEKDAYS[s] : undefined) ?? `${s} is not a valid weekday`);
  if (typeof r === 'string') return r;
  if (r.begin > r.end) return 'start day cannot be before end day';
  return r;
}

export function parseDayOfMonthRange(text: string): Range | string {
  const r = rangeOf(text, intMember);
  if (typeof r === 'string') return r;
  if (r.begin === 0 || r.begin < -31 || r.begin > 31) return `${r.begin} is not a valid day of the month: out of range`;
  if (r.end === 0 || r.end < -31 || r.end > 31) return `${r.end} is not a valid day of the month: out of range`;
  if (r.begin < 0 && r.end > 0) return 'end day must be negative if start day is negative';
  // As Alertmanager: with a 28-day month as the shortest, catch ranges that are always empty.
  if ((r.begin < 0 ? 28 + r.begin : r.begin) > (r.end < 0 ? 28 + r.end : r.end)) return `end day ${r.end} is always before start day ${r.begin}`;
  return r;
}

export function parseMonthRange(text: string): Range | string {
  const r = rangeOf(text, (s) => {
    const named = Object.hasOwn(MONTHS, s) ? MONTHS[s] : undefined;
    if (named !== undefined) return named;
    const n = intMember(s);
    return typeof n === 'number' && n >= 1 && n <= 12 ? n : `${s} is not a valid month`;
  });
  if (typeof r === 'string') return r;
  if (r.begin > r.end) return `end month ${MONTH_NAMES[r.end - 1]} is before start month ${MONTH_NAMES[r.begin - 1]}`;
  return r;
}

export function parseYearRange(text: string): Range | string {
  const r = rangeOf(text, intMember);
  if (typeof r === 'string') return r;
  if (r.begin > r.end) return `end year ${r.end} is before start year ${r.begin}`;
  return r;
}

function parseTime(text: string): number | string {
  if (!VALID_TIME.test(text)) return `couldn't parse timestamp ${text}, invalid format`;
  const [h, m] = text.split(':').map(Number) as [number, number];
  return h * 60 + m;
}

export function parseTimeRange(raw: { start_time?: string | undefined; end_time?: string | undefined }): Range | string {
  if (!raw.start_time || !raw.end_time) return 'both start and end times must be provided';
  const begin = parseTime(raw.start_time);
  if (typeof begin === 'string') return begin;
  const end = parseTime(raw.end_time);
  if (typeof end === 'string') return end;
  if (begin >= end) return 'start time cannot be equal or greater than end time';
  return { begin, end };
}

/** An IANA zone Node knows (`Local`: the machine's), or why not. */
export function checkLocation(name: string): string | undefined {
  if (name === 'Local' || name === 'UTC') return undefined;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return undefined;
  } catch {
    return `unknown time zone ${name}`;
  }
}

const ranged = (parse: (s: string) => Range | string) =>
  z.array(
    z.union([z.string(), z.number()]).transform((v, ctx) => {
      const r = parse(String(v));
      if (typeof r === 'string') {
        ctx.addIssue({ code: 'custom', message: r });
        return z.NEVER;
      }
      return r;
    }),
  );

const TimeOfDay = z.strictObject({ start_time: z.string().optional(), end_time: z.string().optional() }).transform((v, ctx) => {
  const r = parseTimeRange(v);
  if (typeof r === 'string') {
    ctx.addIssue({ code: 'custom', message: r });
    return z.NEVER;
  }
  return r;
});

export const TimeRangeSchema = z.strictObject({
  times: z.array(TimeOfDay).optional(),
  weekdays: ranged(parseWeekdayRange).optional(),
  days_of_month: ranged(parseDayOfMonthRange).optional(),
  months: ranged(parseMonthRange).optional(),
  years: ranged(parseYearRange).optional(),
  location: z
    .string()
    .superRefine((v, ctx) => {
      const problem = checkLocation(v);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
});

/** gpualert's first shape (`weekdays: [saturday]`, `times: [{start, end}]`, UTC), kept so older files load. */
const LegacyInterval = z
  .strictObject({
    name: z.string().min(1),
    weekdays: ranged(parseWeekdayRange).optional(),
    times: z
      .array(
        z.strictObject({ start: z.string(), end: z.string() }).transform((v, ctx) => {
          const r = parseTimeRange({ start_time: v.start, end_time: v.end });
          if (typeof r === 'string') {
            ctx.addIssue({ code: 'custom', message: r });
            return z.NEVER;
          }
          return r;
        }),
      )
      .optional(),
  })
  .transform((v): TimeInterval => ({
    name: v.name,
    time_intervals: [{ ...(v.weekdays ? { weekdays: v.weekdays } : {}), ...(v.times ? { times: v.times } : {}) }],
  }));

const AlertmanagerInterval = z.strictObject({ name: z.string().min(1), time_intervals: z.array(TimeRangeSchema).default([]) });

/** Alertmanager's shape, or gpualert's first one when `weekdays`/`times` sit at the top; issues keep their paths. */
export const TimeIntervalSchema: z.ZodType<TimeInterval, unknown> = z.unknown().transform((value, ctx) => {
  const legacy =
    !!value && typeof value === 'object' && !Object.hasOwn(value, 'time_intervals') && (Object.hasOwn(value, 'weekdays') || Object.hasOwn(value, 'times'));
  const parsed = (legacy ? LegacyInterval : AlertmanagerInterval).safeParse(value);
  if (parsed.success) return parsed.data as TimeInterval;
  for (const issue of parsed.error.issues) {
    // Passed on as they are: an unknown key stays one (named and placed at its line by the loader).
    if (issue.code === 'unrecognized_keys') ctx.addIssue({ code: 'unrecognized_keys', keys: issue.keys, path: issue.path.map(String) });
    else ctx.addIssue({ code: 'custom', path: issue.path.map(String), message: issue.message });
  }
  return z.NEVER;
}) as never;

interface Local {
  year: number;
  month: number;
  day: number;
  weekday: number;
  minutes: number;
  daysInMonth: number;
}

const formats = new Map<string, Intl.DateTimeFormat>();
/** The wall-clock fields of `at` in a zone (Intl does the zone rules). */
function localTime(at: number, zone: string | undefined): Local {
  const timeZone = zone === undefined || zone === 'UTC' ? 'UTC' : zone === 'Local' ? undefined : zone;
  const key = timeZone ?? 'Local';
  let format = formats.get(key);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      ...(timeZone ? { timeZone } : {}),
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      weekday: 'short',
    });
    formats.set(key, format);
  }
  const parts: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const p of format.formatToParts(new Date(at))) parts[p.type] = p.value;
  const year = Number(parts.year);
  const month = Number(parts.month);
  const weekday = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'].indexOf(parts.weekday ?? '');
  return {
    year,
    month,
    day: Number(parts.day),
    weekday,
    minutes: Number(parts.hour) * 60 + Number(parts.minute),
    daysInMonth: new Date(Date.UTC(year, month, 0)).getUTCDate(),
  };
}

const inAny = (ranges: readonly Range[] | undefined, value: number) => ranges === undefined || ranges.some((r) => value >= r.begin && value <= r.end);

/** Alertmanager's `TimeInterval.ContainsTime`. */
export function rangeContains(spec: TimeRangeSpec, at: number): boolean {
  const t = localTime(at, spec.location);
  if (spec.times && !spec.times.some((r) => t.minutes >= r.begin && t.minutes < r.end)) return false;
  if (spec.days_of_month) {
    const n = t.daysInMonth;
    const hit = spec.days_of_month.some((r) => {
      let begin = r.begin < 0 ? n + r.begin + 1 : r.begin;
      let end = r.end < 0 ? n + r.end + 1 : r.end;
      if (begin > n) return false;
      begin = Math.min(Math.max(begin, -n), n);
      end = Math.min(Math.max(end, -n), n);
      return t.day >= begin && t.day <= end;
    });
    if (!hit) return false;
  }
  return inAny(spec.months, t.month) && inAny(spec.weekdays, t.weekday) && inAny(spec.years, t.year);
}

/** Is `at` inside the named interval (inside any of its ranges)? */
export function inInterval(interval: TimeInterval, at: number): boolean {
  return interval.time_intervals.some((spec) => rangeContains(spec, at));
}
