import type { Bus } from '@gpualert/bus';
import { parseEnvelope, TOPICS, type Envelope, type EnvelopeOf } from '@gpualert/schema';
import { render, type Format } from './formats.ts';
import { buildTimeline, incidentWindow, type Timeline, type TimelineQuery } from './timeline.ts';

export class UnknownIncidentError extends Error {
  readonly code = 'GPUALERT_UNKNOWN_INCIDENT';
}

const READ = [TOPICS.kernelEvents, TOPICS.providerEvents, TOPICS.hostInventory, TOPICS.alerts, TOPICS.notifications, TOPICS.gpuSamples];

/** Reads every topic's messages in the range (by timestamp offsets on Kafka) as envelopes. */
export async function readRange(bus: Bus, query: TimelineQuery, topics: readonly string[], progress?: (topic: string, count: number) => void): Promise<Envelope[]> {
  const out: Envelope[] = [];
  for (const topic of topics) {
    const messages = await bus.read(topic, { from: query.from, to: query.to });
    for (const m of messages) {
      const parsed = parseEnvelope(m.value);
      if (parsed.ok) out.push(parsed.value);
    }
    progress?.(topic, messages.length);
  }
  return out;
}

/** The whole export: narrow to an incident if asked, read, merge, summarise, render. */
export async function exportTimeline(
  bus: Bus,
  request: { from: number; to: number; host?: string; incident?: string; format: Format },
  progress?: (topic: string, count: number) => void,
): Promise<{ timeline: Timeline; text: string }> {
  let query: TimelineQuery = { from: request.from, to: request.to, ...(request.host ? { host: request.host } : {}) };
  let incident: EnvelopeOf<'alert'> | undefined;
  if (request.incident) {
    const alerts = (await readRange(bus, query, [TOPICS.alerts])).filter((e): e is EnvelopeOf<'alert'> => e.type === 'alert');
    const window = incidentWindow(alerts, request.incident);
    if (!window) {
      throw new UnknownIncidentError(`no alert with fingerprint ${request.incident} between ${new Date(request.from).toISOString()} and ${new Date(request.to).toISOString()}`);
    }
    query = window.query;
    incident = window.alert;
  }
  const timeline = buildTimeline(await readRange(bus, query, READ, progress), query, incident);
  return { timeline, text: render(timeline, request.format) };
}
