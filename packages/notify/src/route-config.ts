import { z } from 'zod';
import { integrationsOf, GlobalConfig, RECEIVER_CONFIG_KEYS, type Integration } from './alertmanager-receivers.ts';
import { CHANNELS, type ChannelName } from './channels/all-channels.ts';
import { channelSettings } from './channels/channel-settings.ts';
import { MatcherList, newMatcher, type Matcher } from './matchers.ts';
import { compileFields, defaultTemplateSet } from './receiver-templates.ts';
import { TimeIntervalSchema, type TimeInterval } from './time-interval.ts';

export { CHANNELS, type ChannelName, type Integration, type TimeInterval };

/** Prometheus' duration syntax (`1h30m`, `1w`, `90s`, `0`), as Alertmanager reads it (model.ParseDuration); no fractions. */
const PROM_DURATION = /^(?:(\d+)y)?(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?(?:(\d+)ms)?$/;
const UNIT_MS = [365 * 86_400_000, 7 * 86_400_000, 86_400_000, 3_600_000, 60_000, 1_000, 1];
/** The longest duration taken: a year of repeat_interval is already a mistake; beyond that, dates overflow. */
export const MAX_DURATION_MS = 10 * 365 * 86_400_000;

export function parseDuration(text: string): number | string {
  const m = text === '0' ? [] : PROM_DURATION.exec(text);
  if (!m || text === '') return `not a valid duration string: "${text}" (Prometheus' syntax: 30s, 5m, 1h30m, 1d, 1w)`;
  const ms = UNIT_MS.reduce((sum, unit, i) => sum + Number(m[i + 1] ?? 0) * unit, 0);
  if (ms > MAX_DURATION_MS) return `duration "${text}" is longer than ten years`;
  return ms;
}

const Duration = z.string().transform((v, ctx) => {
  const ms = parseDuration(v);
  if (typeof ms === 'string') {
    ctx.addIssue({ code: 'custom', message: ms });
    return z.NEVER;
  }
  return ms;
});

/** gpualert's own receiver shape: one channel. */
export const Receiver = z
  .strictObject({
    name: z.string().min(1),
    channel: z.enum(CHANNELS),
    /** Channel settings; a value `env:NAME` is read from the environment at start, never logged. */
    settings: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).default({}),
    /** Messages a minute this destination takes (the vendor's documented limit); over it, a digest. */
    per_minute: z.number().positive().optional(),
    /** Messages a second; without either, the vendor's documented rate (its channel's descriptor, applied in channels/rate-limits.ts). */
    per_second: z.number().positive().optional(),
    send_resolved: z.boolean().default(true),
  })
  .superRefine((receiver, ctx) => {
    // Each channel's settings checked at load (URL with scheme, required keys), so a bad receiver is a file:line, not a crash on first send.
    const checked = channelSettings(receiver.channel, true).safeParse(receiver.settings);
    if (!checked.success) {
      for (const issue of checked.error.issues)
        ctx.addIssue({ code: 'custom', path: ['settings', ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))], message: issue.message });
    }
  });
export type Receiver = Integration;

export interface RouteSpec {
  receiver?: string | undefined;
  matchers: Matcher[];
  continue: boolean;
  group_by?: string[] | undefined;
  /** `group_by: ['...']`: every label groups (each distinct label set is its own group). */
  group_by_all?: boolean | undefined;
  group_wait?: number | undefined;
  group_interval?: number | undefined;
  repeat_interval?: number | undefined;
  page?: boolean | undefined;
  critical_without_wait?: boolean | undefined;
  mute_time_intervals: string[];
  active_time_intervals: string[];
  routes: RouteSpec[];
}

/** `match:`'s values: text (a number or boolean written bare is read as written, by load-routes.ts's labelMapsAsWritten). */
const LabelMap = z.record(z.string(), z.string());

