/**
 * The values Alertmanager's templates see (template/template.go in Alertmanager 0.25): Data, Alert,
 * Alerts, KV, Pairs, Pair, Strings, and the types Go's text/template prints and compares. One table
 * of fields and methods serves both the load-time check and execution, so what loads runs.
 */
import { must } from './must.ts';

/** Go's `time.Time` as Alertmanager's alerts carry it (UTC). */
export class GoTime {
  constructor(readonly ms: number) {}
}

/** `safeHtml`'s result: not escaped again in an HTML field. */
export class SafeHtml {
  constructor(readonly text: string) {}
}

/** A map[string]string (Alertmanager's KV): keys are outside data, so a Map. */
export class GoKV {
  constructor(readonly map: ReadonlyMap<string, string>) {}

  /** Alertmanager's order: `alertname` first, then the other names sorted. */
  sortedKeys(): string[] {
    const keys = [...this.map.keys()].filter((k) => k !== 'alertname').sort(byteOrder);
    return this.map.has('alertname') ? ['alertname', ...keys] : keys;
  }
}

/** Go sorts strings by bytes; for UTF-16 this is the same order except for astral characters, which Go orders by code point. */
export function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** A struct's field, or undefined when `v` is not a struct (a Pairs list holds Pair structs, an Alerts list Alert structs). */
function field(v: Value, name: string): Value | undefined {
  return v instanceof GoStruct ? v.fields.get(name) : undefined;
}

/** The type names the checker and the interpreter share. */
export type GoType = 'Data' | 'Alert' | 'Alerts' | 'KV' | 'Pairs' | 'Pair' | 'Strings' | 'string' | 'number' | 'bool' | 'time' | 'html' | 'nil' | 'any';

/** A list with its Go type (Alerts, Pairs, Strings or a plain list of anything). */
export class GoList {
  constructor(
    readonly type: 'Alerts' | 'Pairs' | 'Strings' | 'any',
    readonly items: readonly Value[],
  ) {}
}

/** A Go struct: Data, Alert or Pair, fields by name. */
export class GoStruct {
  constructor(
    readonly type: 'Data' | 'Alert' | 'Pair',
    readonly fields: ReadonlyMap<string, Value>,
  ) {}
}

export type Value = string | number | boolean | null | GoTime | SafeHtml | GoKV | GoList | GoStruct;

/** A field or method: its result type, and for methods the argument types. */
interface Member {
  readonly type: GoType;
  readonly args?: readonly GoType[];
}

/** Every field and method the subset knows, by the type that holds it (template.go, 0.25). */
export const MEMBERS: Readonly<Record<'Data' | 'Alert' | 'Alerts' | 'KV' | 'Pairs' | 'Pair' | 'time', Readonly<Record<string, Member>>>> = {
  Data: {
    Receiver: { type: 'string' },
    Status: { type: 'string' },
    Alerts: { type: 'Alerts' },
    GroupLabels: { type: 'KV' },
    CommonLabels: { type: 'KV' },
    CommonAnnotations: { type: 'KV' },
    ExternalURL: { type: 'string' },
  },
  Alert: {
    Status: { type: 'string' },
    Labels: { type: 'KV' },
    Annotations: { type: 'KV' },
    StartsAt: { type: 'time' },
    EndsAt: { type: 'time' },
    GeneratorURL: { type: 'string' },
    Fingerprint: { type: 'string' },
  },
  Alerts: { Firing: { type: 'Alerts', args: [] }, Resolved: { type: 'Alerts', args: [] } },
  KV: {
    SortedPairs: { type: 'Pairs', args: [] },
    Names: { type: 'Strings', args: [] },
    Values: { type: 'Strings', args: [] },
    Remove: { type: 'KV', args: ['Strings'] },
    String: { type: 'string', args: [] },
  },
  Pairs: { Names: { type: 'Strings', args: [] }, Values: { type: 'Strings', args: [] }, String: { type: 'string', args: [] } },
  Pair: { Name: { type: 'string' }, Value: { type: 'string' } },
  /** Go's time.Time, the methods templates use: `.StartsAt.Format "2006-01-02 15:04"`, `.UTC`, `.Unix`. */
  time: { Format: { type: 'string', args: ['string'] }, UTC: { type: 'time', args: [] }, Unix: { type: 'number', args: [] } },
};

