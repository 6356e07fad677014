import { RE2JS } from 're2js';
import { FUNCTIONS, parseTemplate, TemplateError, type Arg, type Node, type Pipe } from './go-template-parse.ts';
import { callMethod, GoKV, GoList, GoStruct, GoTime, memberOf, printValue, SafeHtml, truth, typeOf, type GoType, type Value } from './go-template-values.ts';
import { must } from './must.ts';

export { TemplateError };
export type { GoType, Value };

/**
 * A hand-written interpreter for the subset of Go's text/template that Alertmanager's templates use
 * (see go-template-parse.ts for the syntax). No eval: a tree walk, with stated bounds on output,
 * steps and template calls. A template is checked at load against the types Alertmanager gives
 * it (Data, Alert, KV…), so a field or function outside the subset is a load error with its line,
 * never a surprise on the first alert.
 */

/** The most a rendered field may be: Slack takes 3,000 characters a section, an email body more; 64 KiB is far above any. */
export const MAX_OUTPUT_CHARS = 64 * 1024;
/** Range iterations and actions one rendering may take: a group of 1,000 alerts with 64 labels each fits. */
export const MAX_STEPS = 200_000;
/** Nested `{{template}}` calls (Go allows 100,000; a template that calls itself this deep is a mistake). */
export const MAX_CALL_DEPTH = 32;

/** Where a template came from, for its errors: a file and the line its text starts on. */
export interface Origin {
  readonly file: string;
  readonly line: number;
}

interface Defined {
  readonly nodes: readonly Node[];
  readonly origin: Origin;
}

/** Named templates (`define`): Alertmanager's defaults, then the `templates:` files, later ones winning as in Go. */
export class TemplateSet {
  readonly defined = new Map<string, Defined>();

  /** Parses one text and keeps its defines; throws TemplateError (line within the file). */
  add(text: string, origin: Origin): void {
    const parsed = parseTemplate(text, origin.line);
    for (const [name, d] of parsed.defines) this.defined.set(name, { nodes: d.nodes, origin });
  }
}

/** One template field (a receiver's `title`, `text`…), parsed and checked. */
export class CompiledTemplate {
  private constructor(
    readonly source: string,
    readonly nodes: readonly Node[],
    readonly origin: Origin,
    readonly set: TemplateSet,
    /** An HTML field (email `html`): every printed value escaped unless safeHtml, as html/template does in text. */
    readonly html: boolean,
  ) {}

  /** Parses and checks a field's text against the set; throws TemplateError naming the line and the construct. */
  static compile(source: string, set: TemplateSet, origin: Origin, html = false, dot: GoType = 'Data'): CompiledTemplate {
    const parsed = parseTemplate(source, origin.line);
    // Defines inside a field are visible to it (Go parses the field into the same set).
    let own = set;
    if (parsed.defines.size > 0) {
      own = new TemplateSet();
      for (const [name, d] of set.defined) own.defined.set(name, d);
      for (const [name, d] of parsed.defines) own.defined.set(name, { nodes: d.nodes, origin });
    }
    const compiled = new CompiledTemplate(source, parsed.nodes, origin, own, html);
    new Checker(own).nodes(parsed.nodes, dot, [new Map([['$', dot]])]);
    return compiled;
  }

  /**
   * Renders with Alertmanager's data; throws TemplateError on a runtime error (a bound, a bad regex).
   * `escape` applies to every printed value (never the template's own text): a channel's markup.
   */
  render(data: Value, escape?: (s: string) => string): string {
    const run = new Run(this.set, this.html ? escapeHtmlText : escape);
    run.nodes(this.nodes, data, [new Map([['$', data]])]);
    return run.out;
  }
}

// ---------------------------------------------------------------------------------------------
// The load-time check: the types Alertmanager's data has, followed through the template.

type Scope = Map<string, GoType>[];

const ELEMENT: Partial<Record<GoType, GoType>> = { Alerts: 'Alert', Pairs: 'Pair', Strings: 'string', KV: 'string', any: 'any' };
const STRINGISH = new Set<GoType>(['string', 'html', 'any', 'nil']);

