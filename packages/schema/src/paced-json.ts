/** Serialising done between two turns of the event loop, in ms (by default). */
const SLICE_MS = 5;
/** Arrays this long or longer are written element by element, looking at the clock between. */
const LONG_ARRAY = 64;
/** How deep objects are opened to find long arrays; below, a value is one JSON.stringify. */
const MAX_DEPTH = 4;

function plainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && !('toJSON' in value && typeof value.toJSON === 'function');
}

/**
 * `JSON.stringify(value)` (the same text, for JSON data: objects, arrays, strings, numbers,
 * booleans, null, and values with toJSON), written in slices with a turn of the event loop after
 * `sliceMs`: a storm's notification of 20,000 alerts is megabytes of JSON, and one
 * JSON.stringify of it held the loop that answers probes for 0.1 s.
 */
export async function stringifyPaced(value: unknown, sliceMs = SLICE_MS): Promise<string> {
  const parts: string[] = [];
  let slice = performance.now();
  const pace = async () => {
    if (performance.now() - slice <= sliceMs) return;
    await new Promise((resolve) => setImmediate(resolve));
    slice = performance.now();
  };
  const write = async (v: unknown, depth: number, inArray: boolean): Promise<boolean> => {
    if (Array.isArray(v) && depth < MAX_DEPTH && v.length >= LONG_ARRAY) {
      parts.push('[');
      for (let i = 0; i < v.length; i += 1) {
        if (i > 0) parts.push(',');
        // An element is one JSON.stringify: an alert, not its fields one by one.
        await write(v[i], MAX_DEPTH, true);
        if (i % 16 === 15) await pace();
      }
      parts.push(']');
      return true;
    }
    if (plainObject(v) && depth < MAX_DEPTH) {
      parts.push('{');
      let first = true;
      for (const key of Object.keys(v)) {
        const at = parts.length;
        parts.push(first ? '' : ',', JSON.stringify(key), ':');
        if (await write(v[key], depth + 1, false)) first = false;
        else parts.length = at; // undefined, a function, a symbol: left out, as JSON.stringify does
      }
      parts.push('}');
      return true;
    }
    const text: string | undefined = JSON.stringify(v); // undefined for a function or a symbol, whatever its type says
    if (text === undefined) {
      if (!inArray) return false;
      parts.push('null');
      return true;
    }
    parts.push(text);
    return true;
  };
  if (!(await write(value, 0, false))) return JSON.stringify(value);
  return parts.join('');
}