export function memberOf(type: GoType, name: string): Member | undefined {
  if (type === 'Data' || type === 'Alert' || type === 'Alerts' || type === 'KV' || type === 'Pairs' || type === 'Pair' || type === 'time') {
    return Object.hasOwn(MEMBERS[type], name) ? MEMBERS[type][name] : undefined;
  }
  return undefined;
}

export function typeOf(v: Value): GoType {
  if (v === null) return 'nil';
  if (typeof v === 'string') return 'string';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'boolean') return 'bool';
  if (v instanceof GoTime) return 'time';
  if (v instanceof SafeHtml) return 'html';
  if (v instanceof GoKV) return 'KV';
  if (v instanceof GoList) return v.type === 'any' ? 'any' : v.type;
  return v.type;
}

export function pairsOf(kv: GoKV): GoList {
  return new GoList(
    'Pairs',
    kv.sortedKeys().map((k) => pair(k, must(kv.map.get(k), 'a sorted key of the map to be in it'))),
  );
}

export function pair(name: string, value: string): GoStruct {
  return new GoStruct(
    'Pair',
    new Map<string, Value>([
      ['Name', name],
      ['Value', value],
    ]),
  );
}

function pairsString(list: GoList): string {
  return list.items.map((p) => `${str(field(p, 'Name'))}=${str(field(p, 'Value'))}`).join(', ');
}

function str(v: Value | undefined): string {
  return typeof v === 'string' ? v : '';
}

/** A method call on a value, as template.go defines them. */
export function callMethod(v: GoKV | GoList | GoTime, name: string, args: readonly Value[]): Value {
  if (v instanceof GoTime) return name === 'Format' ? goFormat(v, String(args[0])) : name === 'Unix' ? Math.floor(v.ms / 1000) : v;
  if (v instanceof GoKV) {
    switch (name) {
      case 'SortedPairs':
        return pairsOf(v);
      case 'Names':
        return new GoList('Strings', v.sortedKeys());
      case 'Values':
        return new GoList(
          'Strings',
          pairsOf(v).items.map((p) => str(field(p, 'Value'))),
        );
      case 'Remove': {
        // The interpreter refuses a Remove whose argument is not a list before it gets here.
        const list = args[0];
        const drop = new Set(list instanceof GoList ? list.items.map(String) : []);
        return new GoKV(new Map([...v.map].filter(([k]) => !drop.has(k))));
      }
      case 'String':
        return pairsString(pairsOf(v));
      default:
        return v.map.get(name) ?? '';
    }
  }
  if (v.type === 'Alerts') {
    const status = name === 'Firing' ? 'firing' : 'resolved';
    return new GoList(
      'Alerts',
      v.items.filter((a) => field(a, 'Status') === status),
    );
  }
  const values = v.items.map((p) => str(field(p, name === 'Names' ? 'Name' : 'Value')));
  return name === 'String' ? pairsString(v) : new GoList('Strings', values);
}

