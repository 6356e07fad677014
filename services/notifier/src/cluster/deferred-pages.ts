import type { Decision, Notification, NotifierState, Told } from '@gpualert/notify';

/** A page (or its resolve) a replica after the first holds back for its wait, then sends only if no replica before it did. */
interface DeferredPage {
  /** `receiver|fingerprint`, the page log's key. */
  readonly key: string;
  readonly fingerprint: string;
  readonly reason: 'page' | 'page_resolve';
  readonly severity: Told['severity'];
  /** What the core wrote to the page log for it (a resolve's time): written when it goes out. */
  readonly told: Told | undefined;
  /** One per integration of the pager receiver: sent together or not at all. */
  readonly sends: Notification[];
  readonly dueAt: number;
}

/** Pages held back at once at most: one per firing alert and pager receiver; past it a page is sent at once rather than held. */
const MAX_DEFERRED = 100_000;

/**
 * The page path of a replica at position p > 0: a page the core decides is not sent (nor written to
 * the shared page log) until p × peer timeout has passed; then the shared page log is read again,
 * and it goes out only if no replica before it paged (or resolved) that fault since. A replica
 * that dies while it holds pages loses only what the replicas before it sent.
 */
export class DeferredPages {
  private readonly held = new Map<string, DeferredPage>();
  /** Released by the step now running: put back should it fail (its sends never reached the outbox). */
  private releasing: [string, DeferredPage][] = [];

  get size(): number {
    return this.held.size;
  }

  /**
   * Takes the page decisions out of a step's decisions, holding them for `waitMs`, and puts back
   * what the step wrote to `state.pages` for them (`before`: the page log's records as they were
   * before the step): the shared log must not say paged before anybody did. Returns the rest, and
   * what must go out at once because the hold is full.
   */
  hold(state: NotifierState, decisions: readonly Decision[], before: ReadonlyMap<string, Told | undefined>, now: number, waitMs: number): Decision[] {
    const rest: Decision[] = [];
    for (const decision of decisions) {
      const n = 'send' in decision ? decision.send : undefined;
      const alert = n?.alerts[0];
      if (!n || !alert || (n.reason !== 'page' && n.reason !== 'page_resolve')) {
        rest.push(decision);
        continue;
      }
      const key = `${n.alertmanager?.receiver ?? n.receiver}|${alert.fingerprint}`;
      const id = `${n.reason}|${key}`;
      const same = this.held.get(id);
      if (!same && this.held.size >= MAX_DEFERRED) {
        rest.push(decision); // the hold is full: sent at once, as a replica alone would
        continue;
      }
      const decided = state.pages[key];
      const told = before.get(key);
      if (told) state.pages[key] = told;
      else delete state.pages[key];
      if (same && same.severity === alert.severity) {
        // Another integration of the same receiver, or the same decided again: one entry, its first due time.
        const at = same.sends.findIndex((s) => s.receiver === n.receiver);
        if (at >= 0) same.sends[at] = n;
        else same.sends.push(n);
        continue;
      }
      this.held.delete(id);
      // A fault paged again after a held resolve: that resolve is old news (sent, it would close a firing incident).
      if (n.reason === 'page') this.held.delete(`page_resolve|${key}`);
      this.held.set(id, { key, fingerprint: alert.fingerprint, reason: n.reason, severity: alert.severity, told: decided, sends: [n], dueAt: now + waitMs });
    }
    return rest;
  }

  /** The fingerprints of what is due by `now`, for the caller to read the shared page log first. */
  dueFingerprints(now: number): string[] {
    return [...this.held.values()].filter((d) => d.dueAt <= now).map((d) => d.fingerprint);
  }

  /**
   * What is due, judged against the page log as just read into `state.pages`: a page goes out if
   * nobody paged the fault at this severity and it still fires here; a resolve goes out if the log
   * still says paged. What goes out is written to `state.pages` (saved with the step).
   */
  release(state: NotifierState, now: number): Decision[] {
    const out: Decision[] = [];
    for (const [id, d] of this.held) {
      if (d.dueAt > now) continue;
      this.held.delete(id);
      this.releasing.push([id, d]);
      const told = state.pages[d.key];
      if (d.reason === 'page') {
        if (told?.status === 'firing' && told.severity === d.severity) continue; // a replica before this one paged it
        if (!Object.hasOwn(state.firing, d.fingerprint)) continue; // resolved here since: nothing to page
        state.pages[d.key] = { status: 'firing', severity: d.severity, at: now };
      } else {
        if (told?.status !== 'firing') continue; // resolved by a replica before this one, or never paged
        if (Object.hasOwn(state.firing, d.fingerprint)) continue; // it fires again here: the resolve is old news
        state.pages[d.key] = d.told?.status === 'resolved' ? d.told : { status: 'resolved', severity: d.severity, at: now };
      }
      for (const send of d.sends) out.push({ send });
    }
    return out;
  }

  /** The step ended: what it released is in the outbox (`ok`), or goes back to be judged again at the next step. */
  settle(ok: boolean): void {
    if (!ok) for (const [id, d] of this.releasing) if (!this.held.has(id)) this.held.set(id, d);
    this.releasing = [];
  }
}
