import { envelopeMessage } from '@gpualert/bus';
import { TOPICS, type EnvelopeOf } from '@gpualert/schema';
import type { FaultPipeline, Service } from './fault-pipeline.ts';
import { waitFor } from '../infra/wait-for.ts';

/**
 * The paging load the notifier cases share: faults published one every 250 ms, each resolved
 * 2.5 s after it fired: 80 events, under PagerDuty's documented 120 a minute per routing key (the
 * loopback pager answers 429 past it).
 */
export const FAULTS = 40;
const EVERY_MS = 250;
const RESOLVE_AFTER_MS = 2_500;

export const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

type FaultAlert = (i: number, status: 'firing' | 'resolved') => EnvelopeOf<'alert'>;

/**
 * Publishes the faults and their resolves, calling `during(i)` after each fault is out (where a
 * case throttles the pager or kills something); resolves once every resolve is published.
 */
export async function publishFaults(pipeline: FaultPipeline, alert: FaultAlert, during: (i: number) => Promise<void> | void = () => {}): Promise<void> {
  const resolves: Promise<void>[] = [];
  for (let i = 0; i < FAULTS; i += 1) {
    await pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(alert(i, 'firing'))]);
    resolves.push(pause(RESOLVE_AFTER_MS).then(() => pipeline.bus.publish(TOPICS.alerts, [envelopeMessage(alert(i, 'resolved'))])));
    await during(i);
    await pause(EVERY_MS);
  }
  await Promise.all(resolves);
}

/** What the loopback pager was sent for these faults, per dedup key, in order (trigger, resolve…). */
export function pagerActions(pipeline: FaultPipeline, alert: FaultAlert): Map<string, string[]> {
  const fingerprints = new Set(Array.from({ length: FAULTS }, (_, i) => alert(i, 'firing').data.fingerprint));
  const perKey = new Map<string, string[]>();
  for (const r of pipeline.vendors.of('pagerduty')) {
    if (fingerprints.has(r.body.dedup_key)) perKey.set(r.body.dedup_key, [...(perKey.get(r.body.dedup_key) ?? []), r.body.event_action]);
  }
  return perKey;
}

/** Waits until every fault was triggered and resolved at the pager; on a time-out, `more()` is added to the error (a service's log). */
export async function everyFaultPagedAndResolved(pipeline: FaultPipeline, alert: FaultAlert, timeoutMs: number, more: () => string): Promise<void> {
  const keysWith = (action: string) => [...pagerActions(pipeline, alert).values()].filter((actions) => actions.includes(action)).length;
  await waitFor(
    () => keysWith('trigger') === FAULTS && keysWith('resolve') === FAULTS,
    `every fault paged and resolved (paged ${keysWith('trigger')}, resolved ${keysWith('resolve')} of ${FAULTS})`,
    timeoutMs,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${more()}`);
  });
}

/** The dedup keys the pager was told more than once to `action`. */
export function sentTwice(perKey: ReadonlyMap<string, readonly string[]>, action: string): string[] {
  return [...perKey].filter(([, actions]) => actions.filter((x) => x === action).length > 1).map(([key]) => key);
}

/** The replicas a notifier's last `cluster_members` line lists. */
export function membersOf(service: Service): string[] {
  const lines = service
    .output()
    .split('\n')
    .filter((l) => l.includes('"cluster_members"'))
    .map((l) => JSON.parse(l) as { members: string[] });
  return lines.at(-1)?.members ?? [];
}
