/** `rule|gpu`, the tracker key of a per-GPU rule: made once per rule and GPU, not per sample. */
export function ruleKey(rule: string, gpu: number): string {
  let keys = RULE_KEYS.get(rule);
  if (!keys) RULE_KEYS.set(rule, (keys = []));
  return (keys[gpu] ??= `${rule}|${gpu}`);
}

const RULE_KEYS = new Map<string, string[]>();

/** `rule|`, the tracker key of a host-level rule. */
export function hostKey(rule: string): string {
  let key = HOST_KEYS.get(rule);
  if (key === undefined) HOST_KEYS.set(rule, (key = `${rule}|`));
  return key;
}

const HOST_KEYS = new Map<string, string>();
