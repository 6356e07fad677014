import type { Logger } from '@gpualert/log';
import { dict, emptyNotifierState, MAX_SAVED_ALERTS, MAX_SAVED_GROUPS, NOTIFIER_STATE, type Dict, type NotifierState, type Silence } from '@gpualert/notify';
import { decodeVersioned, encodeVersioned, type VersionedState } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { GROUP_ALERTS_KEY, GROUPS_KEY, SavedGroups, type GroupChanges, type Unreadable } from './saved-groups.ts';
import { SavedSection, type Section, type SectionChanges } from './saved-sections.ts';
import { loadSilences } from './silences.ts';
import { must } from './must.ts';

/**
 * The state besides groups, firing alerts and silences (pages, the inhibition index). A key of its
 * own, not `notifier:state`: during a rolling upgrade a notifier of version 1 still writes its
 * whole state there, and must neither be read as this layout nor make a new notifier migrate again.
 */
export const STATE_KEY = 'notifier:state:rest';
export { GROUP_ALERTS_KEY, GROUPS_KEY } from './saved-groups.ts';
/** Up to version 1 the whole state, one document: migrated once, when no notifier of this layout has run. */
export const LEGACY_STATE_KEY = 'notifier:state';
/** One field per firing alert (its labels and what the alert list shows), keyed by fingerprint. */
export const FIRING_KEY = 'notifier:firing';

const LAYOUT = NOTIFIER_STATE.layout;
type FiringAlert = typeof LAYOUT.firingAlert extends VersionedState<infer T> ? T : never;
type Rest = typeof LAYOUT.rest extends VersionedState<infer T> ? T : never;

/**
 * Alert fields of all groups loaded at most: an alert routed to k receivers is k fields, so ten
 * times the firing alerts' bound (the characters' bound below holds the memory whatever the count).
 */
const MAX_GROUP_ALERT_FIELDS = 10 * MAX_SAVED_ALERTS;
/** Whole part of the largest state loaded, over every field (the one document's bound before). */
const MAX_STATE_CHARS = LAYOUT.rest.maxChars;
/** How many unreadable fields one warning line names (the count is always whole). */
const MAX_NAMED_IN_WARNING = 5;

const FIRING: Section<FiringAlert> = {
  key: FIRING_KEY,
  spec: LAYOUT.firingAlert,
  bound: MAX_SAVED_ALERTS,
  fields: (state) => Object.keys(state.firing),
  has: (state, field) => Object.hasOwn(state.firing, field),
  stamp: (state, field) => [state.firing[field], state.about[field]],
  same: (state, field, stamp) => stamp[0] === state.firing[field] && stamp[1] === state.about[field],
  value: (state, field) => {
    const labels = must(state.firing[field], 'a field saved as a firing alert to be one');
    const about = state.about[field];
    return about ? { labels, about } : { labels };
  },
  put: (state, field, value) => {
    state.firing[field] = value.labels;
    if (value.about) state.about[field] = value.about;
    else delete state.about[field];
  },
  remove: (state, field) => {
    delete state.firing[field];
    delete state.about[field];
  },
  belongs: () => true,
};

/** The rest's content as identities: pages are replaced when told, the index's lists replaced or pushed to. */
function restStamp(state: NotifierState): unknown[] {
  const stamp: unknown[] = [];
  for (const key in state.pages) stamp.push(key, state.pages[key]);
  stamp.push(undefined); // where the pages end
  for (const key in state.sources) {
    const list = state.sources[key];
    stamp.push(key, list, list?.length);
  }
  return stamp;
}

