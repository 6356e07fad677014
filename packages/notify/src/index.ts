export { formatMatcher, matches, matchesAll, matchesValue, newMatcher, parseMatcher, parseMatchers, type Matcher, type MatchOp } from './matchers.ts';
export { ALERTMANAGER_API_SOURCE } from './alert-labels.ts';
export {
  dict,
  type AlertAbout,
  type AlertMarkers,
  type AlertView,
  type Dict,
  type Notification,
  type NotifierState,
  type ResolvedRoute,
  type Silence,
  type Told,
} from './notifier-types.ts';
export { RoutesFile, type RouteSpec } from './route-config.ts';
export { routesFor, walkRoutes } from './routing.ts';
export { emptyNotifierState, loadNotifierState, NotifierCore, saveNotifierState, type Decision } from './notifier-core.ts';
export { forgetResolvedPages, RESOLVED_PAGE_KEPT_MS } from './resolved-pages.ts';
export {
  MAX_SAVED_ALERTS,
  MAX_SAVED_ALERTS_PER_GROUP,
  MAX_SAVED_ENTRY_CHARS,
  MAX_SAVED_GROUPS,
  MAX_SAVED_SILENCES,
  NOTIFIER_STATE,
  SavedNotification,
  SILENCE,
} from './saved-notifier-state.ts';
export { DEFAULT_ROUTES, loadRoutes } from './load-routes.ts';
export type { Channel, DeliveryResult } from './channels/channel.ts';
export { createChannel, ReceiverConfigError } from './channels/registry.ts';
export { rateLimitOf, type RateLimit } from './channels/rate-limits.ts';
export { alertmanagerPayload } from './channels/webhook.ts';
export { checkSilence, type SilenceInput } from './silence-check.ts';
export { describeReach, ReachCounter, silenceMatchers, tooBroad, type SilenceReach } from './silence-reach.ts';
export { channelSettings } from './channels/channel-settings.ts';
