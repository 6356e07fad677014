import { PROVIDER_EVENT_KINDS, PROVIDER_EVENT_STATUSES } from '@gpualert/schema';
import { z } from 'zod';
import { event, invalid, ok, type ProviderAdapter } from './adapter.ts';
import { addMs, toIsoUtc } from './times.ts';

const time = z.string().refine((v) => toIsoUtc(v) !== undefined, 'expected a time (RFC 3339 or RFC 1123)');

/**
 * gpualert's own format for every provider without an adapter (documented in
 * docs/provider-events.md): one event or `{ events: [...] }`.
 */
/** The longest window a notice may announce: a year (a retirement is weeks ahead; 1e308 s is a typo or an attack). */
export const MAX_WINDOW_SECONDS = 366 * 86_400;

export const GenericEvent = z
  .object({
    event_id: z.string().min(1).max(255),
    kind: z.enum(PROVIDER_EVENT_KINDS),
    status: z.enum(PROVIDER_EVENT_STATUSES),
    hosts: z.array(z.string().min(1)).min(1),
    window_start: time.optional(),
    window_end: time.optional(),
    duration_seconds: z.number().positive().max(MAX_WINDOW_SECONDS, `expected at most ${MAX_WINDOW_SECONDS} seconds (a year)`).optional(),
    description: z.string().default(''),
  })
  .refine(
    (e) => e.window_start === undefined || e.window_end === undefined || Date.parse(toIsoUtc(e.window_end) ?? '') >= Date.parse(toIsoUtc(e.window_start) ?? ''), // NaN, refused, where one does not read
    { message: 'expected window_end at or after window_start', path: ['window_end'] },
  );

const GenericPayload = z.union([GenericEvent, z.object({ events: z.array(GenericEvent) })]);

export const genericAdapter: ProviderAdapter = (payload) => {
  const result = GenericPayload.safeParse(payload);
  if (!result.success) {
    // Report against the single-event shape unless the payload tried to be a list.
    const list = typeof payload === 'object' && payload !== null && 'events' in payload;
    const single = list ? z.object({ events: z.array(GenericEvent) }).safeParse(payload) : GenericEvent.safeParse(payload);
    const issue = (single.success ? result.error : single.error).issues[0];
    return invalid(issue?.path.map(String).join('.') ?? '', issue?.message ?? 'invalid');
  }
  const items = 'events' in result.data ? result.data.events : [result.data];
  return ok(
    items.map((item) => {
      const start = item.window_start ? toIsoUtc(item.window_start) : undefined;
      const end = item.window_end ? toIsoUtc(item.window_end) : addMs(start, item.duration_seconds === undefined ? undefined : item.duration_seconds * 1000);
      return event({
        provider: 'generic',
        event_id: item.event_id,
        kind: item.kind,
        status: item.status,
        hosts: item.hosts,
        window_start: start,
        window_end: end,
        description: item.description,
        raw_id: item.event_id,
      });
    }),
  );
};
