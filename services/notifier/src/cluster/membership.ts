import type { Logger } from '@gpualert/log';
import { GpualertError } from '@gpualert/schema';
import type { StateStore } from '@gpualert/state';
import { z } from 'zod';
import { ALIVE_KEY, NOTIFIER_ALIVE_TTL_MS, NOTIFIER_HEARTBEAT_MS } from '../outbox.ts';

/** The cluster's members: field = replica name, value = who runs it now (its instance) and where. */
export const MEMBERS_KEY = 'notifier:cluster:members';
/** Members read at most: a cluster is a handful of replicas; a hash anyone could fill is read within a bound. */
export const MAX_MEMBERS = 64;
/** A member not seen alive for this long leaves the list (a replica renamed or scaled away). */
const FORGET_AFTER_MS = 86_400_000;

const MEMBER = z.object({ instance: z.string().max(64), address: z.string().max(256).optional(), seen: z.number().finite() });
type Member = z.infer<typeof MEMBER>;

export interface Peer {
  readonly name: string;
  readonly address: string;
}

/**
 * Who is in the notifier cluster, and this replica's place in it, as Alertmanager's cluster has
 * it: every replica receives every alert and flushes its own groups; the replica at position p
 * waits p × peer timeout before it looks in the shared notification log and sends what nobody
 * sent. Positions are the live replicas' names, sorted; a replica is live while its heartbeat key
 * (the outbox's, with a TTL kept by the store's clock, not the replicas') is there.
 */
export class ClusterMembership {
  private live: string[];
  private said = false;

  constructor(
    private readonly store: StateStore,
    readonly replica: string,
    private readonly instance: string,
    readonly peerTimeoutMs: number,
    private readonly log: Logger,
    private readonly address = '',
  ) {
    this.live = [replica];
  }

  /**
   * At start, before this replica reads an alert: the name is free, or its last holder is gone. A
   * pod restarted after a crash finds its old run's key still alive for up to its TTL and waits it
   * out; a name another running notifier holds after that is refused (two processes in one place
   * would both send, and split one consumer group between them).
   */
  async claim(sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms))): Promise<void> {
    const deadline = Date.now() + NOTIFIER_ALIVE_TTL_MS + NOTIFIER_HEARTBEAT_MS;
    for (;;) {
      const holder = read((await this.store.hashGetSome(MEMBERS_KEY, MAX_MEMBERS)).fields[this.replica]);
      if (!holder || holder.instance === this.instance || (await this.store.get(ALIVE_KEY(holder.instance))) === null) return;
      if (Date.now() >= deadline)
        throw new GpualertError(
          'GA-CONFIG-INVALID',
          `notifier replica name "${this.replica}" is held by another running notifier (instance ${holder.instance}): give each replica its own name (GPUALERT_NOTIFIER_REPLICA, --replica)`,
        );
      if (!this.said) {
        this.said = true;
        this.log.info({ replica: this.replica, other: holder.instance }, 'cluster_replica_name_waiting');
      }
      await sleep(NOTIFIER_HEARTBEAT_MS / 4);
    }
  }

  /** Called with the heartbeat, after the alive key is set: this replica said, the others looked at. */
  async beat(now: number): Promise<void> {
    const mine: Member = { instance: this.instance, seen: now, ...(this.address ? { address: this.address } : {}) };
    const { fields } = await this.store.hashGetSome(MEMBERS_KEY, MAX_MEMBERS);
    const before = Object.hasOwn(fields, this.replica) ? read(fields[this.replica]) : undefined;
    if (before && before.instance !== this.instance && (await this.store.get(ALIVE_KEY(before.instance))) !== null && !this.said) {
      // Two processes under one name both count as that place: both would send. Said once.
      this.said = true;
      this.log.warn({ replica: this.replica, other: before.instance }, 'cluster_replica_name_taken');
    }
    await this.store.hashSet(MEMBERS_KEY, { [this.replica]: JSON.stringify(mine) });
    const live: string[] = [this.replica];
    const forgotten: string[] = [];
    for (const [name, text] of Object.entries(fields)) {
      if (name === this.replica) continue;
      const member = read(text);
      if (!member) {
        forgotten.push(name);
        continue;
      }
      if ((await this.store.get(ALIVE_KEY(member.instance))) !== null) live.push(name);
      else if (now - member.seen > FORGET_AFTER_MS) forgotten.push(name);
    }
    if (forgotten.length > 0) await this.store.hashDelete(MEMBERS_KEY, ...forgotten);
    const sorted = live.sort();
    if (sorted.join('\u0000') !== this.live.join('\u0000'))
      this.log.info({ replica: this.replica, members: sorted, position: sorted.indexOf(this.replica) }, 'cluster_members');
    this.live = sorted;
  }

  /** This replica's place among the live ones (0: it sends first). */
  position(): number {
    return Math.max(0, this.live.indexOf(this.replica));
  }

  /** How long this replica waits before it sends what a replica before it should have: position × peer timeout. */
  waitMs(): number {
    return this.position() * this.peerTimeoutMs;
  }

  /** The live replicas, as Alertmanager's /api/v2/status lists its peers. */
  peers(): Peer[] {
    return this.live.map((name) => ({ name, address: name === this.replica ? this.address : '' }));
  }

  /** At a clean stop: this replica leaves at once (its alive key is deleted by the outbox), so the next one moves up without waiting for the TTL. */
  async leave(): Promise<void> {
    await this.store.hashDelete(MEMBERS_KEY, this.replica);
  }
}

function read(text: string | undefined): Member | undefined {
  if (text === undefined) return undefined;
  try {
    const checked = MEMBER.safeParse(JSON.parse(text));
    return checked.success ? checked.data : undefined;
  } catch {
    return undefined;
  }
}
