import type { Bus } from '@gpualert/bus';
import { envelopeMessage } from '@gpualert/bus';
import type { Logger } from '@gpualert/log';
import { newEnvelope, stableId, TOPICS, type JobEventData } from '@gpualert/schema';
import type { LineSource } from '../kernel/line-source.ts';
import type { JobPattern } from './job-patterns.ts';
import { readJobLine, recogniseJobLine, redrawsOf, toJobEventData, type JobLineMatch, type JobLogContext } from './match-job-line.ts';

export const JOB_COLLECTOR_SOURCE = 'collector-job/0.1.0';

export interface JobCollectorOptions {
  readonly bus: Bus;
  readonly source: LineSource;
  /** Where the source starts: a byte offset for a file (its end, so an old log is not replayed as new), undefined for a command. */
  readonly from?: number;
  readonly host: string;
  readonly labels?: Record<string, string>;
  readonly patterns: readonly JobPattern[];
  readonly context: JobLogContext;
  /**
   * Progress lines come many a second; one `step` event per interval (the newest) says as much.
   * Failures, checkpoints, restarts and exits are published at once.
   */
  readonly stepIntervalMs: number;
  readonly pollMs?: number;
  readonly log: Logger;
  readonly now?: () => number;
}

/** A line the collector recognised, its groups not read yet. */
export interface RecognisedLine {
  readonly position: number;
  readonly text: string;
  readonly pattern: JobPattern;
  /** Already read (every kind but `step`). */
  readonly match?: JobLineMatch;
}

/**
 * The pure part: which of a batch's recognised lines to publish now, given when a step was last
 * published. Every non-step line; of the step lines only the newest, and only once per interval
 * (else it is held for the next batch, and a newer one replaces it).
 */
export function selectJobLines(
  lines: readonly RecognisedLine[],
  held: RecognisedLine | undefined,
  lastStepAt: number | undefined,
  now: number,
  stepIntervalMs: number,
): { publish: RecognisedLine[]; held: RecognisedLine | undefined; stepPublished: boolean } {
  const publish: RecognisedLine[] = [];
  let latestStep = held;
  for (const line of lines) {
    if (line.pattern.kind === 'step') latestStep = line;
    else publish.push(line);
  }
  if (latestStep && (lastStepAt === undefined || now - lastStepAt >= stepIntervalMs)) {
    publish.push(latestStep);
    publish.sort((x, y) => x.position - y.position);
    return { publish, held: undefined, stepPublished: true };
  }
  return { publish, held: latestStep, stepPublished: false };
}

/** Follows a training log (a file, or a command it runs) and publishes `job.event`s on `gpualert.job.events`. */
export function startJobCollector(options: JobCollectorOptions): { stop(): Promise<void>; readonly published: () => number } {
  const now = options.now ?? Date.now;
  options.source.open(options.from);
  options.log.info({ source: options.source.id, job: options.context.job, from: options.from ?? 'start' }, 'job_collector_started');
  let stopped = false;
  let lastStepAt: number | undefined;
  let held: RecognisedLine | undefined;
  let published = 0;

  const publish = async (events: readonly { position: number; data: JobEventData }[]): Promise<void> => {
    if (events.length === 0) return;
    const ts = new Date(now()).toISOString();
    const messages = events.map((e) =>
      envelopeMessage(
        newEnvelope({
          type: 'job.event',
          id: stableId(options.host, options.context.job, options.source.id, e.position, ts),
          host: options.host,
          source: JOB_COLLECTOR_SOURCE,
          ts,
          labels: options.labels ?? {},
          data: e.data,
        }),
      ),
    );
    try {
      await options.bus.publish(TOPICS.jobEvents, messages);
      published += messages.length;
    } catch (error) {
      options.log.error({ error: String(error), events: messages.length }, 'job_events_publish_failed');
    }
  };

  const toEvents = (lines: readonly RecognisedLine[]) =>
    lines.flatMap((l) => {
      const match = l.match ?? readJobLine(l.text, l.pattern);
      return match ? [{ position: l.position, data: toJobEventData(match, options.context) }] : [];
    });

  const once = async (): Promise<number> => {
    const lines = await options.source.read();
    const recognised: RecognisedLine[] = [];
    for (const line of lines) {
      for (const part of redrawsOf(line.text)) {
        const found = recogniseJobLine(part, options.patterns);
        if (found) recognised.push({ position: line.position, ...found });
      }
    }
    const at = now();
    const selected = selectJobLines(recognised, held, lastStepAt, at, options.stepIntervalMs);
    held = selected.held;
    if (selected.stepPublished) lastStepAt = at;
    await publish(toEvents(selected.publish));
    return lines.length;
  };

  const loop = (async () => {
    while (!stopped) {
      const read = await once();
      if (read === 0) {
        const pollMs = options.pollMs ?? 200;
        if (options.source.waitForLines) await options.source.waitForLines(pollMs);
        else await new Promise((r) => setTimeout(r, pollMs));
      }
    }
  })();

  return {
    published: () => published,
    async stop() {
      stopped = true;
      await loop;
      await once(); // what arrived since: a command's last words
      if (held) await publish(toEvents([held])); // the newest progress is worth one more event
      held = undefined;
      await options.source.close();
    },
  };
}
