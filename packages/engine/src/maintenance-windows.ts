import type { EnvelopeOf } from '@gpualert/schema';
import type { HostState, MaintenanceWindow } from './engine-state.ts';

/**
 * Maintenance windows one host keeps: a provider announces a few a month, and each is looked at
 * for every alert, so a stream of made-up event ids must not grow the state (and each alert's cost) without end.
 */
export const MAX_MAINTENANCE_WINDOWS_PER_HOST = 32;

/** A provider event's window, kept on the host; the ids of the windows forgotten to keep the bound. */
export function keepWindow(host: HostState, data: EnvelopeOf<'provider.event'>['data']): { window: MaintenanceWindow; forgotten: string[]; moved: boolean } {
  const before = Object.hasOwn(host.maintenance, data.event_id) ? host.maintenance[data.event_id] : undefined;
  const window: MaintenanceWindow = {
    status: data.status,
    description: `${data.provider} ${data.kind} ${data.status}: ${data.description}${data.window_start ? ` (window ${data.window_start}${data.window_end ? ` – ${data.window_end}` : ''})` : ''}`,
    ...(data.window_start ? { start: Date.parse(data.window_start) } : {}),
    ...(data.window_end ? { end: Date.parse(data.window_end) } : {}),
  };
  host.maintenance[data.event_id] = window;
  // Rescheduled: the alert says its new window, and the notifier's silence moves with it.
  const moved = before !== undefined && (before.start !== window.start || before.end !== window.end);
  return { window, forgotten: forgetOldWindows(host.maintenance, data.event_id), moved };
}

/** Past the bound, closed windows go first (oldest first), then the oldest open ones; never `keep`. The ids forgotten. */
function forgetOldWindows(windows: Record<string, { status: string }>, keep: string): string[] {
  const ids = Object.keys(windows);
  let excess = ids.length - MAX_MAINTENANCE_WINDOWS_PER_HOST;
  const forgotten: string[] = [];
  const forget = (id: string) => {
    delete windows[id];
    forgotten.push(id);
    excess -= 1;
  };
  for (const id of ids) {
    if (excess <= 0) break;
    if (id !== keep && (windows[id]?.status === 'completed' || windows[id]?.status === 'cancelled')) forget(id);
  }
  for (const id of ids) {
    if (excess <= 0) break;
    if (id !== keep && id in windows) forget(id);
  }
  return forgotten;
}
