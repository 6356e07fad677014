/**
 * Keys that one command touches together, by the group they share. Redis Cluster runs a command
 * on several keys only when they hash to one slot (else CROSSSLOT), so there each of these keys
 * carries its group as a hash tag. Every other key hashes alone, and the store deletes such keys
 * one command each, so that hosts' state spreads over every master.
 *
 * Only DEL touches several keys (the store's scripts take one); its callers were checked:
 * - the notifier's state (services/notifier/src/notifier-state-store.ts) is deleted in one DEL of
 *   its groups, group alerts and firing alerts when it does not read or is migrated from the one
 *   document of gpualert 1; the rest and that old document are the same state, kept beside them;
 * - `engine:host:*` of the hosts forgotten at once (services/engine/src/host-forgetting.ts): each
 *   host's state stands alone, so they are not grouped (one slot would put every host on one master).
 */
export const SLOT_GROUPS: ReadonlyMap<string, string> = new Map([
  ['notifier:groups', 'notifier-state'],
  ['notifier:group-alerts', 'notifier-state'],
  ['notifier:firing', 'notifier-state'],
  ['notifier:state:rest', 'notifier-state'],
  ['notifier:state', 'notifier-state'],
]);

/**
 * The name a key has on Redis Cluster: its group's hash tag in front of the deployment's prefix
 * (`{notifier-state}gpualert:notifier:groups`), else the prefixed key as on one server. The tag
 * comes first so that it is the one Redis hashes whatever braces the prefix or the key hold.
 */
export function clusterKey(prefix: string, key: string, groups: ReadonlyMap<string, string> = SLOT_GROUPS): string {
  const group = slotGroupOf(key, groups);
  return group === undefined ? `${prefix}${key}` : `{${group}}${prefix}${key}`;
}

/** The group a key hashes with on Redis Cluster (its own, or a notifier replica's copy of a grouped key), if any. */
export function slotGroupOf(key: string, groups: ReadonlyMap<string, string> = SLOT_GROUPS): string | undefined {
  return groups.get(key) ?? replicaGroup(key, groups);
}

/** A notifier replica's own keys (services/notifier/src/cluster/replica-store.ts): `notifier:replica:<name>:<key>`. */
const REPLICA_KEY = /^notifier:replica:([a-z0-9._-]{1,63}):(.+)$/;

/** A replica's copy of a grouped key is grouped per replica (`notifier-state:<name>`): each replica's state is deleted as one, and replicas spread over masters. */
function replicaGroup(key: string, groups: ReadonlyMap<string, string>): string | undefined {
  const match = REPLICA_KEY.exec(key);
  const group = match?.[2] === undefined ? undefined : groups.get(match[2]);
  return group === undefined || match?.[1] === undefined ? undefined : `${group}:${match[1]}`;
}
