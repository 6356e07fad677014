import type { Bus } from '@gpualert/bus';
import { GpualertError, MAX_GPUS_PER_SAMPLE, MAX_HOST_LENGTH, parseEnvelope, TOPICS, validateEnvelope, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { render, type Format } from './formats.ts';
import { incidentRange, resolveIncident } from './incident-scope.ts';
import { buildTimeline, type Timeline, type TimelineQuery } from './timeline.ts';

export class UnknownIncidentError extends GpualertError {
  constructor(message: string) {
    super('GA-INCIDENT-UNKNOWN', message);
  }
}

const READ = [
  TOPICS.kernelEvents,
  TOPICS.providerEvents,
  TOPICS.hostInventory,
  TOPICS.alerts,
  TOPICS.notifications,
  TOPICS.gpuSamples,
  TOPICS.jobEvents,
  TOPICS.actions,
];
/** What tells who was told and what they did: read past the incident's window (see TimelineQuery.recordsTo). */
const RECORDS: readonly string[] = [TOPICS.notifications];
/** Topics a deployment may not have yet (the remediator's, created when it first runs): missing, they are empty. */
const MAY_BE_MISSING: ReadonlySet<string> = new Set([TOPICS.actions]);

/** Reads every topic's messages in the range (by timestamp offsets on Kafka) as envelopes. */
export async function readRange(
  bus: Bus,
  query: TimelineQuery,
  topics: readonly string[],
  progress?: (topic: string, count: number) => void,
): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for (const topic of topics) {
    const messages = await bus.read(topic, { from: query.from, to: query.to }).catch((error: unknown) => {
      if (MAY_BE_MISSING.has(topic) && /UNKNOWN_TOPIC|does not host this topic|not exist/i.test(String(error))) return [];
      throw error;
    });
    for (const m of messages) {
      const envelope =
        quickSample(m.value) ??
        (() => {
          const parsed = parseEnvelope(m.value);
          return parsed.ok ? parsed.value : undefined;
        })();
      if (envelope) out.push(envelope);
    }
    progress?.(topic, messages.length);
  }
  return out;
}

/**
 * The whole export: narrow to an incident if asked, read, merge, summarise, render. An incident
 * (`incident`: any of its alerts' fingerprints) is read over its own window (`incidentRange`), and
 * who was told about it and what they did from that window's start up to `now`.
 */
export async function exportTimeline(
  bus: Bus,
  request: { from: number; to: number; host?: string; incident?: string; job?: string; format: Format; now?: number },
  progress?: (topic: string, count: number) => void,
): Promise<{ timeline: Timeline; text: string }> {
  let query: TimelineQuery = {
    from: request.from,
    to: request.to,
    ...(request.host ? { host: request.host } : {}),
    ...(request.job !== undefined ? { job: request.job } : {}),
  };
  let incident: EnvelopeOf<'alert'> | undefined;
  let envelopes: Envelope[];
  if (request.incident) {
    const alerts = (await readRange(bus, query, [TOPICS.alerts])).filter((e): e is EnvelopeOf<'alert'> => e.type === 'alert');
    const scope = resolveIncident(alerts, request.incident);
    if (!scope) {
      throw new UnknownIncidentError(
        `no alert with fingerprint ${request.incident} between ${new Date(request.from).toISOString()} and ${new Date(request.to).toISOString()}`,
      );
    }
    const range = incidentRange(scope);
    const recordsTo = Math.max(range.to, request.now ?? Date.now());
    query = { ...range, incident: scope, recordsTo, ...(request.job !== undefined ? { job: request.job } : {}) };
    incident = scope.alerts.find((a) => a.data.fingerprint === scope.root) ?? scope.alerts.find((a) => a.data.fingerprint === request.incident);
    envelopes = [
      ...(await readRange(
        bus,
        query,
        READ.filter((topic) => !RECORDS.includes(topic)),
        progress,
      )),
      ...(await readRange(bus, { from: range.from, to: recordsTo }, RECORDS, progress)),
    ];
  } else {
    envelopes = await readRange(bus, query, READ, progress);
  }
  const timeline = buildTimeline(envelopes, query, incident);
  return { timeline, text: render(timeline, request.format) };
}

/**
 * GPU samples are most of what a timeline reads and only their numbers are used (each checked
 * to be a number when summarised): a structural check instead of the full schema keeps a day
 * of a fleet fast. Anything that is not plainly a sample takes the full validation.
 */
function quickSample(bytes: Buffer): Envelope | undefined {
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
  const e = json as { type?: unknown; id?: unknown; ts?: unknown; host?: unknown; data?: { gpus?: unknown } };
  if (
    e.type === 'gpu.sample' &&
    typeof e.id === 'string' &&
    typeof e.ts === 'string' &&
    typeof e.host === 'string' &&
    e.host.length <= MAX_HOST_LENGTH &&
    Array.isArray(e.data?.gpus) &&
    e.data.gpus.length <= MAX_GPUS_PER_SAMPLE && // the bounds at the door hold here too
    (e.data.gpus as unknown[]).every((g) => typeof g === 'object' && g !== null && typeof (g as { index?: unknown }).index === 'number')
  ) {
    return json as Envelope;
  }
  const validated = validateEnvelope(json);
  return validated.ok ? validated.value : undefined;
}