/** Go's `time.Time.String()` in UTC: `2006-01-02 15:04:05.999999999 +0000 UTC`. */
export function goTimeString(t: GoTime): string {
  if (t.ms <= -62135596800000) return '0001-01-01 00:00:00 +0000 UTC';
  const iso = new Date(t.ms).toISOString(); // 2006-01-02T15:04:05.123Z
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''} +0000 UTC`;
}

/** `fmt.Sprint` of a value, as text/template prints it. */
export function printValue(v: Value): string {
  if (v === null) return '<no value>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (v instanceof GoTime) return goTimeString(v);
  if (v instanceof SafeHtml) return v.text;
  if (v instanceof GoKV) return pairsString(pairsOf(v));
  if (v instanceof GoList) return v.type === 'Pairs' ? pairsString(v) : `[${v.items.map(printValue).join(' ')}]`;
  return `{${[...v.fields.values()].map(printValue).join(' ')}}`;
}

/** Go's truth: false, 0, nil, and empty strings, lists and maps are false. */
export function truth(v: Value): boolean {
  if (v === null || v === false || v === 0 || v === '') return false;
  if (v instanceof GoKV) return v.map.size > 0;
  if (v instanceof GoList) return v.items.length > 0;
  if (v instanceof SafeHtml) return v.text !== '';
  return true;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

/** Go's layout elements (time/format.go's nextStdChunk), longest first where one is a prefix of another. */
const LAYOUT =
  /January|Jan|Monday|Mon|MST|Z07:00:00|Z070000|Z07:00|Z0700|Z07|-07:00:00|-070000|-07:00|-0700|-07|2006|002|01|02|_2|15|03|04|05|06|PM|pm|[.,](?:0+|9+)(?![0-9])|1|2|3|4|5/g;

/** Go's `Time.Format(layout)` for a time in UTC (the zone gpualert's alerts carry). */
export function goFormat(t: GoTime, layout: string): string {
  const d = new Date(t.ms);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const h = d.getUTCHours();
  const yday = Math.floor((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1;
  return layout.replace(LAYOUT, (e) => {
    switch (e) {
      case 'January':
        return must(MONTHS[d.getUTCMonth()], 'a month 0 to 11');
      case 'Jan':
        return must(MONTHS[d.getUTCMonth()], 'a month 0 to 11').slice(0, 3);
      case 'Monday':
        return must(DAYS[d.getUTCDay()], 'a weekday 0 to 6');
      case 'Mon':
        return must(DAYS[d.getUTCDay()], 'a weekday 0 to 6').slice(0, 3);
      case 'MST':
        return 'UTC';
      case 'Z07:00:00':
      case 'Z070000':
      case 'Z07:00':
      case 'Z0700':
      case 'Z07':
        return 'Z';
      case '-07:00:00':
        return '+00:00:00';
      case '-070000':
        return '+000000';
      case '-07:00':
        return '+00:00';
      case '-0700':
        return '+0000';
      case '-07':
        return '+00';
      case '2006':
        return pad(d.getUTCFullYear(), 4);
      case '06':
        return pad(d.getUTCFullYear() % 100);
      case '002':
        return pad(yday, 3);
      case '01':
        return pad(d.getUTCMonth() + 1);
      case '1':
        return String(d.getUTCMonth() + 1);
      case '02':
        return pad(d.getUTCDate());
      case '_2':
        return String(d.getUTCDate()).padStart(2, ' ');
      case '2':
        return String(d.getUTCDate());
      case '15':
        return pad(h);
      case '03':
        return pad(h % 12 || 12);
      case '3':
        return String(h % 12 || 12);
      case '04':
        return pad(d.getUTCMinutes());
      case '4':
        return String(d.getUTCMinutes());
      case '05':
        return pad(d.getUTCSeconds());
      case '5':
        return String(d.getUTCSeconds());
      case 'PM':
        return h >= 12 ? 'PM' : 'AM';
      case 'pm':
        return h >= 12 ? 'pm' : 'am';
      default: {
        // .000 (fixed) or .999 (trailing zeros trimmed) fractional seconds; milliseconds are all a JS time holds.
        const digits = e.length - 1;
        const frac = pad(((t.ms % 1000) + 1000) % 1000, 3)
          .padEnd(digits, '0')
          .slice(0, digits);
        if (e[1] === '0') return e[0] + frac;
        const trimmed = frac.replace(/0+$/, '');
        return trimmed ? e[0] + trimmed : '';
      }
    }
  });
}
