import { dict, NOTIFIER_STATE, type NotifierState } from '@gpualert/notify';
import { decodeVersioned, encodeVersioned, type VersionedState } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';

/** One field per alert group, its head (what the group is, without its alerts), keyed by the group's key. */
export const GROUPS_KEY = 'notifier:groups';
/** One field per alert of a group (the alert and what its receiver was told of it), keyed by the JSON array [group key, fingerprint]. */
export const GROUP_ALERTS_KEY = 'notifier:group-alerts';

const HEAD = NOTIFIER_STATE.layout.group;
const ALERT = NOTIFIER_STATE.layout.groupAlert;

type Group = NotifierState['groups'][string];
type Alert = Group['alerts'][string];
type Told = Group['told'][string];

/** Serialising done between two turns of the event loop, in ms (one field is never split). */
const SLICE_MS = 10;
/** Entries looked at between two looks at the clock. */
const CHECK_EVERY = 256;
/** Fields per store call: a migration or a large flush writes many. */
const FIELDS_PER_CALL = 1_000;

/** The field of one alert of a group: unambiguous whatever the key and fingerprint hold. */
export function groupAlertField(group: string, fingerprint: string): string {
  return JSON.stringify([group, fingerprint]);
}

/** The head as committed: its text, and the group object and values it was taken from. */
interface Head {
  text: string;
  group: Group;
  route: Group['route'];
  nextFlush: number;
  lastSent: number;
}

/** One alert of a group as committed. The core replaces an alert or told record rather than editing it, so these objects are what was written. */
interface Entry {
  readonly field: string;
  text: string;
  alert: Alert | undefined;
  told: Told | undefined;
}

interface Committed {
  head: Head | undefined;
  readonly entries: Map<string, Entry>;
  /** The group as committed, for the API's view; built at the first look after a commit touched it. */
  view?: Group | undefined;
}

/** What a step changed in the groups: heads and alerts to write, and to delete. */
export interface GroupChanges {
  readonly heads: Map<string, Head>;
  readonly entries: { readonly group: string; readonly fingerprint: string; readonly entry: Entry }[];
  readonly goneHeads: string[];
  readonly goneEntries: { readonly group: string; readonly fingerprint: string; readonly field: string }[];
}

/** A field that did not read back at load, for the one warning line. */
export interface Unreadable {
  readonly key: string;
  readonly field: string;
  readonly reason: string;
  readonly newer: boolean;
}

/**
 * The notifier's alert groups in the store, a head per group and a field per alert of it. A step
 * writes the heads and alerts it changed, found without serialising the others: the core replaces
 * an alert or a told record rather than editing it and sets a group's times, so an entry whose
 * objects are those last committed is unchanged (notifier-state-store.test.ts holds the core to
 * that against a diff of the texts). A failed step is put back from the committed objects.
 */
export class SavedGroups {
  private readonly committed = new Map<string, Committed>();
  /** Heads and alerts a failed step may or may not have written: the next step writes (or deletes) them whatever their objects say. */
  private readonly uncertainHeads = new Set<string>();
  private readonly uncertainEntries = new Map<string, Set<string>>();

  /** Groups committed. */
  get size(): number {
    return this.committed.size;
  }

  /**
   * Reads the saved heads and alerts into `state`. A head of version 1 (the whole group in one
   * field, as gpualert wrote it before) is loaded and returned in `split`, not taken as committed:
   * the caller writes it in this layout. An alert whose group is not saved is unreadable.
   */
  load(
    state: NotifierState,
    heads: readonly (readonly [string, string])[],
    alerts: readonly (readonly [string, string])[],
  ): { unreadable: Unreadable[]; split: number } {
    const unreadable: Unreadable[] = [];
    let split = 0;
    for (const [field, text] of heads) {
      const loaded = decodeVersioned(HEAD, text);
      if (!loaded.ok || loaded.value.key !== field) {
        unreadable.push({ key: GROUPS_KEY, field, reason: loaded.ok ? 'saved under another key' : loaded.reason, newer: !loaded.ok && loaded.newer === true });
        continue;
      }
      const { alerts: inside, told, ...head } = loaded.value;
      const group: Group = { ...head, alerts: inside ?? dict(), told: told ?? dict() };
      state.groups[field] = group;
      if (loaded.migratedFrom !== undefined) split += 1;
      else this.committed.set(field, { head: headOf(text, group), entries: new Map() });
    }
    for (const [field, text] of alerts) {
      const loaded = decodeVersioned(ALERT, text);
      // A committed group is one the loop above put in the state.
      const committed = loaded.ok ? this.committed.get(loaded.value.group) : undefined;
      const group = loaded.ok ? state.groups[loaded.value.group] : undefined;
      const reason = !loaded.ok
        ? loaded.reason
        : groupAlertField(loaded.value.group, loaded.value.fingerprint) !== field
          ? 'saved under another key'
          : !committed || !group
            ? 'its group is not saved'
            : undefined;
      if (reason !== undefined || !loaded.ok || !committed || !group) {
        unreadable.push({ key: GROUP_ALERTS_KEY, field, reason: reason ?? '', newer: !loaded.ok && loaded.newer === true });
        continue;
      }
      const { fingerprint, alert, told } = loaded.value;
      if (alert) group.alerts[fingerprint] = alert;
      if (told) group.told[fingerprint] = told;
      committed.entries.set(fingerprint, { field, text, alert, told });
    }
    return { unreadable, split };
  }

