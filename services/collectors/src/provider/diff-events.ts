import type { ProviderEventData } from '@gpualert/schema';

/**
 * What changed between two polls of a metadata document: a new event as it stands (scheduled
 * or started), a status change, and an event that disappeared as completed — metadata services
 * signal completion by dropping the event (Azure, GCP, AWS moving it to history).
 */
export function diffEvents(previous: ReadonlyMap<string, ProviderEventData>, current: readonly ProviderEventData[]): ProviderEventData[] {
  const transitions: ProviderEventData[] = [];
  const now = new Set<string>();
  for (const event of current) {
    if (now.has(event.event_id)) continue; // the same event in two documents
    now.add(event.event_id);
    const before = previous.get(event.event_id);
    if (!before || before.status !== event.status) transitions.push(event);
  }
  for (const [id, before] of previous) {
    if (!now.has(id) && before.status !== 'completed' && before.status !== 'cancelled') {
      transitions.push({ ...before, status: 'completed' });
    }
  }
  return transitions;
}
