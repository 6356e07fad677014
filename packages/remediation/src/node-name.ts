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

/** One DNS label of an RFC 1123 subdomain: lower-case letters, digits and `-`, a letter or digit at each end. */
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;
/** The longest DNS label (RFC 1123). */
const MAX_LABEL_LENGTH = 63;

/**
 * Why `host` cannot be named to Kubernetes, or undefined when it can: everything
 * `nodeNameProblem` refuses, and then what a Node's name must be (an RFC 1123 subdomain: at most
 * 253 characters, dot-separated labels of lower-case letters, digits and `-`). A name checked here
 * is safe as one segment of an API URL: no `/`, `?`, `%`, `#` or `..`.
 */
export function kubernetesNodeNameProblem(host: unknown): string | undefined {
  const common = nodeNameProblem(host);
  if (common !== undefined || typeof host !== 'string') return common;
  const labels = host.split('.');
  if (labels.some((label) => label.length > MAX_LABEL_LENGTH)) return `a Kubernetes node name's parts between dots are at most ${MAX_LABEL_LENGTH} characters`;
  if (!labels.every((label) => DNS_LABEL.test(label)))
    return 'a Kubernetes node name is an RFC 1123 subdomain: lower-case letters, digits, "-" and ".", each part starting and ending with a letter or digit';
  return undefined;
}

/** A short, printable quote of a refused name for a message: one line, at most 80 characters. */
export function quoteName(host: unknown): string {
  const text = typeof host === 'string' ? host : String(host);
  const cut = text.length > 80 ? `${text.slice(0, 80)}…` : text;
  return JSON.stringify(cut);
}
