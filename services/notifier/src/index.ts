export { addSilence, expireSilence, loadSilences, SILENCES_KEY } from './silences.ts';
export { makeSilence } from './silence-guard.ts';
export { startNotifier, type RunningNotifier } from './notifier-service.ts';
export { createNotifierServer, NotifierConfigError, NotifierMetrics, type ReloadResult } from './notifier-http.ts';
export { alertEnvelope, alertQuery, listAlertGroups, listAlerts, type NotifierView } from './alertmanager-api.ts';
export { engineFleetSource } from './console/engine-fleet-source.ts';
export { FIRING_KEY, NotifierStateStore, STATE_KEY } from './notifier-state-store.ts';
export { GROUPS_KEY } from './saved-groups.ts';
