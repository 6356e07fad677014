import { MAX_HOST_LENGTH } from '@gpualert/schema';

/**
 * A host name that Slurm and Kubernetes both read as one node and nothing else: letters, digits,
 * `-`, `_` and `.`, starting and ending with a letter or digit. Refused, with the reason: a
 * leading `-` (an option to scontrol), `,` or `[` (a Slurm host list: `gpu-[01-99]` drains a
 * hundred), `/` (a path in an API URL), `=` and spaces (another `key=value` to scontrol), `..`,
 * `ALL` (every node to Slurm), control characters, and anything longer than a DNS name.
 */
const NODE_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$/;

/** Why `host` cannot be named to a scheduler, or undefined when it can. */
export function nodeNameProblem(host: unknown): string | undefined {
  if (typeof host !== 'string') return 'a node name must be a string';
  if (host.length === 0) return 'a node name must not be empty';
  if (host.length > MAX_HOST_LENGTH) return `a node name is at most ${MAX_HOST_LENGTH} characters (got ${host.length})`;
  if (host.startsWith('-')) return 'a node name must not start with "-" (it would be read as an option)';
  if (/[,[\]]/.test(host)) return 'a node name must not hold "," "[" or "]" (Slurm reads it as a list of nodes)';
  if (host.includes('/')) return 'a node name must not hold "/" (it would be read as a path)';
  if (host.includes('..')) return 'a node name must not hold ".."';
  if (host.toUpperCase() === 'ALL') return 'a node name must not be "ALL" (Slurm reads it as every node)';
  if (!NODE_NAME.test(host)) return 'a node name is letters, digits, "-", "_" and ".", starting and ending with a letter or digit';
  return undefined;
}

/** A short, printable quote of a refused name for a message: one line, at most 80 characters. */
export function quoteName(host: unknown): string {
  const text = typeof host === 'string' ? host : String(host);
  const cut = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return JSON.stringify(cut);
}
