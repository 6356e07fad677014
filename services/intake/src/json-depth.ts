/**
 * Provider payloads nest a handful of levels (AWS Health: 4, Azure Scheduled Events: 3); 64
 * keeps any real one and refuses a nesting bomb before anything walks it recursively
 * (100,000 levels overflow the stack of JSON.stringify and of any recursive adapter).
 */
export const MAX_JSON_DEPTH = 64;

const OPEN_OBJECT = 0x7b;
const OPEN_ARRAY = 0x5b;
const CLOSE_OBJECT = 0x7d;
const CLOSE_ARRAY = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Whether JSON text nests objects and arrays deeper than `max`: one pass over the bytes, no parse. */
export function jsonDepthExceeds(body: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i += 1) {
    // A byte loop over the whole body that skips escapes by index: no iterator, no check per byte.
    // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- i < body.length
    const byte = body[i]!;
    if (inString) {
      if (byte === BACKSLASH) i += 1;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) {
      inString = true;
    } else if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      depth += 1;
      if (depth > max) return true;
    } else if (byte === CLOSE_OBJECT || byte === CLOSE_ARRAY) {
      depth -= 1;
    }
  }
  return false;
}
