import { matchesAll } from './matchers.ts';
import type { ResolvedRoute, RouteSpec, TimeInterval } from './route-config.ts';

const DEFAULTS = { groupBy: ['host', 'category'], groupWait: 30_000, groupInterval: 300_000, repeatInterval: 14_400_000 };

/**
 * Alertmanager's tree walk: a route matches when its matchers do; its children are tried in
 * order and the first match wins unless it says `continue`; with no matching child the route
 * itself is the match. Settings are inherited down the tree.
 */
export function routesFor(root: RouteSpec, labels: Readonly<Record<string, string>>): ResolvedRoute[] {
  const out: ResolvedRoute[] = [];
  const walk = (route: RouteSpec, parent: ResolvedRoute, id: string): boolean => {
    if (!matchesAll(route.matchers, labels)) return false;
    const here: ResolvedRoute = {
      id,
      receiver: route.receiver ?? parent.receiver,
      groupBy: route.group_by ?? parent.groupBy,
      groupWait: route.group_wait ?? parent.groupWait,
      groupInterval: route.group_interval ?? parent.groupInterval,
      repeatInterval: route.repeat_interval ?? parent.repeatInterval,
      page: route.page ?? parent.page,
      criticalWithoutWait: route.critical_without_wait ?? parent.criticalWithoutWait,
      mute: [...parent.mute, ...route.mute_time_intervals],
      active: route.active_time_intervals.length > 0 ? route.active_time_intervals : parent.active,
    };
    let matchedChild = false;
    for (const [i, child] of route.routes.entries()) {
      if (walk(child, here, `${id}.${i}`)) {
        matchedChild = true;
        if (!child.continue) break;
      }
    }
    if (!matchedChild) out.push(here);
    return true;
  };
  walk(root, { id: 'root', receiver: root.receiver ?? '', page: false, criticalWithoutWait: false, mute: [], active: [], ...DEFAULTS }, 'root');
  return out;
}

/** Is `at` inside a named time interval (UTC weekdays and times)? */
export function inInterval(interval: TimeInterval, at: number): boolean {
  const date = new Date(at);
  const days = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
  if (interval.weekdays.length > 0 && !interval.weekdays.includes(days[date.getUTCDay()] as TimeInterval['weekdays'][number])) return false;
  if (interval.times.length === 0) return true;
  const minutes = date.getUTCHours() * 60 + date.getUTCMinutes();
  return interval.times.some(({ start, end }) => {
    const [sh, sm] = start.split(':').map(Number) as [number, number];
    const [eh, em] = end.split(':').map(Number) as [number, number];
    return minutes >= sh * 60 + sm && minutes < eh * 60 + em;
  });
}
