import type { NotifierState } from './notifier-types.ts';

/**
 * How long a page's resolve is remembered (`{status: 'resolved'}` in `pages`): a notifier replica
 * reading alerts further behind than this may page an old fault again; within it, the fault's old
 * firing is old news. An hour is far past a replica's wait and a partition's minutes.
 */
export const RESOLVED_PAGE_KEPT_MS = 60 * 60_000;

/** Forgets the resolves told longer ago than `keptMs`; returns how many. */
export function forgetResolvedPages(state: NotifierState, now: number, keptMs = RESOLVED_PAGE_KEPT_MS): number {
  let forgotten = 0;
  for (const key in state.pages) {
    const told = state.pages[key];
    if (told?.status === 'resolved' && now - told.at > keptMs) {
      delete state.pages[key];
      forgotten += 1;
    }
  }
  return forgotten;
}
