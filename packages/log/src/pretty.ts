const LEVELS = new Map<number, string>([
  [10, 'TRACE'],
  [20, 'DEBUG'],
  [30, 'INFO'],
  [40, 'WARN'],
  [50, 'ERROR'],
  [60, 'FATAL'],
]);
const COLORS = new Map<number, string>([
  [40, '\x1b[33m'],
  [50, '\x1b[31m'],
  [60, '\x1b[1;31m'],
]);
const OMIT = new Set(['level', 'time', 'service', 'msg', 'pid', 'hostname']);

/** A control character reaching a terminal is an escape sequence: shown as JSON's \uXXXX instead. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

function show(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=\u0000-\u001f\u007f-\u009f]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

/**
 * One pino JSON line as a person reads it: `21:14:03 WARN  intake  intake_has_no_credentials: …
 * port=9468`. A line that is not JSON passes through as it came.
 */
export function prettyLine(json: string, color: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = typeof entry.level === 'number' ? entry.level : 30;
  const name = (LEVELS.get(level) ?? String(level)).padEnd(5);
  const tag = color && COLORS.has(level) ? `${COLORS.get(level)}${name}\x1b[0m` : name;
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 19) : '';
  const fields = Object.keys(entry)
    .filter((key) => !OMIT.has(key))
    .map((key) => `${key}=${show(entry[key])}`);
  const service = typeof entry.service === 'string' ? `${entry.service}  ` : '';
  const msg = String(entry.msg ?? '').replace(CONTROL, (c) => JSON.stringify(c).slice(1, -1));
  return `${time} ${tag} ${service}${msg}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}\n`;
}

/** A stream pino writes JSON lines into and a terminal receives readable ones from. */
export function prettyDestination(out: NodeJS.WritableStream): { write(line: string): boolean } {
  const color = 'isTTY' in out && out.isTTY === true;
  return { write: (line: string) => out.write(prettyLine(line, color)) };
}