function sameStamp(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** What one step wrote, for the bench and the metrics: fields set and deleted, characters written. */
export interface SaveFigures {
  readonly fields: number;
  readonly deleted: number;
  readonly chars: number;
}

/**
 * The notifier's state in the store, saved per step as what the step changed: the groups and the
 * firing alerts one hash field each, the rest one document (layouts in @gpualert/notify's
 * saved-notifier-state.ts). It remembers the text last committed per field, so a failed step is
 * rolled back from those texts alone, and the API reads the state as last committed.
 */
export class NotifierStateStore {
  private readonly groups = new SavedGroups();
  private readonly firing = new SavedSection(FIRING);
  private rest: { text: string; stamp: unknown[]; view?: Rest } | undefined;
  /** Whether what the store holds at STATE_KEY is unknown (a failed write): written at the next step. */
  private restUncertain = false;
  /**
   * The silences as last committed. Each step starts from the store's silences, new objects (see
   * the service's `currentSilences`), so the core, which expires silences in place, never touches
   * these again; a rollback puts back copies.
   */
  private silences: Dict<Silence> = dict();
  private inFlight: { groups: GroupChanges; firing: SectionChanges; rest: string | undefined } | undefined;
  private view: { generation: number; state: NotifierState } | undefined;
  private generation = 0;

  constructor(
    private readonly store: StateStore,
    private readonly log: Logger,
  ) {}

  /**
   * The state as saved. A store written by gpualert up to version 1 (one document, the whole state)
   * is migrated to this layout once (`state_migrated`); a rest that does not read, or fields past the
   * bounds, rebuild the whole state empty (`state_rebuilt`), as the one document did; a group or a
   * firing alert that does not read is dropped alone, with one warning line for all of them.
   */
  async load(): Promise<NotifierState> {
    const text = await this.store.get(STATE_KEY);
    // None: a first start, or a store an older gpualert wrote (the whole state in one document), migrated once.
    let rest: Rest = { pages: emptyNotifierState().pages, sources: emptyNotifierState().sources };
    if (text === null) {
      const legacy = await this.store.get(LEGACY_STATE_KEY);
      const whole = legacy === null ? undefined : decodeVersioned(NOTIFIER_STATE, legacy);
      if (whole?.ok) return this.migrate(whole.value, whole.migratedFrom ?? NOTIFIER_STATE.version);
      if (whole !== undefined && whole.newer !== true) return this.fresh(whole.reason, LEGACY_STATE_KEY);
    } else {
      const read = decodeVersioned(LAYOUT.rest, text);
      if (!read.ok) return this.fresh(read.reason);
      rest = read.value;
    }
    const state: NotifierState = { ...emptyNotifierState(), ...rest };
    let chars = text?.length ?? 0;
    const groups = Object.entries(await this.store.hashGetAll(GROUPS_KEY));
    const groupAlerts = Object.entries(await this.store.hashGetAll(GROUP_ALERTS_KEY));
    const firing = Object.entries(await this.store.hashGetAll(FIRING_KEY));
    for (const [key, fields, bound] of [
      [GROUPS_KEY, groups, MAX_SAVED_GROUPS],
      [GROUP_ALERTS_KEY, groupAlerts, MAX_GROUP_ALERT_FIELDS],
      [FIRING_KEY, firing, FIRING.bound],
    ] as const) {
      if (fields.length > bound) return this.fresh(`${key}: ${fields.length} fields, over the bound of ${bound}`);
      for (const [, t] of fields) chars += t.length;
    }
    if (chars > MAX_STATE_CHARS) return this.fresh(`${chars} characters, over the bound of ${MAX_STATE_CHARS}`);
    const read = this.groups.load(state, groups, groupAlerts);
    await this.dropUnreadable(read.unreadable);
    await this.loadFields(state, this.firing, firing);
    if (read.split > 0) await this.splitGroups(state, read.split);
    // An inhibition source whose firing alert was dropped would inhibit until it resolved, which it never would here.
    let pruned = false;
    for (const key of Object.keys(state.sources)) {
      const list = state.sources[key];
      if (!list) continue;
      const firing = list.filter((fp) => Object.hasOwn(state.firing, fp));
      if (firing.length === list.length) continue;
      pruned = true;
      if (firing.length > 0) state.sources[key] = firing;
      else delete state.sources[key];
    }
    // Committed as read (the view is read from the text: it shares nothing with the state the core changes);
    // pruned, the document in the store still names them, so the first step writes it.
    this.rest = text === null ? undefined : { text, stamp: restStamp(state) };
    this.restUncertain = pruned;
    state.silences = await loadSilences(this.store);
    this.commitSilences(state);
    return state;
  }

  private async loadFields<V>(state: NotifierState, saved: SavedSection<V>, fields: [string, string][]): Promise<void> {
    const s = saved.section;
    const unreadable: Unreadable[] = [];
    for (const [field, text] of fields) {
      const loaded = decodeVersioned(s.spec, text);
      if (loaded.ok && s.belongs(field, loaded.value)) {
        s.put(state, field, loaded.value);
        saved.adopt(state, field, text);
      } else {
        unreadable.push({ key: s.key, field, reason: loaded.ok ? 'saved under another key' : loaded.reason, newer: !loaded.ok && loaded.newer === true });
      }
    }
    await this.dropUnreadable(unreadable);
  }

  /** Fields that did not read: deleted, with one warning line per key. One a newer gpualert wrote is skipped but left for it, as the outbox and silences do. */
  private async dropUnreadable(unreadable: readonly Unreadable[]): Promise<void> {
    for (const key of new Set(unreadable.map((u) => u.key))) {
      const these = unreadable.filter((u) => u.key === key);
      const dropped = these.filter((u) => !u.newer).map((u) => u.field);
      if (dropped.length > 0) await this.store.hashDelete(key, ...dropped);
      this.log.warn(
        {
          key,
          unreadable: these.length,
          examples: these.slice(0, MAX_NAMED_IN_WARNING).map((u) => `${u.field.slice(0, 80)}: ${u.reason}`),
        },
        'state_rebuilt',
      );
    }
  }

  /** Groups saved whole in one field (up to this layout): written once as a head and a field per alert. */
  private async splitGroups(state: NotifierState, split: number): Promise<void> {
    const changes = await this.groups.changes(state);
    await this.groups.write(this.store, changes, true);
    this.groups.commit(changes);
    this.log.info({ key: GROUPS_KEY, to: GROUP_ALERTS_KEY, groups: split, alerts: changes.entries.length }, 'state_migrated');
  }

  /** A state that does not read: an empty one, and no field left over from it. */
  private async fresh(reason: string, key = STATE_KEY): Promise<NotifierState> {
    // Rebuilt: groups, pages and the notification log start empty, so what still fires is told
    // again once (pages carry their dedup key: the pager folds them).
    this.log.warn({ key, reason }, 'state_rebuilt');
    await this.store.delete(GROUPS_KEY, GROUP_ALERTS_KEY, FIRING_KEY);
    const state = emptyNotifierState();
    state.silences = await loadSilences(this.store);
    this.commitSilences(state);
    return state;
  }

  /** The whole document of gpualert up to version 1, written once in this layout: every field, then the rest (which marks it done). */
  private async migrate(state: NotifierState, from: number): Promise<NotifierState> {
    await this.store.delete(GROUPS_KEY, GROUP_ALERTS_KEY, FIRING_KEY);
    const groups = await this.groups.changes(state);
    await this.groups.write(this.store, groups);
    this.groups.commit(groups);
    const firing = await this.firing.changes(state);
    await this.firing.write(this.store, firing);
    this.firing.commit(firing);
    const text = encodeVersioned(LAYOUT.rest, { pages: state.pages, sources: state.sources });
    await this.store.set(STATE_KEY, text);
    this.rest = { text, stamp: restStamp(state) };
    // Its silences are kept: the first step writes back to the silences hash any active one missing there.
    this.commitSilences(state);
    this.log.info(
      { key: LEGACY_STATE_KEY, to: STATE_KEY, from, version: LAYOUT.rest.version, groups: this.groups.size, firing: this.firing.size },
      'state_migrated',
    );
    return state;
  }

  /** Ends a step: writes what it changed (the groups and firing alerts first, the rest last) and takes it as committed. */
  async save(state: NotifierState): Promise<SaveFigures> {
    const groups = await this.groups.changes(state);
    const firing = await this.firing.changes(state);
    const stamp = restStamp(state);
    const rest =
      this.rest === undefined || this.restUncertain || !sameStamp(this.rest.stamp, stamp)
        ? encodeVersioned(LAYOUT.rest, { pages: state.pages, sources: state.sources })
        : undefined;
    const writeRest = rest !== undefined && (this.restUncertain || rest !== this.rest?.text);
    this.inFlight = { groups, firing, rest };
    await this.groups.write(this.store, groups);
    await this.firing.write(this.store, firing);
    if (writeRest) await this.store.set(STATE_KEY, rest);
    this.inFlight = undefined;
    this.groups.commit(groups);
    this.firing.commit(firing);
    if (rest !== undefined) this.rest = rest === this.rest?.text ? { ...this.rest, stamp } : { text: rest, stamp };
    this.restUncertain = false;
    this.commitSilences(state);
    this.generation += 1;
    let chars = writeRest ? rest.length : 0;
    for (const { text } of firing.set.values()) chars += text.length;
    for (const { text } of groups.heads.values()) chars += text.length;
    for (const { entry } of groups.entries) chars += entry.text.length;
    return {
      fields: groups.heads.size + groups.entries.length + firing.set.size + (writeRest ? 1 : 0),
      deleted: groups.goneHeads.length + groups.goneEntries.length + firing.gone.length,
      chars,
    };
  }

  /**
   * A step failed: the state goes back to what the last step committed, read back from the texts
   * of what this step changed only; what a failed write may have left in the store is written
   * again by the next step. Returns why anything did not read back (past a load bound), for one log line.
   */
  rollback(state: NotifierState): string[] {
    if (this.inFlight) {
      this.groups.doubt(this.inFlight.groups);
      this.firing.doubt(this.inFlight.firing);
      if (this.inFlight.rest !== undefined) this.restUncertain = true;
      this.inFlight = undefined;
    }
    this.groups.rollback(state);
    const reasons = this.firing.rollback(state);
    if (!this.rest || !sameStamp(this.rest.stamp, restStamp(state))) {
      const back = this.rest ? decodeVersioned(LAYOUT.rest, this.rest.text) : undefined;
      if (back && !back.ok) reasons.push(`${STATE_KEY}: ${back.reason}`);
      const rest: Rest = back?.ok ? back.value : { pages: emptyNotifierState().pages, sources: emptyNotifierState().sources };
      state.pages = rest.pages;
      state.sources = rest.sources;
      if (this.rest) this.rest.stamp = restStamp(state);
    }
    state.silences = copies(this.silences);
    return reasons;
  }

  /** The state as last committed, for the API: never half a step, never a step rolled back; rebuilt only after a commit. */
  snapshot(): NotifierState {
    if (this.view?.generation === this.generation) return this.view.state;
    const state = emptyNotifierState();
    for (const [key, group] of this.groups.views()) state.groups[key] = group;
    for (const [fp, alert] of this.firing.views()) FIRING.put(state, fp, alert);
    if (this.rest) {
      if (!this.rest.view) {
        const back = decodeVersioned(LAYOUT.rest, this.rest.text);
        if (back.ok) this.rest.view = back.value;
      }
      if (this.rest.view) Object.assign(state, this.rest.view);
    }
    state.silences = this.silences;
    this.view = { generation: this.generation, state };
    return state;
  }

  private commitSilences(state: NotifierState): void {
    this.silences = state.silences;
  }
}

function copies(silences: Dict<Silence>): Dict<Silence> {
  const out = dict<Silence>();
  for (const id in silences) {
    const silence = silences[id];
    if (silence) out[id] = { ...silence };
  }
  return out;
}