/** Alertmanager's deprecated `match` (equality) and `match_re` (anchored regex), as matchers. */
function legacyMatchers(match: Record<string, string> | undefined, re: Record<string, string> | undefined, ctx: z.RefinementCtx, at: string): Matcher[] {
  const out: Matcher[] = [];
  for (const [label, value] of Object.entries(match ?? {})) out.push(newMatcher(label, '=', value) as Matcher);
  for (const [label, value] of Object.entries(re ?? {})) {
    const m = newMatcher(label, '=~', value);
    if (typeof m === 'string') ctx.addIssue({ code: 'custom', path: [at, label], message: m });
    else out.push(m);
  }
  return out;
}

/** A label name as Alertmanager 0.25 takes one in group_by (model.LabelName.IsValid). */
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

const GroupBy = z.array(z.string()).superRefine((labels, ctx) => {
  const seen = new Set<string>();
  for (const label of labels) {
    if (label !== '...' && !LABEL_NAME.test(label)) ctx.addIssue({ code: 'custom', message: `invalid label name ${JSON.stringify(label)} in group_by list` });
    if (seen.has(label)) ctx.addIssue({ code: 'custom', message: `duplicated label "${label}" in group_by` });
    seen.add(label);
  }
  if (labels.includes('...') && labels.length > 1)
    ctx.addIssue({ code: 'custom', message: 'cannot have wildcard group_by (`...`) and other labels at the same time' });
});

export const Route: z.ZodType<RouteSpec, unknown> = z.lazy(() =>
  z
    .strictObject({
      receiver: z.string().optional(),
      matchers: MatcherList.default([]),
      match: LabelMap.optional(),
      match_re: LabelMap.optional(),
      continue: z.boolean().default(false),
      group_by: GroupBy.optional(),
      group_wait: Duration.optional(),
      group_interval: Duration.optional(),
      repeat_interval: Duration.optional(),
      /** Page per fault: no grouping, one message per alert, keyed by its fingerprint. */
      page: z.boolean().optional(),
      /** Critical alerts skip group_wait on this route. */
      critical_without_wait: z.boolean().optional(),
      mute_time_intervals: z.array(z.string()).default([]),
      active_time_intervals: z.array(z.string()).default([]),
      routes: z.array(Route).default([]),
    })
    .transform((r, ctx): RouteSpec => {
      const { match, match_re, group_by, ...rest } = r;
      return {
        ...rest,
        matchers: [...r.matchers, ...legacyMatchers(match, undefined, ctx, 'match'), ...legacyMatchers(undefined, match_re, ctx, 'match_re')],
        ...(group_by ? (group_by.includes('...') ? { group_by: [], group_by_all: true } : { group_by }) : {}),
      };
    }),
) as never;

export interface InhibitRule {
  readonly source: Matcher[];
  readonly target: Matcher[];
  readonly equal: string[];
}

export const InhibitRule: z.ZodType<InhibitRule, unknown> = z
  .strictObject({
    source: MatcherList.optional(),
    target: MatcherList.optional(),
    source_matchers: MatcherList.optional(),
    target_matchers: MatcherList.optional(),
    source_match: LabelMap.optional(),
    source_match_re: LabelMap.optional(),
    target_match: LabelMap.optional(),
    target_match_re: LabelMap.optional(),
    equal: z.array(z.string()).default([]),
  })
  .transform((r, ctx) => ({
    source: [
      ...(r.source ?? []),
      ...(r.source_matchers ?? []),
      ...legacyMatchers(r.source_match, undefined, ctx, 'source_match'),
      ...legacyMatchers(undefined, r.source_match_re, ctx, 'source_match_re'),
    ],
    target: [
      ...(r.target ?? []),
      ...(r.target_matchers ?? []),
      ...legacyMatchers(r.target_match, undefined, ctx, 'target_match'),
      ...legacyMatchers(undefined, r.target_match_re, ctx, 'target_match_re'),
    ],
    equal: r.equal,
  })) as never;