  /**
   * What the state changed since the last commit. Only heads and alerts whose objects moved are
   * serialised, with a turn of the event loop after every SLICE_MS of work. Only steps change the
   * state, one at a time, so nothing moves while this waits.
   */
  async changes(state: NotifierState): Promise<GroupChanges> {
    const out: GroupChanges = { heads: new Map(), entries: [], goneHeads: [], goneEntries: [] };
    let slice = performance.now();
    let looked = 0;
    const pace = async () => {
      if (++looked % CHECK_EVERY !== 0 || performance.now() - slice <= SLICE_MS) return;
      await new Promise((resolve) => setImmediate(resolve));
      slice = performance.now();
    };
    for (const key of Object.keys(state.groups)) {
      const group = state.groups[key];
      if (!group) continue;
      const committed = this.committed.get(key);
      const head = committed?.head;
      const doubtHead = this.uncertainHeads.has(key);
      if (!head || doubtHead || head.group !== group || head.route !== group.route || head.nextFlush !== group.nextFlush || head.lastSent !== group.lastSent) {
        const text = encodeVersioned(HEAD as VersionedState<object>, {
          key: group.key,
          route: group.route,
          nextFlush: group.nextFlush,
          lastSent: group.lastSent,
        });
        // Touched but the same again: nothing to write.
        if (head && !doubtHead && head.text === text) Object.assign(head, headOf(text, group));
        else out.heads.set(key, headOf(text, group));
      }
      const doubts = this.uncertainEntries.get(key);
      // Checked without a turn of the event loop (a storm's step looks at every alert of every
      // group); only what changed is serialised, paced.
      const unchanged = (fingerprint: string) => {
        const entry = committed?.entries.get(fingerprint);
        return entry !== undefined && doubts?.has(fingerprint) !== true && entry.alert === group.alerts[fingerprint] && entry.told === group.told[fingerprint];
      };
      const encode = async (fingerprint: string) => {
        const alert = group.alerts[fingerprint];
        const told = group.told[fingerprint];
        const entry = committed?.entries.get(fingerprint);
        const doubt = doubts?.has(fingerprint) === true;
        await pace();
        const text = encodeVersioned(ALERT, { group: key, fingerprint, ...(alert ? { alert } : {}), ...(told ? { told } : {}) });
        if (entry && !doubt && entry.text === text) {
          entry.alert = alert;
          entry.told = told;
        } else {
          out.entries.push({ group: key, fingerprint, entry: { field: entry?.field ?? groupAlertField(key, fingerprint), text, alert, told } });
        }
      };
      for (const fingerprint in group.alerts) if (!unchanged(fingerprint)) await encode(fingerprint);
      for (const fingerprint in group.told) if (!Object.hasOwn(group.alerts, fingerprint) && !unchanged(fingerprint)) await encode(fingerprint);
      const held = (fingerprint: string) => Object.hasOwn(group.alerts, fingerprint) || Object.hasOwn(group.told, fingerprint);
      if (committed)
        for (const [fingerprint, entry] of committed.entries) if (!held(fingerprint)) out.goneEntries.push({ group: key, fingerprint, field: entry.field });
      if (doubts)
        for (const fingerprint of doubts)
          if (!committed?.entries.has(fingerprint) && !held(fingerprint))
            out.goneEntries.push({ group: key, fingerprint, field: groupAlertField(key, fingerprint) });
    }
    // Groups gone from the state: their heads and every alert the store may hold of them.
    for (const key of new Set([...this.committed.keys(), ...this.uncertainHeads, ...this.uncertainEntries.keys()])) {
      if (Object.hasOwn(state.groups, key)) continue;
      const committed = this.committed.get(key);
      if (committed?.head || this.uncertainHeads.has(key)) out.goneHeads.push(key);
      const fingerprints = new Set([...(committed?.entries.keys() ?? []), ...(this.uncertainEntries.get(key) ?? [])]);
      for (const fingerprint of fingerprints)
        out.goneEntries.push({ group: key, fingerprint, field: committed?.entries.get(fingerprint)?.field ?? groupAlertField(key, fingerprint) });
    }
    return out;
  }

