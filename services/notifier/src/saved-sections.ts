import { dict, type NotifierState } from '@gpualert/notify';
import { decodeVersioned, encodeVersioned, type VersionedState } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';

/**
 * One map of the notifier's state saved as a store hash, one field per entry. A step writes the
 * entries it changed and deletes the ones it removed; a failed step gets back only those.
 *
 * Which entries a step changed is found without serialising the others: the core replaces an
 * entry's objects (a firing alert's labels, its text) rather than editing them, so an entry whose
 * objects are those of the last commit is unchanged (the
 * test "writes every group and alert whose text changed" in notifier-state-store.test.ts holds the
 * core to that against a diff of the texts).
 */
export interface Section<V> {
  /** The store hash. */
  readonly key: string;
  readonly spec: VersionedState<V>;
  /** The most fields loaded: past it the whole state is rebuilt, as past the one document's bounds before. */
  readonly bound: number;
  fields(state: NotifierState): string[];
  has(state: NotifierState, field: string): boolean;
  /** What identifies the entry's present content without serialising it. */
  stamp(state: NotifierState, field: string): unknown[];
  /** Whether the entry is still what `stamp` recorded (allocates nothing: it runs over every entry each step). */
  same(state: NotifierState, field: string, stamp: readonly unknown[]): boolean;
  value(state: NotifierState, field: string): V;
  put(state: NotifierState, field: string, value: V): void;
  remove(state: NotifierState, field: string): void;
  /** A saved value that reads but is not the field's (a group saved under another key): dropped. */
  belongs(field: string, value: V): boolean;
}

interface Committed<V> {
  readonly text: string;
  stamp: unknown[];
  /** The text read back, for the API's view; decoded at the first look. */
  view?: V | undefined;
}

/** What a step changed in one section: the texts to write and the fields to delete. */
export interface SectionChanges {
  readonly set: Map<string, { readonly text: string; readonly stamp: unknown[] }>;
  readonly gone: string[];
}

/** Serialising done between two turns of the event loop, in ms (one entry is never split). */
const SLICE_MS = 10;

/** Fields per store call: a migration or a large flush writes many. */
const FIELDS_PER_CALL = 1_000;

export class SavedSection<V> {
  /** Per field, the text last committed to the store. */
  private readonly committed = new Map<string, Committed<V>>();
  /** Fields a failed step may or may not have written: the next step writes (or deletes) them whatever their stamp says. */
  private readonly uncertain = new Set<string>();

  constructor(readonly section: Section<V>) {}

  get size(): number {
    return this.committed.size;
  }

  /** Takes what was loaded (or just written by a migration) as committed. */
  adopt(state: NotifierState, field: string, text: string): void {
    this.committed.set(field, { text, stamp: this.section.stamp(state, field) });
  }

  /**
   * What the state changed since the last commit. Only entries whose stamp moved are serialised,
   * with a turn of the event loop after every SLICE_MS of it: a storm's group of 20,000 alerts is
   * megabytes of JSON, and three of them in one piece held the loop 0.2 s a step. Only steps change
   * the state, one at a time, so nothing moves while this waits.
   */
  async changes(state: NotifierState): Promise<SectionChanges> {
    const s = this.section;
    const set = new Map<string, { text: string; stamp: unknown[] }>();
    let slice = performance.now();
    for (const field of s.fields(state)) {
      const committed = this.committed.get(field);
      const doubt = this.uncertain.has(field);
      if (committed && !doubt && s.same(state, field, committed.stamp)) continue;
      if (performance.now() - slice > SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        slice = performance.now();
      }
      const text = encodeVersioned(s.spec as VersionedState<object>, s.value(state, field) as object);
      const stamp = s.stamp(state, field);
      // Touched but the same again (a firing alert pushed once more): nothing to write.
      if (committed && !doubt && committed.text === text) committed.stamp = stamp;
      else set.set(field, { text, stamp });
    }
    const gone: string[] = [];
    for (const field of this.committed.keys()) if (!s.has(state, field)) gone.push(field);
    for (const field of this.uncertain) if (!this.committed.has(field) && !s.has(state, field)) gone.push(field);
    return { set, gone };
  }

  async write(store: StateStore, changes: SectionChanges): Promise<void> {
    const entries = [...changes.set];
    for (let i = 0; i < entries.length; i += FIELDS_PER_CALL) {
      await store.hashSet(this.section.key, dict(entries.slice(i, i + FIELDS_PER_CALL).map(([field, c]) => [field, c.text] as const)));
    }
    for (let i = 0; i < changes.gone.length; i += FIELDS_PER_CALL) await store.hashDelete(this.section.key, ...changes.gone.slice(i, i + FIELDS_PER_CALL));
  }

  commit(changes: SectionChanges): void {
    for (const [field, c] of changes.set) this.committed.set(field, { text: c.text, stamp: c.stamp });
    for (const field of changes.gone) this.committed.delete(field);
    this.uncertain.clear();
  }

  /** A write of these changes failed somewhere: what the store holds for them is unknown. */
  doubt(changes: SectionChanges): void {
    for (const field of changes.set.keys()) this.uncertain.add(field);
    for (const field of changes.gone) this.uncertain.add(field);
  }

  /**
   * The state's entries back to what was last committed, reading back only those a failed step
   * changed. Returns why any committed text did not read back (past a load bound): that entry is dropped.
   */
  rollback(state: NotifierState): string[] {
    const s = this.section;
    const reasons: string[] = [];
    const restore = (field: string, committed: Committed<V>) => {
      const back = decodeVersioned(s.spec, committed.text);
      if (back.ok) {
        s.put(state, field, back.value);
        committed.stamp = s.stamp(state, field);
      } else {
        s.remove(state, field);
        this.committed.delete(field);
        this.uncertain.add(field);
        reasons.push(`${field.slice(0, 80)}: ${back.reason}`);
      }
    };
    for (const field of s.fields(state)) {
      const committed = this.committed.get(field);
      if (!committed) s.remove(state, field);
      else if (!s.same(state, field, committed.stamp)) restore(field, committed);
    }
    for (const [field, committed] of this.committed) if (!s.has(state, field)) restore(field, committed);
    return reasons;
  }

  /** The entries as last committed, read back from their texts (each decoded once per text), for a view that later steps do not touch. */
  *views(): Generator<readonly [string, V]> {
    for (const [field, committed] of this.committed) {
      if (committed.view === undefined) {
        const back = decodeVersioned(this.section.spec, committed.text);
        if (!back.ok) continue;
        committed.view = back.value;
      }
      yield [field, committed.view] as const;
    }
  }
}
