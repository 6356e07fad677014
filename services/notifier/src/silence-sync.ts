import type { Logger } from '@gpualert/log';
import { dict, type NotifierState, type Silence } from '@gpualert/notify';
import type { NotificationData } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { encodeSilence, loadSilences, SILENCES_KEY } from './silences.ts';

/** What a silence's state was when a step began: its object and times. */
type Seen = ReadonlyMap<string, readonly [Silence, number, number | undefined]>;

/**
 * The notifier's silences kept with the store's, which the CLI and the API write: read at each
 * step, the ones the core made or expired (maintenance windows) written back, and each silence
 * made or expired said once on gpualert.notifications, for the timeline.
 */
export class SilenceSync {
  /** Silences already said made. */
  private readonly known = new Set<string>();

  constructor(
    private readonly store: StateStore,
    private readonly log: Logger,
    private readonly record: (data: NotificationData, host: string) => Promise<void>,
  ) {}

  /** The silences there are at start are not news. */
  async start(): Promise<void> {
    for (const id of Object.keys(await loadSilences(this.store, this.log))) this.known.add(id);
  }

  /**
   * The silences in the store, for a step. One this notifier holds that is still active but gone
   * from the store was lost with the store's data (nothing deletes a silence: expiring one marks
   * it), and is written back rather than forgotten mid-maintenance.
   */
  async current(state: NotifierState): Promise<Record<string, Silence>> {
    const stored = await loadSilences(this.store);
    const now = Date.now();
    const lost = Object.values(state.silences).filter((s) => !Object.hasOwn(stored, s.id) && s.expiredAt === undefined && s.endsAt > now);
    if (lost.length > 0) {
      await this.store.hashSet(SILENCES_KEY, Object.fromEntries(lost.map((s) => [s.id, encodeSilence(s)])));
      this.log.warn({ silences: lost.map((s) => s.id) }, 'silences_restored_to_store');
      // Copies: what the last step committed is not changed by this one (notifier-state-store.ts).
      for (const silence of lost) stored[silence.id] = { ...silence };
    }
    return stored;
  }

  /** Each silence as the step begins, to find those the core makes or expires in it. */
  seen(state: NotifierState): Seen {
    return new Map(Object.values(state.silences).map((s) => [s.id, [s, s.endsAt, s.expiredAt] as const]));
  }

  /** Maintenance windows' own silences, made or expired by the core in this step, shared like any other (the others are as the store gave them). */
  async shareOwn(state: NotifierState, before: Seen): Promise<void> {
    const own = Object.values(state.silences).filter((s) => {
      const was = before.get(s.id);
      return s.createdBy === 'gpualert' && (was?.[0] !== s || was[1] !== s.endsAt || was[2] !== s.expiredAt);
    });
    if (own.length > 0) await this.store.hashSet(SILENCES_KEY, dict(own.map((s) => [s.id, encodeSilence(s)] as const)));
  }

  /** Silences made from the CLI or the API since the last look: said once each. */
  async announceNew(state: NotifierState): Promise<void> {
    for (const silence of Object.values(state.silences)) {
      if (this.known.has(silence.id)) continue;
      this.known.add(silence.id);
      await this.record(
        {
          receiver: silence.receivers?.join(',') ?? '*',
          channel: 'silence',
          fingerprints: [],
          reason: `silence ${silence.id} created by ${silence.createdBy} until ${new Date(silence.endsAt).toISOString()} for ${silence.matchers.join(' ')}: ${silence.comment}`,
          outcome: 'suppressed',
          attempt: 0,
        },
        'notifier',
      );
    }
  }

  /** The silences active before a flush (which expires those past their end). */
  active(state: NotifierState): string[] {
    return Object.keys(state.silences).filter((id) => {
      const silence = state.silences[id];
      return silence !== undefined && silence.expiredAt === undefined;
    });
  }

  /** Those of `before` the flush expired: written to the store and said once each. */
  async announceExpired(state: NotifierState, before: readonly string[]): Promise<void> {
    for (const id of before) {
      const silence = state.silences[id];
      if (silence?.expiredAt === undefined) continue;
      await this.store.hashSet(SILENCES_KEY, { [id]: encodeSilence(silence) });
      await this.record(
        { receiver: '*', channel: 'silence', fingerprints: [], reason: `silence ${id} expired (${silence.comment})`, outcome: 'suppressed', attempt: 0 },
        'notifier',
      );
    }
  }
}
