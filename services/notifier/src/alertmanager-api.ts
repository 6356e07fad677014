import { createHash } from 'node:crypto';
import { envelopeMessage, type Bus } from '@gpualert/bus';
import { formatMatcher, newMatcher, parseMatchers, type Dict, type MatchOp, type RoutesFile, type Silence } from '@gpualert/notify';
import { Envelope, newEnvelope, stableId, TOPICS, type EnvelopeOf, type Severity } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';
import { addSilence, expireSilence, loadSilences, SilenceError } from './silences.ts';

/**
 * Alertmanager's v2 HTTP API (api/v2/openapi.yaml) over gpualert's own pieces: alerts pushed by
 * Prometheus, vmalert or Grafana become alert envelopes on the alerts topic (so they are routed,
 * grouped, inhibited, silenced and paged like the engine's); silences are the notifier's silences.
 */

/** Alerts in one POST: Prometheus sends batches of 64 by default (max 256 per `alertmanager_config`); 1,000 leaves room and bounds one request's work. */
export const MAX_ALERTS_PER_POST = 1_000;
/** A POST of alerts: 1,000 alerts with their labels and annotations fit in 4 MiB; a larger body is refused unread. */
export const MAX_ALERTS_BODY_BYTES = 4 * 1024 * 1024;
/** The source every pushed alert carries, so the timeline and the records say where it came from. */
export const ALERTMANAGER_API_SOURCE = 'alertmanager-api';

const LabelSet = z.record(z.string(), z.string());
export const PostableAlert = z.object({
  labels: LabelSet,
  annotations: LabelSet.optional(),
  startsAt: z.string().optional(),
  endsAt: z.string().optional(),
  generatorURL: z.string().optional(),
});
export type PostableAlert = z.infer<typeof PostableAlert>;

const SEVERITY: Readonly<Record<string, Severity>> = { critical: 'critical', page: 'critical', error: 'error', major: 'error', warning: 'warning', warn: 'warning', minor: 'warning', info: 'info', none: 'info', informational: 'info' };

/** Alertmanager's fingerprint idea: the sorted label set, hashed. */
export function labelsFingerprint(labels: Readonly<Record<string, string>>): string {
  const text = Object.keys(labels).sort().map((k) => `${k}\u0000${labels[k]}`).join('\u0001');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/** One pushed alert as an envelope, or one line saying why not. `endsAt` at or before now resolves it. */
export function alertEnvelope(alert: PostableAlert, now: number): EnvelopeOf<'alert'> | string {
  const labels = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(alert.labels)) labels[k] = v;
  if (Object.keys(labels).length === 0) return 'an alert needs at least one label';
  const starts = alert.startsAt ? Date.parse(alert.startsAt) : now;
  const ends = alert.endsAt ? Date.parse(alert.endsAt) : Number.NaN;
  if (alert.startsAt && Number.isNaN(starts)) return `startsAt ${JSON.stringify(alert.startsAt.slice(0, 40))} is not a date`;
  if (alert.endsAt && Number.isNaN(ends) && !alert.endsAt.startsWith('0001-01-01')) return `endsAt ${JSON.stringify(alert.endsAt.slice(0, 40))} is not a date`;
  const resolved = !Number.isNaN(ends) && ends > 0 && ends <= now;
  const fingerprint = `am-${labelsFingerprint(labels)}`;
  const annotations = alert.annotations ?? {};
  const instance = labels.instance ?? '';
  const host = (Object.hasOwn(labels, 'host') ? labels.host! : instance.replace(/:\d+$/, '')) || labels.job || ALERTMANAGER_API_SOURCE;
  const name = labels.alertname ?? 'alert';
  const envelope = {
    type: 'alert' as const, id: stableId('am-alert', fingerprint, resolved ? 'resolved' : 'firing', resolved ? ends : starts), host: host.slice(0, 253),
    source: ALERTMANAGER_API_SOURCE, labels,
    data: {
      fingerprint, status: resolved ? 'resolved' as const : 'firing' as const, severity: SEVERITY[(labels.severity ?? '').toLowerCase()] ?? 'warning',
      category: 'other' as const, rule: name, summary: annotations.summary ?? annotations.description ?? name,
      ...(annotations.description ? { description: annotations.description } : {}),
      starts_at: new Date(starts).toISOString(), ...(resolved ? { ends_at: new Date(ends).toISOString() } : {}),
      evidence: alert.generatorURL ? [alert.generatorURL.slice(0, 2048)] : [],
    },
  };
  const checked = Envelope.safeParse(newEnvelope(envelope));
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    return `${issue.path.join('.')}: ${issue.message}`;
  }
  return checked.data as EnvelopeOf<'alert'>;
}

/** `POST /api/v2/alerts`: every alert checked first; one bad alert refuses the batch (400), as Alertmanager does. */
export async function postAlerts(bus: Bus, body: unknown, now: number): Promise<{ status: number; body: unknown }> {
  const list = z.array(PostableAlert).max(MAX_ALERTS_PER_POST).safeParse(body);
  if (!list.success) {
    const issue = list.error.issues[0]!;
    return { status: 400, body: { code: 400, message: `${issue.path.join('.') || 'body'}: ${issue.message}` } };
  }
  const envelopes: EnvelopeOf<'alert'>[] = [];
  for (const [i, alert] of list.data.entries()) {
    const envelope = alertEnvelope(alert, now);
    if (typeof envelope === 'string') return { status: 400, body: { code: 400, message: `alert ${i}: ${envelope}` } };
    envelopes.push(envelope);
  }
  if (envelopes.length > 0) await bus.publish(TOPICS.alerts, envelopes.map(envelopeMessage));
  return { status: 200, body: '' };
}

