import { GpualertError } from '@gpualert/schema';
import { isNonEmpty } from './must.ts';

/**
 * A parser for the subset of Go's text/template that Alertmanager's templates use: text, actions,
 * `-` trim markers, comments, if/else if/else, range (with else and `$i, $e :=`), with, define,
 * template, block, variables (`:=`, `=`), pipelines, parenthesised pipelines and field chains.
 * Everything else is refused here, at load, naming the construct and its line.
 */

/** The longest template text taken (one field, or one templates file). */
export const MAX_TEMPLATE_CHARS = 256 * 1024;
/** How deep if/range/with and parentheses may nest. */
export const MAX_NESTING = 32;

export class TemplateError extends GpualertError {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super('GA-TEMPLATE-INVALID', message);
  }
}

export type Arg =
  | { readonly k: 'dot'; readonly chain: readonly string[] }
  | { readonly k: 'var'; readonly name: string; readonly chain: readonly string[] }
  | { readonly k: 'lit'; readonly value: string | number | boolean | null }
  | { readonly k: 'func'; readonly name: string }
  | { readonly k: 'pipe'; readonly pipe: Pipe; readonly chain: readonly string[] };

/** A command: its first argument names the function or the value, the rest are its arguments. */
export interface Cmd {
  readonly args: readonly [Arg, ...Arg[]];
  readonly line: number;
}
export interface Pipe {
  /** `$x :=` or `$x =`; a range's `$i, $e :=`. */
  readonly decl?: { readonly names: readonly [string] | readonly [string, string]; readonly op: ':=' | '=' };
  readonly cmds: readonly Cmd[];
  readonly line: number;
}

export type Node =
  | { readonly k: 'text'; readonly text: string }
  | { readonly k: 'action'; readonly pipe: Pipe; readonly line: number }
  | { readonly k: 'if' | 'with' | 'range'; readonly pipe: Pipe; readonly list: readonly Node[]; readonly else?: readonly Node[]; readonly line: number }
  | { readonly k: 'template'; readonly name: string; readonly pipe?: Pipe; readonly line: number };

/** The functions of the subset: Go's builtins that Alertmanager's templates use, and Alertmanager 0.25's own (plus trimSpace). */
export const FUNCTIONS = new Set([
  'and',
  'or',
  'not',
  'len',
  'index',
  'eq',
  'ne',
  'lt',
  'le',
  'gt',
  'ge',
  'print',
  'printf',
  'println',
  'html',
  'urlquery',
  'toUpper',
  'toLower',
  'title',
  'trimSpace',
  'join',
  'match',
  'safeHtml',
  'reReplaceAll',
  'stringSlice',
]);

interface Token {
  readonly t: 'ident' | 'field' | 'var' | 'str' | 'num' | 'bool' | 'nil' | '|' | '(' | ')' | ':=' | '=' | ',' | 'dot';
  readonly v: string;
  /** Whether space came before it (a field right after `)` or a variable continues its chain). */
  readonly spaced: boolean;
}

type Item =
  { readonly kind: 'text'; readonly text: string } | { readonly kind: 'action'; readonly tokens: readonly [Token, ...Token[]]; readonly line: number };

/** Go's `unquote` for a double-quoted string's escapes. */
function unquote(body: string, line: number): string {
  return body.replace(/\\(u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[0-7]{3}|.)/g, (_m, e: string) => {
    const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'", a: '\x07', b: '\b', f: '\f', v: '\v' };
    const plain = Object.hasOwn(simple, e) ? simple[e] : undefined;
    if (plain !== undefined) return plain;
    if (/^[uUx]/.test(e)) return String.fromCodePoint(parseInt(e.slice(1), 16));
    if (/^[0-7]{3}$/.test(e)) return String.fromCharCode(parseInt(e, 8));
    throw new TemplateError(line, `unknown escape sequence \\${e} in a string`);
  });
}

const SPACE = /[ \t\r\n]/;

