import { z } from 'zod';
import { CHANNELS, channelSettings, type ChannelName } from './channels/channel-settings.ts';
import { MatcherText, type Matcher } from './matchers.ts';

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const Duration = z
  .string()
  .regex(DURATION, 'expected a duration like 30s, 5m or 4h')
  .transform((v) => Number(DURATION.exec(v)![1]) * UNIT_MS[DURATION.exec(v)![2]!]!);

export { CHANNELS, type ChannelName };

export const Receiver = z.object({
  name: z.string().min(1),
  channel: z.enum(CHANNELS),
  /** Channel settings; a value `env:NAME` is read from the environment at start, never logged. */
  settings: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
  /** Messages a minute this destination takes (the vendor's documented limit); over it, a digest. */
  per_minute: z.number().positive().optional(),
  /** Messages a second; without either, the vendor's documented rate (channels/rate-limits.ts). */
  per_second: z.number().positive().optional(),
}).superRefine((receiver, ctx) => {
  // Each channel's settings checked at load (URL with scheme, required keys), so a bad receiver is a file:line, not a crash on first send.
  const checked = channelSettings(receiver.channel, true).safeParse(receiver.settings);
  if (!checked.success) {
    for (const issue of checked.error.issues) ctx.addIssue({ code: 'custom', path: ['settings', ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))], message: issue.message });
  }
});
export type Receiver = z.infer<typeof Receiver>;

const routeFields = {
  receiver: z.string().optional(),
  matchers: z.array(MatcherText).default([]),
  continue: z.boolean().default(false),
  group_by: z.array(z.string()).optional(),
  group_wait: Duration.optional(),
  group_interval: Duration.optional(),
  repeat_interval: Duration.optional(),
  /** Page per fault: no grouping, one message per alert, keyed by its fingerprint. */
  page: z.boolean().optional(),
  /** Critical alerts skip group_wait on this route. */
  critical_without_wait: z.boolean().optional(),
  mute_time_intervals: z.array(z.string()).default([]),
  active_time_intervals: z.array(z.string()).default([]),
};

export interface RouteSpec {
  receiver?: string | undefined;
  matchers: Matcher[];
  continue: boolean;
  group_by?: string[] | undefined;
  group_wait?: number | undefined;
  group_interval?: number | undefined;
  repeat_interval?: number | undefined;
  page?: boolean | undefined;
  critical_without_wait?: boolean | undefined;
  mute_time_intervals: string[];
  active_time_intervals: string[];
  routes: RouteSpec[];
}

export const Route: z.ZodType<RouteSpec, unknown> = z.lazy(() => z.object({ ...routeFields, routes: z.array(Route).default([]) })) as never;

const Weekday = z.enum(['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday']);
export const TimeInterval = z.object({
  name: z.string().min(1),
  weekdays: z.array(Weekday).default([]),
  /** `HH:MM` to `HH:MM`, UTC. */
  times: z.array(z.object({ start: z.string().regex(/^\d\d:\d\d$/), end: z.string().regex(/^\d\d:\d\d$/) })).default([]),
});
export type TimeInterval = z.infer<typeof TimeInterval>;

export const InhibitRule = z.object({
  source: z.array(MatcherText).min(1),
  target: z.array(MatcherText).min(1),
  equal: z.array(z.string()).default([]),
});
export type InhibitRule = z.infer<typeof InhibitRule>;

export const RoutesFile = z
  .object({
    receivers: z.array(Receiver).min(1),
    route: Route,
    inhibit_rules: z.array(InhibitRule).default([]),
    time_intervals: z.array(TimeInterval).default([]),
  })
  .superRefine((file, ctx) => {
    const names = new Set(file.receivers.map((r) => r.name));
    const intervals = new Set(file.time_intervals.map((t) => t.name));
    if (!file.route.receiver) ctx.addIssue({ code: 'custom', path: ['route', 'receiver'], message: 'the root route needs a receiver' });
    const walk = (route: RouteSpec, path: (string | number)[]) => {
      if (route.receiver && !names.has(route.receiver)) ctx.addIssue({ code: 'custom', path: [...path, 'receiver'], message: `no receiver named "${route.receiver}"` });
      for (const name of [...route.mute_time_intervals, ...route.active_time_intervals]) {
        if (!intervals.has(name)) ctx.addIssue({ code: 'custom', path: [...path, 'mute_time_intervals'], message: `no time interval named "${name}"` });
      }
      route.routes.forEach((child, i) => walk(child, [...path, 'routes', i]));
    };
    walk(file.route, ['route']);
  });
export type RoutesFile = z.infer<typeof RoutesFile>;

/** A route as it applies to an alert: the receiver and every inherited setting resolved. */
export interface ResolvedRoute {
  readonly id: string;
  readonly receiver: string;
  readonly groupBy: readonly string[];
  readonly groupWait: number;
  readonly groupInterval: number;
  readonly repeatInterval: number;
  readonly page: boolean;
  readonly criticalWithoutWait: boolean;
  readonly mute: readonly string[];
  readonly active: readonly string[];
}
