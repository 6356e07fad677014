import { labelValue, matchesAll, type Matcher } from './matchers.ts';
import type { Silence } from './notifier-types.ts';

interface Entry {
  readonly silence: Silence;
  readonly matchers: readonly Matcher[];
  /** The silence's place in `Object.values(silences)`: the first match in that order is the one reported. */
  readonly order: number;
}

/** Canonical array-index keys (`"0"`, `"12345678"`) come first in an object's key order, whatever the insertion order. */
const ARRAY_INDEX = /^(?:0|[1-9]\d{0,9})$/;
const isArrayIndex = (key: string) => ARRAY_INDEX.test(key) && Number(key) < 4_294_967_295;

/**
 * The silences by one equality each, so that finding what silences an alert looks at the few
 * silences that can match it rather than every silence (with 6,000 maintenance silences, the
 * linear scan was 40 % of the notifier's time). A silence is filed under its first `label="value"`
 * matcher, or under each literal of its first `label=~"a|b|c"` matcher: it can only match an alert
 * whose value for that label is one of those. Silences with neither (only `!=`, `!~`, or real
 * regexes) are in a fallback list looked at every time. Candidates are then checked exactly as
 * before (active, receiver, every matcher), and the first match in the silences' own order wins,
 * so the answer is the linear scan's (property-tested in silence-index.property.test.ts).
 *
 * The index is of one `silences` object: built at its first lookup, kept up to date by `add` and
 * `remove`; a silence deleted from the object behind its back is simply not found (every
 * candidate is checked to still be the object's), a changed `endsAt`/`expiredAt` is read at lookup.
 */
export class SilenceIndex {
  private readonly byLabel = new Map<string, Map<string, Entry[]>>();
  private readonly fallback: Entry[] = [];
  private readonly entries = new Map<string, Entry>();
  private next = 0;

  constructor(
    private readonly silences: Readonly<Record<string, Silence>>,
    private readonly compile: (texts: readonly string[]) => Matcher[],
  ) {
    for (const silence of Object.values(silences)) this.file(silence, this.next++);
  }

  /**
   * A silence added to the object under its id: false when the index cannot place it in the
   * object's order (its id was there already, or is an array index that sorts first), and must be rebuilt.
   */
  add(silence: Silence): boolean {
    if (this.entries.has(silence.id) || isArrayIndex(silence.id)) return false;
    this.file(silence, this.next++);
    return true;
  }

  /** A silence deleted from the object. */
  remove(id: string): void {
    const entry = this.entries.get(id);
    if (!entry) return;
    this.entries.delete(id);
    for (const list of this.listsOf(entry)) {
      const at = list.indexOf(entry);
      if (at >= 0) list.splice(at, 1);
    }
  }

  /** The first silence, in the object's order, active at `now` for `receiver` (undefined: any receiver) that matches the labels. */
  first(labels: Readonly<Record<string, string>>, now: number, receiver: string | undefined): Silence | undefined {
    let best: Entry | undefined;
    this.visit(labels, (entry) => {
      if ((best === undefined || entry.order < best.order) && this.applies(entry, labels, now, receiver)) best = entry;
    });
    return best?.silence;
  }

  /** Every silence active at `now` that matches the labels and holds them for every receiver, or for one of `receivers`. */
  all(labels: Readonly<Record<string, string>>, now: number, receivers: readonly string[] = []): Silence[] {
    const out: Silence[] = [];
    this.visit(labels, (entry) => {
      const scope = entry.silence.receivers;
      if ((!scope || scope.some((r) => receivers.includes(r))) && this.applies(entry, labels, now, undefined)) out.push(entry.silence);
    });
    return out;
  }

  private applies(entry: Entry, labels: Readonly<Record<string, string>>, now: number, receiver: string | undefined): boolean {
    const s = entry.silence;
    if (this.silences[s.id] !== s) return false;
    if (s.expiredAt !== undefined || now < s.startsAt || now >= s.endsAt) return false;
    if (receiver !== undefined && s.receivers && !s.receivers.includes(receiver)) return false;
    return matchesAll(entry.matchers, labels);
  }

  private visit(labels: Readonly<Record<string, string>>, each: (entry: Entry) => void): void {
    for (const entry of this.fallback) each(entry);
    for (const [label, byValue] of this.byLabel) {
      const list = byValue.get(labelValue(labels, label));
      if (list) for (const entry of list) each(entry);
    }
  }

  private file(silence: Silence, order: number): void {
    const entry: Entry = { silence, matchers: this.compile(silence.matchers), order };
    this.entries.set(silence.id, entry);
    const lists = this.listsOf(entry, true);
    for (const list of lists) list.push(entry);
  }

  /** Where the entry is filed: one list per value of its key matcher, or the fallback. */
  private listsOf(entry: Entry, create = false): Entry[][] {
    const key = filingKey(entry.matchers);
    if (!key) return [this.fallback];
    let byValue = this.byLabel.get(key.label);
    if (!byValue) {
      if (!create) return [];
      byValue = new Map();
      this.byLabel.set(key.label, byValue);
    }
    const lists: Entry[][] = [];
    for (const value of new Set(key.values)) {
      let list = byValue.get(value);
      if (!list) {
        if (!create) continue;
        list = [];
        byValue.set(value, list);
      }
      lists.push(list);
    }
    return lists;
  }
}

/** What a silence is filed by: its first `=` matcher, else its first literal alternation (`=~"a|b"`), with the values it takes. */
function filingKey(matchers: readonly Matcher[]): { readonly label: string; readonly values: Iterable<string> } | undefined {
  for (const m of matchers) if (m.op === '=') return { label: m.label, values: [m.value] };
  for (const m of matchers) if (m.op === '=~' && m.literals) return { label: m.label, values: m.literals };
  return undefined;
}