/** What each function returns, and the argument types it needs (checked where known). */
function funcType(name: string, args: readonly GoType[], line: number): GoType {
  const need = (i: number, ok: readonly GoType[], what: string) => {
    const t = args[i];
    if (t !== undefined && t !== 'any' && !ok.includes(t)) throw new TemplateError(line, `${name}: argument ${i + 1} must be ${what}, not ${t}`);
  };
  const count = (min: number, max = min) => {
    if (args.length < min || args.length > max)
      throw new TemplateError(line, `wrong number of args for ${name}: want ${min === max ? min : `${min} to ${max}`} got ${args.length}`);
  };
  switch (name) {
    case 'toUpper':
    case 'toLower':
    case 'title':
    case 'trimSpace':
    case 'safeHtml':
      count(1);
      need(0, [...STRINGISH], 'a string');
      return name === 'safeHtml' ? 'html' : 'string';
    case 'join':
      count(2);
      need(0, ['string'], 'a string');
      need(1, ['Strings'], 'a list of strings (.Values, .Names, stringSlice …)');
      return 'string';
    case 'match':
      count(2);
      need(0, ['string'], 'a string');
      need(1, [...STRINGISH], 'a string');
      return 'bool';
    case 'reReplaceAll':
      count(3);
      for (const i of [0, 1, 2]) need(i, [...STRINGISH], 'a string');
      return 'string';
    case 'stringSlice':
      args.forEach((_t, i) => need(i, [...STRINGISH], 'a string'));
      return 'Strings';
    case 'len':
      count(1);
      need(0, ['string', 'Alerts', 'Pairs', 'Strings', 'KV', 'html'], 'a string, list or map');
      return 'number';
    case 'index':
      count(2);
      need(0, ['KV', 'Alerts', 'Pairs', 'Strings'], 'a map or list');
      return args[0] === 'KV' ? 'string' : (ELEMENT[args[0] ?? 'any'] ?? 'any');
    case 'eq':
    case 'ne':
    case 'lt':
    case 'le':
    case 'gt':
    case 'ge':
      count(2, name === 'eq' ? 16 : 2);
      return 'bool';
    case 'not':
      count(1);
      return 'bool';
    case 'and':
    case 'or':
      count(1, 16);
      const [head = 'any'] = args; // count(1, 16): there is a head
      return args.every((t) => t === head) ? head : 'any';
    case 'printf':
      if (args.length < 1) throw new TemplateError(line, 'wrong number of args for printf: want at least 1');
      need(0, ['string'], 'a format string');
      return 'string';
    default:
      return 'string'; // print, println, html, urlquery
  }
}

class Checker {
  /** (template name, dot type) already checked, or being checked (recursion). */
  private readonly seen = new Set<string>();
  private steps = 0;

  constructor(private readonly set: TemplateSet) {}

  nodes(nodes: readonly Node[], dot: GoType, scope: Scope): void {
    for (const node of nodes) {
      if (++this.steps > 100_000) throw new TemplateError(0, 'template too large to check');
      switch (node.k) {
        case 'text':
          break;
        case 'action':
          this.pipe(node.pipe, dot, scope);
          break;
        case 'if':
        case 'with':
        case 'range': {
          const own = new Map<string, GoType>();
          const inner: Scope = [...scope, own];
          const t = this.pipe(node.pipe, dot, inner, node.k === 'range');
          let bodyDot = dot;
          if (node.k === 'with') bodyDot = t;
          if (node.k === 'range') {
            const element = ELEMENT[t];
            if (!element) throw new TemplateError(node.line, `range can't iterate over ${t}`);
            bodyDot = element;
            const names = node.pipe.decl?.names;
            if (names?.length === 2) {
              own.set(names[0], t === 'KV' ? 'string' : 'number');
              own.set(names[1], element);
            } else if (names?.length === 1) own.set(names[0], element);
          }
          this.nodes(node.list, bodyDot, inner);
          if (node.else) this.nodes(node.else, dot, [...scope, new Map()]);
          break;
        }
        case 'template': {
          const d = this.set.defined.get(node.name);
          if (!d) throw new TemplateError(node.line, `no such template "${node.name}"`);
          const t = node.pipe ? this.pipe(node.pipe, dot, scope) : 'nil';
          const key = `${node.name}\u0000${t}`;
          if (this.seen.has(key)) break;
          this.seen.add(key);
          try {
            this.nodes(d.nodes, t, [new Map([['$', t]])]);
          } catch (error) {
            if (error instanceof TemplateError && d.origin.file !== '' && !error.message.startsWith('in template')) {
              throw new TemplateError(error.line, `in template "${node.name}" (${d.origin.file}:${error.line}): ${error.message}`);
            }
            throw error;
          }
          break;
        }
      }
    }
  }

