import { createHash } from 'node:crypto';

/**
 * A UUID-shaped id derived from what identifies an event (host, source position, …): the same
 * event read twice — after a collector restart, say — gets the same id, and consumers dedupe on it.
 */
export function stableId(...parts: readonly (string | number)[]): string {
  const hex = createHash('sha256').update(parts.join('\u0000')).digest('hex');
  // RFC 9562 version 8 (custom) with the variant bits set.
  const variant = ((Number.parseInt(hex.charAt(16), 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
