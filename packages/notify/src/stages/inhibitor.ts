import { labelValue, matchesAll } from '../matchers.ts';
import type { NotifierState } from '../notifier-types.ts';
import type { InhibitRule } from '../route-config.ts';

type Labels = Readonly<Record<string, string>>;
const NO_LABELS: Labels = Object.freeze(Object.create(null) as Record<string, string>);

/**
 * Alertmanager's inhibitor (inhibit/inhibit.go): a firing alert matching a rule's source side
 * mutes an alert matching its target side when both carry the same values of `equal`. One
 * inhibitor serves the decision path (the inhibit stage) and the API's `inhibitedBy`.
 *
 * The firing sources are indexed in the state (`sources`: `rule|equal values` → fingerprints,
 * kept up to date as alerts fire and resolve), so a lookup is one map access per rule.
 */
export class Inhibitor {
  constructor(private readonly rules: readonly InhibitRule[]) {}

  /** The index keys an alert with these labels is a source under: one per rule whose source side it matches. */
  private sourceKeys(labels: Labels): string[] {
    return this.rules.flatMap((rule, i) => (matchesAll(rule.source, labels) ? [this.key(i, rule, labels)] : []));
  }

  private key(i: number, rule: InhibitRule, labels: Labels): string {
    return `${i}|${rule.equal.map((l) => labelValue(labels, l)).join('\u0000')}`;
  }

  /** An alert stops being a source (it resolved, or fires again with other labels). */
  forget(state: NotifierState, fingerprint: string, labels: Labels): void {
    for (const key of this.sourceKeys(labels)) {
      const list = (state.sources[key] ?? []).filter((fp) => fp !== fingerprint);
      if (list.length > 0) state.sources[key] = list;
      else delete state.sources[key];
    }
  }

  /** A firing alert becomes a source under every rule whose source side it matches. */
  remember(state: NotifierState, fingerprint: string, labels: Labels): void {
    for (const key of this.sourceKeys(labels)) (state.sources[key] ??= []).push(fingerprint);
  }

  /**
   * The firing alerts that inhibit this one now, in the index's order. Alertmanager's rule: when
   * the target also matches the source side, a source that matches both sides does not count,
   * and an alert never inhibits itself.
   */
  *inhibiting(state: Readonly<NotifierState>, fingerprint: string, labels: Labels): Generator<string> {
    for (const [i, rule] of this.rules.entries()) {
      if (!matchesAll(rule.target, labels)) continue;
      const twoSided = matchesAll(rule.source, labels);
      for (const source of state.sources[this.key(i, rule, labels)] ?? []) {
        if (source === fingerprint) continue;
        if (twoSided && matchesAll(rule.target, state.firing[source] ?? NO_LABELS)) continue;
        yield source;
      }
    }
  }

  /** The first alert that inhibits this one, or undefined: the decision path's question. */
  first(state: Readonly<NotifierState>, fingerprint: string, labels: Labels): string | undefined {
    for (const source of this.inhibiting(state, fingerprint, labels)) return source;
    return undefined;
  }

  /** Every alert that inhibits this one, sorted, once each: the API's `inhibitedBy`. */
  all(state: Readonly<NotifierState>, fingerprint: string, labels: Labels): string[] {
    return [...new Set(this.inhibiting(state, fingerprint, labels))].sort();
  }
}
