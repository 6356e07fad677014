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
/**
 * The fleet's periodic metrics, nearly all of what an hour holds: an incident's export reads them
 * one of its hosts at a time (by key, which on Kafka fetches that host's partition only). The
 * event topics are read whole: events, not every GPU every 10 s.
 */
const BY_HOST: ReadonlySet<string> = new Set([TOPICS.gpuSamples]);
/**
 * The most hosts an incident's export reads one at a time (at once: each read is its own Kafka
 * reader). Each costs one partition's messages, so past this the topic is read once, whole, and
 * the incident's hosts kept from it: the same export, at the fleet's cost.
 */
export const MAX_HOSTS_READ_BY_KEY = 8;

async function readTopic(bus: Bus, topic: string, options: { from: number; to: number; key?: string }) {
  return bus.read(topic, options).catch((error: unknown) => {
    if (MAY_BE_MISSING.has(topic) && /UNKNOWN_TOPIC|does not host this topic|not exist/i.test(String(error))) return [];
    throw error;
  });
}

/**
 * Reads every topic's messages in the range (by timestamp offsets on Kafka) as envelopes; with
 * `hosts`, the `BY_HOST` topics only those hosts' messages, one read per host.
 */
export async function readRange(
  bus: Bus,
  query: TimelineQuery,
  topics: readonly string[],
  progress?: (topic: string, count: number) => void,
  hosts?: readonly string[],
): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for (const topic of topics) {
    const range = { from: query.from, to: query.to };
    const messages =
      hosts && BY_HOST.has(topic)
        ? (await Promise.all(hosts.map((key) => readTopic(bus, topic, { ...range, key })))).flat()
        : await readTopic(bus, topic, range);
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
 * (`incident`: any of its alerts' fingerprints) is read over its own window (`incidentRange`), its
 * samples its hosts' only (up to `MAX_HOSTS_READ_BY_KEY`), and who was told about it and what they
 * did from that window's start up to `now`.
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
    // Its hosts' samples only, while they are few; more, and the whole fleet's as before (same export).
    const hosts = scope.hosts.size <= MAX_HOSTS_READ_BY_KEY ? [...scope.hosts].sort() : undefined;
    envelopes = [
      ...(await readRange(
        bus,
        query,
        READ.filter((topic) => !RECORDS.includes(topic)),
        progress,
        hosts,
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