  pipe(pipe: Pipe, dot: GoType, scope: Scope, range = false): GoType {
    let t: GoType | undefined;
    for (const cmd of pipe.cmds) t = this.cmd(cmd.args, t, dot, scope, pipe.line);
    const result = t ?? 'any';
    if (pipe.decl && !range) {
      const name = pipe.decl.names[0];
      if (pipe.decl.op === ':=') must(scope.at(-1), 'a scope with its innermost level').set(name, result);
      else if (!scope.some((s) => s.has(name))) throw new TemplateError(pipe.line, `undefined variable: ${name}`);
      else
        for (let i = scope.length - 1; i >= 0; i -= 1) {
          const t = scope[i]?.get(name);
          if (t !== undefined) {
            if (t !== result) scope[i]?.set(name, 'any');
            break;
          }
        }
    }
    return result;
  }

  private cmd(args: readonly [Arg, ...Arg[]], piped: GoType | undefined, dot: GoType, scope: Scope, line: number): GoType {
    const [first, ...rest] = args;
    const more = [...rest.map((a) => this.arg(a, dot, scope, line)), ...(piped !== undefined ? [piped] : [])];
    if (first.k === 'func') return funcType(first.name, more, line);
    if (first.k === 'dot' || first.k === 'var' || first.k === 'pipe') {
      const chain = first.chain;
      const last = chain.at(-1);
      if (last !== undefined && more.length > 0) {
        const base = this.base(first, dot, scope, line);
        const receiver = this.chain(base, chain.slice(0, -1), line);
        return this.member(receiver, last, more, line);
      }
    }
    if (more.length > 0) throw new TemplateError(line, `can't give argument to non-function ${describe(first)}`);
    return this.arg(first, dot, scope, line);
  }

  private base(a: Arg, dot: GoType, scope: Scope, line: number): GoType {
    if (a.k === 'dot') return dot;
    if (a.k === 'var') {
      for (let i = scope.length - 1; i >= 0; i -= 1) {
        const t = scope[i]?.get(a.name);
        if (t !== undefined) return t;
      }
      throw new TemplateError(line, `undefined variable: ${a.name}`);
    }
    if (a.k === 'pipe') return this.pipe(a.pipe, dot, [...scope, new Map()]);
    return 'any';
  }

  arg(a: Arg, dot: GoType, scope: Scope, line: number): GoType {
    switch (a.k) {
      case 'lit':
        return a.value === null ? 'nil' : typeof a.value === 'string' ? 'string' : typeof a.value === 'number' ? 'number' : 'bool';
      case 'func':
        return funcType(a.name, [], line);
      default:
        return this.chain(this.base(a, dot, scope, line), a.chain, line);
    }
  }

  private chain(t: GoType, names: readonly string[], line: number): GoType {
    for (const name of names) t = this.member(t, name, [], line);
    return t;
  }

  private member(t: GoType, name: string, args: readonly GoType[], line: number): GoType {
    if (t === 'any') return 'any';
    const m = memberOf(t, name);
    if (!m) {
      if (t === 'KV' && args.length === 0) return 'string'; // a label or annotation by name
      if (t === 'time') throw new TemplateError(line, `.${name}: of a time's methods gpualert's templates support Format, UTC and Unix`);
      throw new TemplateError(line, `can't evaluate field ${name} in type ${t}`);
    }
    const wanted = m.args ?? [];
    if (m.args === undefined && args.length > 0) throw new TemplateError(line, `${name} is a field of ${t}, not a method: it takes no arguments`);
    if (args.length !== wanted.length) throw new TemplateError(line, `wrong number of args for ${name}: want ${wanted.length} got ${args.length}`);
    args.forEach((a, i) => {
      if (a !== 'any' && a !== wanted[i]) throw new TemplateError(line, `${name}: argument ${i + 1} must be ${wanted[i]}, not ${a}`);
    });
    return m.type;
  }
}

function describe(a: Arg): string {
  switch (a.k) {
    case 'lit':
      return JSON.stringify(a.value);
    case 'dot':
      return a.chain.length ? `.${a.chain.join('.')}` : '.';
    case 'var':
      return `${a.name}${a.chain.map((n) => `.${n}`).join('')}`;
    case 'func':
      return a.name;
    case 'pipe':
      return '(…)';
  }
}

// ---------------------------------------------------------------------------------------------
// Execution.