const ApiMatcher = z.object({ name: z.string().min(1), value: z.string(), isRegex: z.boolean(), isEqual: z.boolean().default(true) });
const PostableSilence = z.object({
  id: z.string().optional(),
  matchers: z.array(ApiMatcher).min(1, 'a silence needs at least one matcher'),
  startsAt: z.string(),
  endsAt: z.string(),
  createdBy: z.string(),
  comment: z.string(),
});

function apiMatchers(texts: readonly string[]) {
  return texts.flatMap((t) => {
    const parsed = parseMatchers(t);
    return typeof parsed === 'string' ? [] : parsed.map((m) => ({ name: m.label, value: m.value, isRegex: m.op === '=~' || m.op === '!~', isEqual: m.op === '=' || m.op === '=~' }));
  });
}

/** A silence as Alertmanager's API shows it (GettableSilence). */
export function gettableSilence(s: Silence, now: number) {
  const state = s.expiredAt !== undefined || s.endsAt <= now ? 'expired' : s.startsAt > now ? 'pending' : 'active';
  return {
    id: s.id, status: { state }, updatedAt: new Date(s.expiredAt ?? s.startsAt).toISOString(), matchers: apiMatchers(s.matchers),
    startsAt: new Date(s.startsAt).toISOString(), endsAt: new Date(s.endsAt).toISOString(), createdBy: s.createdBy, comment: s.comment,
  };
}

export async function listSilences(store: StateStore, filter: readonly string[], now: number): Promise<{ status: number; body: unknown }> {
  const all: Dict<Silence> = await loadSilences(store);
  const wanted = filter.flatMap((f) => {
    const parsed = parseMatchers(f);
    return typeof parsed === 'string' ? [] : parsed.map(formatMatcher);
  });
  const out = Object.values(all)
    .filter((s) => wanted.every((w) => s.matchers.flatMap((t) => { const p = parseMatchers(t); return typeof p === 'string' ? [] : p.map(formatMatcher); }).includes(w)))
    .map((s) => gettableSilence(s, now));
  return { status: 200, body: out };
}

/** `POST /api/v2/silences`: a new silence, or (with an id) the old one expired and replaced, as amtool's update does. */
export async function postSilence(store: StateStore, body: unknown, now: number): Promise<{ status: number; body: unknown }> {
  const parsed = PostableSilence.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { status: 400, body: `${issue.path.join('.') || 'body'}: ${issue.message}` };
  }
  const b = parsed.data;
  const matchers: string[] = [];
  for (const m of b.matchers) {
    const op: MatchOp = m.isRegex ? (m.isEqual ? '=~' : '!~') : m.isEqual ? '=' : '!=';
    const matcher = newMatcher(m.name, op, m.value);
    if (typeof matcher === 'string') return { status: 400, body: `matcher ${m.name}: ${matcher}` };
    matchers.push(formatMatcher(matcher));
  }
  const startsAt = Math.max(Date.parse(b.startsAt), now);
  const endsAt = Date.parse(b.endsAt);
  if (Number.isNaN(startsAt) || Number.isNaN(endsAt)) return { status: 400, body: 'startsAt and endsAt must be RFC 3339 times' };
  if (endsAt <= startsAt) return { status: 400, body: 'end time must not be before start time, nor in the past' };
  try {
    const silence = await addSilence(store, { matchers, durationMs: endsAt - startsAt, startsAt, createdBy: b.createdBy, comment: b.comment }, now);
    if (b.id) await expireSilence(store, b.id, now);
    return { status: 200, body: { silenceID: silence.id } };
  } catch (error) {
    if (error instanceof SilenceError) return { status: 400, body: error.message };
    throw error;
  }
}

export async function getSilence(store: StateStore, id: string, now: number): Promise<{ status: number; body: unknown }> {
  const silence = (await loadSilences(store))[id];
  return silence ? { status: 200, body: gettableSilence(silence, now) } : { status: 404, body: `silence ${id} not found` };
}

export async function deleteSilence(store: StateStore, id: string, now: number): Promise<{ status: number; body: unknown }> {
  const silence = await expireSilence(store, id, now);
  return silence ? { status: 200, body: '' } : { status: 404, body: `silence ${id} not found` };
}

const STARTED = Date.now();
/** `GET /api/v2/status`: no cluster (one notifier), the version and the routes file as loaded. */
export function status(routes: RoutesFile | undefined, version: string) {
  return {
    cluster: { status: 'disabled', peers: [], name: 'gpualert' },
    versionInfo: { version, revision: '', branch: '', buildUser: '', buildDate: '', goVersion: `gpualert on node ${process.version}` },
    config: { original: routes ? `# gpualert: ${routes.receivers.length} integrations, ${routes.inhibit_rules.length} inhibit rules\n` : '' },
    uptime: new Date(STARTED).toISOString(),
  };
}

export function receivers(routes: RoutesFile | undefined) {
  return Object.keys(routes?.integrations ?? {}).map((name) => ({ name }));
}