  /**
   * Writes heads first and deletes them last: a step cut short leaves at worst a head without its
   * alerts, never alerts without their head. A split (`alertsFirst`) writes the alerts before the
   * heads that replace the whole groups: cut short, the whole group is still there, its alert
   * fields are dropped at the next load and the group split again; heads first, a head without
   * alerts would have overwritten it and the alerts been lost.
   */
  async write(store: StateStore, changes: GroupChanges, alertsFirst = false): Promise<void> {
    const heads = [...changes.heads].map(([key, head]) => [key, head.text] as const);
    const writeHeads = async () => {
      for (let i = 0; i < heads.length; i += FIELDS_PER_CALL) await store.hashSet(GROUPS_KEY, dict(heads.slice(i, i + FIELDS_PER_CALL)));
    };
    if (!alertsFirst) await writeHeads();
    for (let i = 0; i < changes.entries.length; i += FIELDS_PER_CALL) {
      await store.hashSet(GROUP_ALERTS_KEY, dict(changes.entries.slice(i, i + FIELDS_PER_CALL).map(({ entry }) => [entry.field, entry.text] as const)));
    }
    if (alertsFirst) await writeHeads();
    for (let i = 0; i < changes.goneEntries.length; i += FIELDS_PER_CALL) {
      await store.hashDelete(GROUP_ALERTS_KEY, ...changes.goneEntries.slice(i, i + FIELDS_PER_CALL).map((g) => g.field));
    }
    for (let i = 0; i < changes.goneHeads.length; i += FIELDS_PER_CALL) await store.hashDelete(GROUPS_KEY, ...changes.goneHeads.slice(i, i + FIELDS_PER_CALL));
  }

  commit(changes: GroupChanges): void {
    const record = (key: string) => {
      let committed = this.committed.get(key);
      if (!committed) this.committed.set(key, (committed = { head: undefined, entries: new Map() }));
      committed.view = undefined;
      return committed;
    };
    for (const [key, head] of changes.heads) record(key).head = head;
    for (const { group, fingerprint, entry } of changes.entries) record(group).entries.set(fingerprint, entry);
    for (const { group, fingerprint } of changes.goneEntries) this.committed.get(group)?.entries.delete(fingerprint);
    for (const key of changes.goneHeads) this.committed.delete(key);
    this.uncertainHeads.clear();
    this.uncertainEntries.clear();
  }

  /** A write of these changes failed somewhere: what the store holds for them is unknown. */
  doubt(changes: GroupChanges): void {
    for (const key of [...changes.heads.keys(), ...changes.goneHeads]) this.uncertainHeads.add(key);
    for (const { group, fingerprint } of [...changes.entries, ...changes.goneEntries]) {
      let doubts = this.uncertainEntries.get(group);
      if (!doubts) this.uncertainEntries.set(group, (doubts = new Set()));
      doubts.add(fingerprint);
    }
  }

  /** The groups back to what was last committed: the committed objects put back where a failed step changed them. */
  rollback(state: NotifierState): void {
    for (const key of Object.keys(state.groups)) {
      const committed = this.committed.get(key);
      const group = state.groups[key];
      if (!committed?.head) {
        delete state.groups[key];
      } else if (!group || committed.head.group !== group) {
        this.restore(state, key, committed.head, committed.entries);
      } else {
        Object.assign(group, { route: committed.head.route, nextFlush: committed.head.nextFlush, lastSent: committed.head.lastSent });
        for (const fingerprint of new Set([...Object.keys(group.alerts), ...Object.keys(group.told)])) {
          if (!committed.entries.has(fingerprint)) {
            delete group.alerts[fingerprint];
            delete group.told[fingerprint];
          }
        }
        for (const [fingerprint, entry] of committed.entries) put(group, fingerprint, entry);
      }
    }
    for (const [key, committed] of this.committed)
      if (!Object.hasOwn(state.groups, key) && committed.head) this.restore(state, key, committed.head, committed.entries);
  }

  private restore(state: NotifierState, key: string, head: Head, entries: Committed['entries']): void {
    const group = built(key, head, entries);
    state.groups[key] = group;
    head.group = group;
  }

  /** The groups as last committed, for a view that later steps do not touch (an alert and a told record are never edited, only replaced). */
  *views(): Generator<readonly [string, Group]> {
    for (const [key, committed] of this.committed) {
      if (!committed.head) continue;
      committed.view ??= built(key, committed.head, committed.entries);
      yield [key, committed.view] as const;
    }
  }
}

function headOf(text: string, group: Group): Head {
  return { text, group, route: group.route, nextFlush: group.nextFlush, lastSent: group.lastSent };
}

function put(group: Group, fingerprint: string, entry: Entry): void {
  if (entry.alert) group.alerts[fingerprint] = entry.alert;
  else delete group.alerts[fingerprint];
  if (entry.told) group.told[fingerprint] = entry.told;
  else delete group.told[fingerprint];
}

function built(key: string, head: Head, entries: Map<string, Entry>): Group {
  const group: Group = { key, route: head.route, alerts: dict<Alert>(), told: dict<Told>(), nextFlush: head.nextFlush, lastSent: head.lastSent };
  for (const [fingerprint, entry] of entries) put(group, fingerprint, entry);
  return group;
}