export interface RoutesFile {
  /** Every integration, by its own name (a receiver with one integration: the receiver's name). */
  receivers: Receiver[];
  /** Receiver name → its integrations' names (Alertmanager receivers hold several; none: a black hole). */
  integrations: Record<string, string[]>;
  route: RouteSpec;
  inhibit_rules: InhibitRule[];
  time_intervals: TimeInterval[];
  global: GlobalConfig;
  /** Written in Alertmanager's format (a receiver with `*_configs`, whatever the others): its defaults apply (group_by: none). */
  alertmanager: boolean;
  /** The file's text as loaded, for Alertmanager's status API (`amtool config routes` parses it). */
  original?: string;
  /** Alertmanager's `templates:`: globs of files of `define`d templates, relative to the routes file (loaded by loadRoutes). */
  templates?: string[];
}

const RawReceiver = z.looseObject({ name: z.string().min(1, 'missing name in receiver') });

/** Globs in `templates:`: Alertmanager setups name one or two directories. */
export const MAX_TEMPLATE_GLOBS = 16;

export const RoutesFile: z.ZodType<RoutesFile, unknown> = z
  .strictObject({
    global: GlobalConfig,
    templates: z.array(z.string().min(1).max(1024)).max(MAX_TEMPLATE_GLOBS).default([]),
    receivers: z.array(RawReceiver).min(1),
    route: Route,
    inhibit_rules: z.array(InhibitRule).default([]),
    time_intervals: z.array(TimeIntervalSchema).default([]),
    /** Alertmanager's older name for time_intervals. */
    mute_time_intervals: z.array(TimeIntervalSchema).default([]),
    /** A key of Alertmanager releases after 0.25: named, to be refused with why (below), not as an unknown key. */
    tracing: z.unknown().optional(),
  })
  .superRefine((file, ctx) => {
    if (file.tracing !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['tracing'],
        message: 'tracing is a key of Alertmanager releases after 0.25 (exporting traces of notifications); gpualert exports no traces, so it is refused',
      });
    }
  })
  .transform((file, ctx): RoutesFile => {
    // Any receiver in Alertmanager's form (`*_configs`) makes it an Alertmanager file: gpualert's own
    // receivers added to it change none of its defaults. So does a file of receivers with a name alone.
    const alertmanager =
      file.receivers.some((r) => Object.keys(r).some((k) => k.endsWith('_configs'))) || !file.receivers.some((r) => Object.hasOwn(r, 'channel'));
    const receivers: Receiver[] = [];
    const integrations = Object.create(null) as Record<string, string[]>;
    file.receivers.forEach((raw, i) => {
      if (Object.hasOwn(integrations, raw.name))
        ctx.addIssue({ code: 'custom', path: ['receivers', i, 'name'], message: `notification config name "${raw.name}" is not unique` });
      if (Object.hasOwn(raw, 'channel')) {
        const parsed = Receiver.safeParse(raw);
        if (!parsed.success) {
          for (const issue of parsed.error.issues)
            ctx.addIssue({ code: 'custom', path: ['receivers', i, ...issue.path.map((p) => (typeof p === 'number' ? p : String(p)))], message: issue.message });
          integrations[raw.name] = []; // named, so routes to it do not add a second error
          return;
        }
        receivers.push(parsed.data as Receiver);
        integrations[raw.name] = [raw.name];
        return;
      }
      for (const key of Object.keys(raw)) {
        if (key !== 'name' && !RECEIVER_CONFIG_KEYS.includes(key))
          ctx.addIssue({
            code: 'custom',
            path: ['receivers', i, key],
            message: `unknown key "${key}" (a receiver takes name and *_configs lists, or gpualert's channel and settings)`,
          });
      }
      const list = integrationsOf(raw, file.global, ctx, ['receivers', i]);
      receivers.push(...(list as Receiver[]));
      integrations[raw.name] = list.map((x) => x.name);
    });
    const route = alertmanager && file.route.group_by === undefined && !file.route.group_by_all ? { ...file.route, group_by: [] } : file.route;
    const out: RoutesFile = {
      receivers,
      integrations,
      route,
      inhibit_rules: file.inhibit_rules,
      global: file.global,
      alertmanager,
      time_intervals: [...file.time_intervals, ...file.mute_time_intervals],
      templates: file.templates,
    };
    attachTemplates(out.receivers, defaultTemplateSet(), (path, message) => {
      // A template from the `templates:` files is only known once loadRoutes reads them: it checks again then.
      if (file.templates.length === 0 || !/no such template/.test(message)) ctx.addIssue({ code: 'custom', path: [...path], message });
    });
    validate(out, file.time_intervals.length, ctx);
    return out;
  });