function lexAction(src: string, line: number): Token[] {
  const out: Token[] = [];
  let i = 0;
  let spaced = true;
  const push = (t: Token['t'], v: string) => {
    out.push({ t, v, spaced });
    spaced = false;
  };
  while (i < src.length) {
    const c = src.charAt(i);
    if (SPACE.test(c)) {
      if (c === '\n') line += 1;
      spaced = true;
      i += 1;
    } else if (c === '"') {
      let j = i + 1;
      while (j < src.length && src[j] !== '"') {
        if (src[j] === '\n') throw new TemplateError(line, 'unterminated quoted string');
        j += src[j] === '\\' ? 2 : 1;
      }
      if (j >= src.length) throw new TemplateError(line, 'unterminated quoted string');
      push('str', unquote(src.slice(i + 1, j), line));
      i = j + 1;
    } else if (c === '`') {
      const j = src.indexOf('`', i + 1);
      if (j < 0) throw new TemplateError(line, 'unterminated raw quoted string');
      push('str', src.slice(i + 1, j));
      line += (src.slice(i, j).match(/\n/g) ?? []).length;
      i = j + 1;
    } else if (c === '|' || c === '(' || c === ')' || c === ',') {
      push(c, c);
      i += 1;
    } else if (c === ':' && src[i + 1] === '=') {
      push(':=', ':=');
      i += 2;
    } else if (c === '=') {
      push('=', '=');
      i += 1;
    } else if (c === '.' || c === '$') {
      // Always a match: at least the `.` or `$` itself.
      const m = /^[.$][\p{L}_\p{Nd}]*/u.exec(src.slice(i))?.[0] ?? c;
      if (m === '.') push('dot', '.');
      else push(c === '.' ? 'field' : 'var', c === '.' ? m.slice(1) : m);
      i += m.length;
    } else if (/[-+0-9]/.test(c)) {
      const m = /^[-+]?(?:0[xX][0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/.exec(src.slice(i));
      if (!m) throw new TemplateError(line, `bad number syntax: ${JSON.stringify(src.slice(i, i + 10))}`);
      push('num', m[0]);
      i += m[0].length;
    } else if (/[\p{L}_]/u.test(c)) {
      // Always a match: at least the letter itself.
      const m = /^[\p{L}_][\p{L}_\p{Nd}]*/u.exec(src.slice(i))?.[0] ?? c;
      push(m === 'true' || m === 'false' ? 'bool' : m === 'nil' ? 'nil' : 'ident', m);
      i += m.length;
    } else if (c === "'") {
      throw new TemplateError(line, "character constants ('x') are not supported");
    } else {
      throw new TemplateError(line, `unexpected ${JSON.stringify(c)} in an action`);
    }
  }
  return out;
}

/** Splits text and actions, applying `{{- ` and ` -}}` and dropping comments. */
function lex(src: string, firstLine: number): Item[] {
  const items: Item[] = [];
  let i = 0;
  let line = firstLine;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    let text = src.slice(i, open < 0 ? src.length : open);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    trimNext = false;
    const textLines = (src.slice(i, open < 0 ? src.length : open).match(/\n/g) ?? []).length;
    if (open < 0) {
      if (text) items.push({ kind: 'text', text });
      break;
    }
    const trimLeft = src.startsWith('{{- ', open) || src.startsWith('{{-\t', open) || src.startsWith('{{-\n', open) || src.startsWith('{{-\r', open);
    if (trimLeft) text = text.replace(/[ \t\r\n]+$/, '');
    if (text) items.push({ kind: 'text', text });
    line += textLines;
    const at = line;
    let j = open + (trimLeft ? 3 : 2);
    // The action ends at the first `}}` outside a quoted string.
    let end = -1;
    for (let k = j; k < src.length; k += 1) {
      const c = src[k];
      if (c === '"') {
        k += 1;
        while (k < src.length && src[k] !== '"' && src[k] !== '\n') k += src[k] === '\\' ? 2 : 1;
      } else if (c === '`') {
        const close = src.indexOf('`', k + 1);
        if (close < 0) break;
        k = close;
      } else if (c === '/' && src[k + 1] === '*') {
        const close = src.indexOf('*/', k + 2);
        if (close < 0) throw new TemplateError(at, 'unclosed comment');
        k = close + 1;
      } else if (c === '}' && src[k + 1] === '}') {
        end = k;
        break;
      }
    }
    if (end < 0) throw new TemplateError(at, 'unclosed action');
    let body = src.slice(j, end);
    if (/[ \t\r\n]-$/.test(body)) {
      trimNext = true;
      body = body.slice(0, -1);
    }
    line += (src.slice(j, end).match(/\n/g) ?? []).length;
    j = end + 2;
    i = j;
    const trimmed = body.trim();
    if (trimmed.startsWith('/*')) {
      if (!trimmed.endsWith('*/')) throw new TemplateError(at, 'comment ends before closing delimiter');
      continue;
    }
    const tokens = lexAction(body, at);
    if (!isNonEmpty(tokens)) throw new TemplateError(at, 'missing value for command');
    items.push({ kind: 'action', tokens, line: at });
  }
  return items;
}

class Parser {
  private pos = 0;
  private depth = 0;
  readonly defines = new Map<string, { nodes: Node[]; line: number }>();

  constructor(private readonly items: Item[]) {}

  /** The whole text: top-level nodes; defines collected. */
  parseTop(): Node[] {
    const { nodes, end } = this.list(true);
    if (end) throw new TemplateError(end.line, `unexpected {{${end.tokens[0].v}}}`);
    return nodes;
  }

  private list(top: boolean): { nodes: Node[]; end?: Extract<Item, { kind: 'action' }> } {
    const nodes: Node[] = [];
    for (let item = this.items[this.pos]; item !== undefined; item = this.items[this.pos]) {
      this.pos += 1;
      if (item.kind === 'text') {
        nodes.push({ k: 'text', text: item.text });
        continue;
      }
      const [first, ...rest] = item.tokens;
      const keyword = first.t === 'ident' ? first.v : '';
      switch (keyword) {
        case 'end':
        case 'else':
          return { nodes, end: item };
        case 'if':
        case 'with':
        case 'range':
          nodes.push(this.control(keyword, rest, item.line));
          break;
        case 'define':
        case 'block': {
          if (!top && keyword === 'define') throw new TemplateError(item.line, 'define is only allowed at the top level');
          const name = rest[0];
          if (name?.t !== 'str') throw new TemplateError(item.line, `${keyword} needs a quoted template name`);
          if (keyword === 'define' && rest.length > 1) throw new TemplateError(item.line, 'define takes only a name');
          const body = this.nested(() => this.list(false), item.line);
          if (!body.end || body.end.tokens[0].v !== 'end' || body.end.tokens.length > 1) throw new TemplateError(item.line, `unclosed ${keyword} "${name.v}"`);
          this.defines.set(name.v, { nodes: body.nodes, line: item.line });
          if (keyword === 'block') nodes.push({ k: 'template', name: name.v, pipe: this.pipe(rest.slice(1), item.line, false), line: item.line });
          break;
        }
        case 'template': {
          const name = rest[0];
          if (name?.t !== 'str') throw new TemplateError(item.line, 'template needs a quoted template name');
          nodes.push({ k: 'template', name: name.v, ...(rest.length > 1 ? { pipe: this.pipe(rest.slice(1), item.line, false) } : {}), line: item.line });
          break;
        }
        case 'break':
        case 'continue':
          throw new TemplateError(item.line, `{{${keyword}}} is not supported by gpualert's templates`);
        default:
          nodes.push({ k: 'action', pipe: this.pipe(item.tokens, item.line, true), line: item.line });
      }
    }
    return { nodes };
  }

  private nested<T>(f: () => T, line: number): T {
    if (++this.depth > MAX_NESTING) throw new TemplateError(line, `nested deeper than ${MAX_NESTING} levels`);
    try {
      return f();
    } finally {
      this.depth -= 1;
    }
  }

  private control(k: 'if' | 'with' | 'range', tokens: readonly Token[], line: number): Node {
    if (tokens.length === 0) throw new TemplateError(line, `missing value for ${k}`);
    const pipe = this.pipe(tokens, line, true, k === 'range');
    const body = this.nested(() => this.list(false), line);
    if (!body.end) throw new TemplateError(line, `unclosed ${k}`);
    const [word, ...after] = body.end.tokens;
    if (word.v === 'end') {
      if (after.length > 0) throw new TemplateError(body.end.line, 'end takes nothing');
      return { k, pipe, list: body.nodes, line };
    }
    // else: `{{else}}` … `{{end}}`, or `{{else if …}}` chained (sharing the one end).
    const [next] = after;
    if (next !== undefined) {
      if (next.t !== 'ident' || next.v !== 'if' || k !== 'if')
        throw new TemplateError(body.end.line, `{{else ${next.v}}} is not supported (only else if after if)`);
      const chained = this.control('if', after.slice(1), body.end.line);
      return { k, pipe, list: body.nodes, else: [chained], line };
    }
    const rest = this.nested(() => this.list(false), line);
    if (!rest.end || rest.end.tokens[0].v !== 'end' || rest.end.tokens.length > 1)
      throw new TemplateError(line, `unclosed ${k} (expected {{end}} after {{else}})`);
    return { k, pipe, list: body.nodes, else: rest.nodes, line };
  }

  /** A pipeline: optional declaration, commands separated by `|`. */
  pipe(tokens: readonly Token[], line: number, declOk: boolean, range = false): Pipe {
    let decl: Pipe['decl'];
    const opAt = tokens.findIndex((t) => t.t === ':=' || t.t === '=');
    if (opAt > 0 && tokens.slice(0, opAt).every((t) => t.t === 'var' || t.t === ',')) {
      if (!declOk) throw new TemplateError(line, 'a variable declaration is not allowed here');
      const names = tokens
        .slice(0, opAt)
        .filter((t) => t.t === 'var')
        .map((t) => t.v);
      if (names.length > (range ? 2 : 1)) throw new TemplateError(line, 'too many declarations');
      const [name, second] = names;
      if (name === undefined) throw new TemplateError(line, 'missing variable name in a declaration');
      decl = { names: second === undefined ? [name] : [name, second], op: tokens[opAt]?.t === '=' ? '=' : ':=' };
      tokens = tokens.slice(opAt + 1);
    }
    const cmds: Cmd[] = [];
    let at = 0;
    while (at <= tokens.length) {
      const start = at;
      let level = 0;
      for (let t = tokens[at]; t !== undefined && !(t.t === '|' && level === 0); t = tokens[at]) {
        if (t.t === '(') level += 1;
        if (t.t === ')') level -= 1;
        at += 1;
      }
      const args = this.args(tokens.slice(start, at), line);
      if (!isNonEmpty(args)) throw new TemplateError(line, 'missing command in a pipeline');
      cmds.push({ args, line });
      at += 1;
    }
    return { ...(decl ? { decl } : {}), cmds, line };
  }

  private args(tokens: readonly Token[], line: number): Arg[] {
    const out: Arg[] = [];
    let i = 0;
    const chain = (): string[] => {
      const names: string[] = [];
      for (let t = tokens[i]; t !== undefined && t.t === 'field' && !t.spaced; t = tokens[i]) {
        names.push(t.v);
        i += 1;
      }
      return names;
    };
    for (let t = tokens[i]; t !== undefined; t = tokens[i]) {
      i += 1;
      switch (t.t) {
        case 'dot':
          out.push({ k: 'dot', chain: chain() });
          break;
        case 'field':
          out.push({ k: 'dot', chain: [t.v, ...chain()] });
          break;
        case 'var':
          out.push({ k: 'var', name: t.v, chain: chain() });
          break;
        case 'str':
          out.push({ k: 'lit', value: t.v });
          break;
        case 'num': {
          const n = Number(t.v);
          if (!Number.isFinite(n)) throw new TemplateError(line, `bad number ${t.v}`);
          out.push({ k: 'lit', value: n });
          break;
        }
        case 'bool':
          out.push({ k: 'lit', value: t.v === 'true' });
          break;
        case 'nil':
          out.push({ k: 'lit', value: null });
          break;
        case 'ident':
          if (!FUNCTIONS.has(t.v))
            throw new TemplateError(line, `function "${t.v}" is not supported by gpualert's templates (supported: ${[...FUNCTIONS].join(', ')})`);
          out.push({ k: 'func', name: t.v });
          break;
        case '(': {
          let level = 1;
          const start = i;
          for (let u = tokens[i]; u !== undefined && level > 0; u = tokens[i]) {
            if (u.t === '(') level += 1;
            if (u.t === ')') level -= 1;
            i += 1;
          }
          if (level > 0) throw new TemplateError(line, 'unclosed left paren');
          const inner = this.nested(() => this.pipe(tokens.slice(start, i - 1), line, false), line);
          out.push({ k: 'pipe', pipe: inner, chain: chain() });
          break;
        }
        case ')':
          throw new TemplateError(line, 'unexpected right paren');
        default:
          throw new TemplateError(line, `unexpected "${t.v}" in a command`);
      }
    }
    return out;
  }
}

export interface Parsed {
  readonly nodes: readonly Node[];
  readonly defines: ReadonlyMap<string, { nodes: Node[]; line: number }>;
}

/** Parses one template text (its first line numbered `firstLine`); throws TemplateError with the line. */
export function parseTemplate(src: string, firstLine = 1): Parsed {
  if (src.length > MAX_TEMPLATE_CHARS) throw new TemplateError(firstLine, `template is longer than ${MAX_TEMPLATE_CHARS} characters`);
  const parser = new Parser(lex(src, firstLine));
  const nodes = parser.parseTop();
  return { nodes, defines: parser.defines };
}