type VarScope = Map<string, Value>[];

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', "'": '&#39;', '<': '&lt;', '>': '&gt;', '"': '&#34;', '+': '&#43;', '\u0000': '\uFFFD' };

/** html/template's escaping of text: `"&'<>+` and NUL. */
function escapeHtmlText(s: string): string {
  return s.replace(/[&'<>"+\u0000]/g, (c) => HTML_ESCAPES[c] ?? c);
}

/**
 * A value a function builds is bounded like the output: a variable that is only assigned (doubled in
 * a range, say) never reaches write(), so each produced string is checked, and checked while it is
 * built, so one call never makes more than the bound and one piece before it stops.
 */
class Bounded {
  private parts: string[] = [];
  private length = 0;

  constructor(
    private readonly what: string,
    private readonly line: number,
  ) {}

  add(s: string): void {
    this.length += s.length;
    if (this.length > MAX_OUTPUT_CHARS) throw tooLong(this.what, this.line);
    this.parts.push(s);
  }

  /** Joins with `sep`, counting it too. */
  static join(items: Iterable<string>, sep: string, what: string, line: number): string {
    const b = new Bounded(what, line);
    let first = true;
    for (const item of items) {
      if (!first) b.add(sep);
      b.add(item);
      first = false;
    }
    return b.text();
  }

  text(): string {
    return this.parts.join('');
  }
}

function tooLong(what: string, line: number): TemplateError {
  return new TemplateError(line, `${what}: result longer than ${MAX_OUTPUT_CHARS} characters`);
}

/** A value produced whole (a method's result, an escaped or upper-cased string): refused when over the bound. */
function bounded<T extends Value>(v: T, what: string, line: number): T {
  const text = typeof v === 'string' ? v : v instanceof SafeHtml ? v.text : undefined;
  if (text !== undefined && text.length > MAX_OUTPUT_CHARS) throw tooLong(what, line);
  return v;
}

/** printValue within the bound: a list of strings (stringSlice of big values) is joined piece by piece. */
function printBounded(v: Value, what: string, line: number): string {
  if (v instanceof GoList && v.type !== 'Pairs')
    return `[${Bounded.join(
      v.items.map((item) => printBounded(item, what, line)),
      ' ',
      what,
      line,
    )}]`;
  return bounded(printValue(v), what, line);
}

/** Go's regexp.ReplaceAllString: `$1`, `${1}`, `$name`, `${name}`, `$$`. */
function goReplaceAll(re: RE2JS, text: string, template: string, line: number): string {
  const m = re.matcher(text);
  const out = new Bounded('reReplaceAll', line);
  let last = 0;
  let n = 0;
  const reference = /\$(?:\$|\{([A-Za-z0-9_]+)\}|([A-Za-z0-9_]+))/g;
  while (m.find()) {
    if (++n > MAX_STEPS) throw new TemplateError(line, 'reReplaceAll: too many matches');
    out.add(text.slice(last, m.start()));
    let at = 0;
    for (const ref of template.matchAll(reference)) {
      out.add(template.slice(at, ref.index));
      at = ref.index + ref[0].length;
      if (ref[0] === '$$') {
        out.add('$');
        continue;
      }
      const name = must(ref[1] ?? ref[2], 'a reference other than $$ to name a group');
      try {
        out.add(/^\d+$/.test(name) ? (Number(name) <= m.groupCount() ? (m.group(Number(name)) ?? '') : '') : (m.group(name) ?? ''));
      } catch (error) {
        if (error instanceof TemplateError) throw error;
        // An unknown group name is empty, as in Go.
      }
    }
    out.add(template.slice(at));
    last = m.end();
  }
  out.add(text.slice(last));
  return out.text();
}

function compile(pattern: string, line: number): RE2JS {
  if (pattern.length > 4096) throw new TemplateError(line, 'regular expression longer than 4,096 characters');
  try {
    return RE2JS.compile(pattern);
  } catch (error) {
    throw new TemplateError(line, `not an RE2 regular expression: ${(error as Error).message.replace(/\s+/g, ' ').slice(0, 120)}`);
  }
}

/** cases.Title: the first letter of each word upper case, the rest lower. */
function goTitle(s: string): string {
  return s.replace(/[\p{L}\p{N}\p{M}'’]+/gu, (w) => {
    const [head = '', ...tail] = [...w];
    return head.toUpperCase() + tail.join('').toLowerCase();
  });
}

function lengthOf(v: Value, line: number): number {
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8');
  if (v instanceof SafeHtml) return Buffer.byteLength(v.text, 'utf8');
  if (v instanceof GoList) return v.items.length;
  if (v instanceof GoKV) return v.map.size;
  throw new TemplateError(line, `len of ${typeOf(v)}`);
}

function comparable(a: Value, b: Value, name: string, line: number): [string | number | boolean | null, string | number | boolean | null] {
  const basic = (v: Value) => (v instanceof SafeHtml ? v.text : v instanceof GoTime ? v.ms : v);
  const x = basic(a);
  const y = basic(b);
  if (typeof x === 'object' && x !== null) throw new TemplateError(line, `${name}: cannot compare ${typeOf(a)}`);
  if (typeof y === 'object' && y !== null) throw new TemplateError(line, `${name}: cannot compare ${typeOf(b)}`);
  if (x !== null && y !== null && typeof x !== typeof y)
    throw new TemplateError(line, `${name}: incompatible types for comparison (${typeOf(a)} and ${typeOf(b)})`);
  return [x, y];
}

/** Go's fmt verbs the subset takes: %s %v %d %q %%. */
function sprintf(format: string, args: readonly Value[], line: number): string {
  let i = 0;
  const out = new Bounded('printf', line);
  let at = 0;
  for (const m of format.matchAll(/%([-+# 0]*\d*(?:\.\d+)?)?([a-zA-Z%])/g)) {
    out.add(format.slice(at, m.index));
    at = m.index + m[0].length;
    const verb = must(m[2], 'a verb in every match of the verb pattern');
    out.add(verb === '%' ? '%' : verbOf(verb, args[i++], line));
  }
  out.add(format.slice(at));
  return out.text();
}

function verbOf(verb: string, v: Value | undefined, line: number): string {
  if (v === undefined) return `%!${verb}(MISSING)`;
  switch (verb) {
    case 's':
    case 'v':
      return printBounded(v, 'printf', line);
    case 'd':
      return typeof v === 'number' ? String(Math.trunc(v)) : `%!d(${typeOf(v)}=${printBounded(v, 'printf', line)})`;
    case 'q':
      return JSON.stringify(printBounded(v, 'printf', line));
    default:
      throw new TemplateError(line, `printf: verb %${verb} is not supported (use %s, %v, %d, %q)`);
  }
}

class Run {
  out = '';
  private steps = 0;
  private depth = 0;

  constructor(
    private readonly set: TemplateSet,
    private readonly escape: ((s: string) => string) | undefined,
  ) {}

  private write(s: string, line: number): void {
    this.out += s;
    if (this.out.length > MAX_OUTPUT_CHARS) throw new TemplateError(line, `output longer than ${MAX_OUTPUT_CHARS} characters`);
  }

  private step(line: number): void {
    if (++this.steps > MAX_STEPS) throw new TemplateError(line, `more than ${MAX_STEPS} steps`);
  }

  nodes(nodes: readonly Node[], dot: Value, scope: VarScope): void {
    for (const node of nodes) {
      switch (node.k) {
        case 'text':
          this.write(node.text, 0);
          break;
        case 'action': {
          this.step(node.line);
          const v = this.pipe(node.pipe, dot, scope);
          if (node.pipe.decl) break; // a declaration prints nothing
          this.write(this.escape && !(v instanceof SafeHtml) ? this.escape(printValue(v)) : printValue(v), node.line);
          break;
        }
        case 'if':
        case 'with': {
          this.step(node.line);
          const inner: VarScope = [...scope, new Map()];
          const v = this.pipe(node.pipe, dot, inner);
          if (truth(v)) this.nodes(node.list, node.k === 'with' ? v : dot, inner);
          else if (node.else) this.nodes(node.else, dot, [...scope, new Map()]);
          break;
        }
        case 'range': {
          const inner: VarScope = [...scope, new Map()];
          const v = this.pipe(node.pipe, dot, inner, true);
          const names = node.pipe.decl?.names;
          let entries: [Value, Value][];
          if (v instanceof GoList) entries = v.items.map((item, i) => [i, item]);
          else if (v instanceof GoKV) entries = [...v.map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
          else if (v === null) entries = [];
          else throw new TemplateError(node.line, `range can't iterate over ${typeOf(v)}`);
          if (entries.length === 0 && node.else) this.nodes(node.else, dot, [...scope, new Map()]);
          for (const [key, item] of entries) {
            this.step(node.line);
            const vars = new Map<string, Value>();
            if (names?.length === 2) {
              vars.set(names[0], key);
              vars.set(names[1], item);
            } else if (names?.length === 1) vars.set(names[0], item);
            this.nodes(node.list, item, [...inner, vars]);
          }
          break;
        }
        case 'template': {
          this.step(node.line);
          const d = this.set.defined.get(node.name);
          if (!d) throw new TemplateError(node.line, `no such template "${node.name}"`);
          if (++this.depth > MAX_CALL_DEPTH) throw new TemplateError(node.line, `{{template}} calls nested deeper than ${MAX_CALL_DEPTH}`);
          const arg = node.pipe ? this.pipe(node.pipe, dot, scope) : null;
          this.nodes(d.nodes, arg, [new Map([['$', arg]])]);
          this.depth -= 1;
          break;
        }
      }
    }
  }

  private pipe(pipe: Pipe, dot: Value, scope: VarScope, range = false): Value {
    let v: Value | undefined;
    for (const cmd of pipe.cmds) v = this.cmd(cmd.args, v, dot, scope, pipe.line);
    const result = v ?? null;
    if (pipe.decl && !range) {
      const name = pipe.decl.names[0];
      if (pipe.decl.op === ':=') must(scope.at(-1), 'a scope with its innermost level').set(name, result);
      else
        for (let i = scope.length - 1; i >= 0; i -= 1) {
          const level = scope[i];
          if (level?.has(name)) {
            level.set(name, result);
            break;
          }
        }
    }
    return result;
  }

  private cmd(args: readonly [Arg, ...Arg[]], piped: Value | undefined, dot: Value, scope: VarScope, line: number): Value {
    const [first, ...rest] = args;
    if (first.k === 'func') {
      const name = first.name;
      const lazy = [...rest.map((a) => () => this.arg(a, dot, scope, line)), ...(piped !== undefined ? [() => piped] : [])];
      return this.call(name, lazy, line);
    }
    const more = [...rest.map((a) => this.arg(a, dot, scope, line)), ...(piped !== undefined ? [piped] : [])];
    if (first.k === 'dot' || first.k === 'var' || first.k === 'pipe') {
      const last = first.chain.at(-1);
      if (last !== undefined && more.length > 0) {
        const receiver = this.chain(this.base(first, dot, scope, line), first.chain.slice(0, -1), line);
        return bounded(this.member(receiver, last, more, line), `.${last}`, line);
      }
    }
    return this.arg(first, dot, scope, line);
  }

  private base(a: Arg, dot: Value, scope: VarScope, line: number): Value {
    if (a.k === 'dot') return dot;
    if (a.k === 'var') {
      for (let i = scope.length - 1; i >= 0; i -= 1) {
        const v = scope[i]?.get(a.name);
        if (v !== undefined) return v;
      }
      throw new TemplateError(line, `undefined variable: ${a.name}`);
    }
    if (a.k === 'pipe') return this.pipe(a.pipe, dot, [...scope, new Map()]);
    return null;
  }

  private arg(a: Arg, dot: Value, scope: VarScope, line: number): Value {
    if (a.k === 'lit') return a.value;
    if (a.k === 'func') return this.call(a.name, [], line);
    return this.chain(this.base(a, dot, scope, line), a.chain, line);
  }

  private chain(v: Value, names: readonly string[], line: number): Value {
    for (const name of names) v = this.member(v, name, [], line);
    return v;
  }

  private member(v: Value, name: string, args: readonly Value[], line: number): Value {
    if (v instanceof GoStruct) {
      const f = v.fields.get(name);
      if (f === undefined) throw new TemplateError(line, `can't evaluate field ${name} in type ${v.type}`);
      return f;
    }
    if (v instanceof GoKV || v instanceof GoTime || (v instanceof GoList && (v.type === 'Alerts' || v.type === 'Pairs'))) {
      const m = memberOf(typeOf(v), name);
      if (!m && !(v instanceof GoKV)) throw new TemplateError(line, `can't evaluate field ${name} in type ${typeOf(v)}`);
      if (m && v instanceof GoTime && name === 'Format' && typeof args[0] !== 'string') throw new TemplateError(line, 'Format: the layout must be a string');
      if (m?.args && m.args.length !== args.length) throw new TemplateError(line, `wrong number of args for ${name}: want ${m.args.length} got ${args.length}`);
      if (name === 'Remove' && !(args[0] instanceof GoList)) throw new TemplateError(line, 'Remove: argument must be a list of strings');
      return callMethod(v, name, args);
    }
    if (v === null) throw new TemplateError(line, `nil pointer evaluating .${name}`);
    throw new TemplateError(line, `can't evaluate field ${name} in type ${typeOf(v)}`);
  }

  /** Every string a function returns is within the output bound (a TemplateError past it), whatever the function. */
  private call(name: string, lazy: readonly (() => Value)[], line: number): Value {
    return bounded(this.callUnbounded(name, lazy, line), name, line);
  }

  private callUnbounded(name: string, lazy: readonly (() => Value)[], line: number): Value {
    if (!FUNCTIONS.has(name)) throw new TemplateError(line, `function "${name}" not defined`);
    if (name === 'and' || name === 'or') {
      let v: Value = null;
      for (const f of lazy) {
        v = f();
        if (truth(v) === (name === 'or')) return v;
      }
      return v;
    }
    const args = lazy.map((f) => f());
    const s = (i: number): string => {
      const v = args[i];
      if (typeof v === 'string') return v;
      if (v instanceof SafeHtml) return v.text;
      throw new TemplateError(line, `${name}: argument ${i + 1} must be a string, not ${v === undefined ? 'missing' : typeOf(v)}`);
    };
    switch (name) {
      case 'toUpper':
        return s(0).toUpperCase();
      case 'toLower':
        return s(0).toLowerCase();
      case 'title':
        return goTitle(s(0));
      case 'trimSpace':
        return s(0).trim();
      case 'safeHtml':
        return new SafeHtml(s(0));
      case 'join': {
        const list = args[1];
        if (!(list instanceof GoList)) throw new TemplateError(line, 'join: argument 2 must be a list of strings');
        return Bounded.join(
          list.items.map((v) => printBounded(v, name, line)),
          s(0),
          name,
          line,
        );
      }
      case 'match':
        return compile(s(0), line).matcher(s(1)).find();
      case 'reReplaceAll':
        return goReplaceAll(compile(s(0), line), s(2), s(1), line);
      case 'stringSlice':
        return new GoList(
          'Strings',
          args.map((_v, i) => s(i)),
        );
      case 'len':
        return lengthOf(args[0] ?? null, line);
      case 'index': {
        const [c, k] = args;
        if (c instanceof GoKV) return c.map.get(typeof k === 'string' ? k : printValue(k ?? null)) ?? '';
        if (c instanceof GoList && typeof k === 'number') {
          const item = k < 0 ? undefined : c.items[k];
          if (item === undefined) throw new TemplateError(line, `index out of range: ${k}`);
          return item;
        }
        throw new TemplateError(line, 'index: expected a map and a key, or a list and a number');
      }
      case 'not':
        return !truth(args[0] ?? null);
      case 'eq': {
        const [head = null, ...others] = args; // the check counted 2 to 16
        for (const other of others) {
          const [x, y] = comparable(head, other, name, line);
          if (x === y) return true;
        }
        return false;
      }
      case 'ne':
      case 'lt':
      case 'le':
      case 'gt':
      case 'ge': {
        const [a = null, b = null] = args; // the check counted 2
        const [x, y] = comparable(a, b, name, line);
        if (name === 'ne') return x !== y;
        if (x === null || y === null || typeof x === 'boolean') throw new TemplateError(line, `${name}: invalid type for comparison`);
        return name === 'lt' ? x < y : name === 'le' ? x <= y : name === 'gt' ? x > y : x >= y;
      }
      case 'print':
        return Bounded.join(
          args.map((v) => printBounded(v, name, line)),
          '',
          name,
          line,
        );
      case 'println':
        return `${Bounded.join(
          args.map((v) => printBounded(v, name, line)),
          ' ',
          name,
          line,
        )}\n`;
      case 'printf':
        return sprintf(s(0), args.slice(1), line);
      case 'html':
        return escapeHtmlText(
          Bounded.join(
            args.map((v) => printBounded(v, name, line)),
            '',
            name,
            line,
          ),
        );
      case 'urlquery':
        return encodeURIComponent(
          Bounded.join(
            args.map((v) => printBounded(v, name, line)),
            '',
            name,
            line,
          ),
        )
          .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
          .replace(/%20/g, '+');
      default:
        throw new TemplateError(line, `function "${name}" not defined`);
    }
  }
}
