import { z } from 'zod';

/**
 * The shapes settings share across commands, so that a port, a list or a token reads and fails
 * the same way wherever it is set.
 */

/** A TCP port: digits only, 0 to 65535 (0 picks a free one). " 80", "0x50" and "1e3" are refused, not coerced. */
export const portSetting = z.union([z.string(), z.number()]).transform((value, context) => {
  const text = String(value);
  const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isInteger(port) || port > 65_535) {
    context.addIssue({ code: 'custom', message: 'expected a port 0-65535' });
    return z.NEVER;
  }
  return port;
});

/** A list from a variable ("a,b c") or a file (a YAML sequence): commas or white space between items, empty items dropped. */
export function listSetting<T extends z.ZodType>(item: T) {
  return z.preprocess((value) => (typeof value === 'string' ? value.split(/[\s,]+/).filter((s) => s !== '') : value), z.array(item));
}

/** The shortest shared token gpualert takes: guessed byte by byte no faster than 2^128 tries. */
export const MIN_TOKEN_CHARS = 16;

/**
 * A bearer token: at least 16 characters, and nothing a request header would lose or break on
 * (surrounding white space, a line break), since no request could present such a token.
 */
export const tokenSetting = z
  .string()
  .min(MIN_TOKEN_CHARS, `must be at least ${MIN_TOKEN_CHARS} characters`)
  .refine((token) => !/^\s|\s$|[\r\n]/.test(token), 'must not start or end with white space, nor hold a line break (no request could present it)');

/** An address to listen on: an IPv4 or IPv6 address or a host name, no port. */
export const listenSetting = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[A-Za-z0-9.:_%-]+$/, 'expected an address to listen on (0.0.0.0, ::, 127.0.0.1, a host name)');