/** Compiles each integration's template fields against `set` and attaches them (not enumerable); problems reported at their field. */
export function attachTemplates(
  receivers: readonly Receiver[],
  set: Parameters<typeof compileFields>[1],
  problem: (path: readonly (string | number)[], message: string) => void,
): void {
  for (const receiver of receivers) {
    if (!receiver.templates) continue;
    const { compiled, problems } = compileFields(receiver.templates, set);
    for (const p of problems) problem(p.path, p.message);
    Object.defineProperty(receiver, 'compiled', { value: compiled, enumerable: false, configurable: true, writable: false });
  }
}

/** Alertmanager's checks (config/config.go), with its wording: they hold for gpualert's own files too. */
function validate(file: RoutesFile, firstMuteIndex: number, ctx: z.RefinementCtx): void {
  const intervals = new Set<string>();
  file.time_intervals.forEach((t, i) => {
    const path = i < firstMuteIndex ? ['time_intervals', i, 'name'] : ['mute_time_intervals', i - firstMuteIndex, 'name'];
    if (intervals.has(t.name)) ctx.addIssue({ code: 'custom', path, message: `time interval "${t.name}" is not unique` });
    intervals.add(t.name);
  });
  const root = file.route;
  if (!root.receiver) ctx.addIssue({ code: 'custom', path: ['route', 'receiver'], message: 'root route must specify a default receiver' });
  if (root.matchers.length > 0) ctx.addIssue({ code: 'custom', path: ['route', 'matchers'], message: 'root route must not have any matchers' });
  if (root.continue) ctx.addIssue({ code: 'custom', path: ['route', 'continue'], message: 'cannot have continue in root route' });
  if (root.mute_time_intervals.length > 0)
    ctx.addIssue({ code: 'custom', path: ['route', 'mute_time_intervals'], message: 'root route must not have any mute time intervals' });
  if (root.active_time_intervals.length > 0)
    ctx.addIssue({ code: 'custom', path: ['route', 'active_time_intervals'], message: 'root route must not have any active time intervals' });
  const walk = (route: RouteSpec, path: (string | number)[]) => {
    if (route.receiver && !Object.hasOwn(file.integrations, route.receiver))
      ctx.addIssue({ code: 'custom', path: [...path, 'receiver'], message: `undefined receiver "${route.receiver}" used in route` });
    if (route.group_interval === 0) ctx.addIssue({ code: 'custom', path: [...path, 'group_interval'], message: 'group_interval cannot be zero' });
    if (route.repeat_interval === 0) ctx.addIssue({ code: 'custom', path: [...path, 'repeat_interval'], message: 'repeat_interval cannot be zero' });
    for (const key of ['mute_time_intervals', 'active_time_intervals'] as const) {
      for (const name of route[key])
        if (!intervals.has(name)) ctx.addIssue({ code: 'custom', path: [...path, key], message: `undefined time interval "${name}" used in route` });
    }
    route.routes.forEach((child, i) => walk(child, [...path, 'routes', i]));
  };
  walk(root, ['route']);
}

export type { ResolvedRoute } from './notifier-types.ts';
