import { matchesAll } from './matchers.ts';
import type { ResolvedRoute, RouteSpec } from './route-config.ts';

/** gpualert's own default grouping; a file in Alertmanager's format gets Alertmanager's (none), set at load. */
const DEFAULTS = { groupBy: ['host', 'category'], groupWait: 30_000, groupInterval: 300_000, repeatInterval: 14_400_000 };

/**
 * Alertmanager's tree walk (dispatch/route.go): a route matches when its matchers do; its children
 * are tried in order and the first match wins unless it says `continue`; with no matching child
 * the route itself is the match. Receiver, grouping and timings are inherited down the tree; mute
 * and active time intervals are not (each route names its own, as in Alertmanager).
 */
export function routesFor(root: RouteSpec, labels: Readonly<Record<string, string>>): ResolvedRoute[] {
  const out: ResolvedRoute[] = [];
  const walk = (route: RouteSpec, parent: ResolvedRoute, id: string): boolean => {
    if (!matchesAll(route.matchers, labels)) return false;
    const here = resolve(route, parent, id);
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
  walk(root, rootParent(root), 'root');
  return out;
}

function rootParent(root: RouteSpec): ResolvedRoute {
  return { id: 'root', receiver: root.receiver ?? '', page: false, criticalWithoutWait: false, mute: [], active: [], groupByAll: false, ...DEFAULTS };
}

function resolve(route: RouteSpec, parent: ResolvedRoute, id: string): ResolvedRoute {
  const ownGroupBy = route.group_by_all === true || route.group_by !== undefined;
  return {
    id,
    receiver: route.receiver ?? parent.receiver,
    groupBy: ownGroupBy ? (route.group_by ?? []) : parent.groupBy,
    groupByAll: ownGroupBy ? route.group_by_all === true : parent.groupByAll,
    groupWait: route.group_wait ?? parent.groupWait,
    groupInterval: route.group_interval ?? parent.groupInterval,
    repeatInterval: route.repeat_interval ?? parent.repeatInterval,
    page: route.page ?? parent.page,
    criticalWithoutWait: route.critical_without_wait ?? parent.criticalWithoutWait,
    mute: route.mute_time_intervals,
    active: route.active_time_intervals,
  };
}

/** Every route of the tree with its settings resolved, depth first (for `gpualert routes show`). */
export function walkRoutes(root: RouteSpec, visit: (route: RouteSpec, resolved: ResolvedRoute, depth: number) => void): void {
  const walk = (route: RouteSpec, parent: ResolvedRoute, id: string, depth: number) => {
    const here = resolve(route, parent, id);
    visit(route, here, depth);
    route.routes.forEach((child, i) => walk(child, here, `${id}.${i}`, depth + 1));
  };
  walk(root, rootParent(root), 'root', 0);
}
