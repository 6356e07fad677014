import { bundledPath, parseYamlText, readYamlText, type LoadResult, type RuleFileError } from '@gpualert/rules';
import { isMap, isNode, isPair, isScalar, LineCounter, parseDocument, visit, type Document } from 'yaml';
import { attachTemplates, RoutesFile } from './route-config.ts';
import { loadTemplateFiles } from './template-files.ts';

export const DEFAULT_ROUTES = bundledPath('rules/routes.yaml');

/** Keys whose values are credentials (Alertmanager's Secret and SecretURL fields, and ours): shown as Alertmanager shows them, `<secret>`. */
const SECRET_KEY = /(password|secret|api_key|routing_key|service_key|user_key|token|credentials|api_url|^url$|smtp_auth_identity)$/i;

/** A URL keeps its origin (amtool parses webhook URLs and wants a scheme); path, query and anything else go. */
function maskSecret(value: string): string {
  try {
    const url = new URL(value);
    if (url.protocol === 'http:' || url.protocol === 'https:') return `${url.protocol}//${url.host}/<secret>`;
  } catch {
    // not a URL
  }
  return '<secret>';
}

/**
 * The routes file's text as Alertmanager's status API shows a config: every credential (and every
 * receiver URL's path and query, which often carry one: Slack's, DingTalk's) replaced by `<secret>`, an `env:`
 * reference kept (it names a variable, not a value).
 */
export function redactedConfig(text: string): string {
  const doc = parseDocument(text);
  visit(doc, {
    Pair(_key, pair) {
      if (!isPair(pair) || !isScalar(pair.key) || !isScalar(pair.value) || isMap(pair.value)) return;
      const value = pair.value.value;
      if (typeof value === 'string' && SECRET_KEY.test(String(pair.key.value)) && !/^env:[A-Za-z_]\w*$/.test(value)) pair.value.value = maskSecret(value);
    },
  });
  return doc.toString();
}

/** Alertmanager's string maps (map[string]string in its Go structs: label maps, headers, details): a value Go's YAML reads as the text written. */
const LABEL_MAP_KEYS = new Set(['match', 'match_re', 'source_match', 'source_match_re', 'target_match', 'target_match_re', 'headers', 'details']);

/**
 * A plain scalar in one of those maps is its text as written, as Go's YAML decodes it into a string:
 * `match: {ver: 1.10}` matches "1.10" (not "1.1"), `0x1F` "0x1F", `True` "True", `~` "".
 */
export function labelMapsAsWritten(document: Document): void {
  visit(document, {
    Pair(_key, pair) {
      if (!isPair(pair) || !isScalar(pair.key) || !LABEL_MAP_KEYS.has(String(pair.key.value)) || !isMap(pair.value)) return;
      for (const item of pair.value.items) {
        if (!isScalar(item.value) || typeof item.value.value === 'string') continue;
        const written = item.value.source;
        item.value.value = item.value.value === null ? '' : typeof written === 'string' ? written : String(item.value.value);
      }
    },
  });
}

/**
 * A key written with no value (`global:`, `routes:` followed only by comments, `global: null`) is
 * absent, as Go's YAML leaves such a field at its zero value for Alertmanager: the defaults apply.
 * Label maps are read first (labelMapsAsWritten), where `~` is the empty text, not absence.
 */
export function nullsAsAbsent(document: Document): void {
  visit(document, {
    Pair(_key, pair) {
      if (isPair(pair) && (pair.value === null || (isScalar(pair.value) && pair.value.value === null))) return visit.REMOVE;
      return undefined;
    },
  });
}

/** Alertmanager's YAML as Go reads it: label maps as written, then empty keys absent. */
export function asAlertmanagerReads(document: Document): void {
  labelMapsAsWritten(document);
  nullsAsAbsent(document);
}

/** The routes file, with its text (credentials redacted) kept for Alertmanager's status API: `amtool config routes` reads it there. */
export function loadRoutes(file: string = DEFAULT_ROUTES): LoadResult<RoutesFile> {
  // Read once: the text shown by the status API is the text that was checked, even when the file is swapped meanwhile.
  const read = readYamlText(file);
  if (!read.ok) return read;
  const { text } = read;
  const loaded = parseYamlText(file, text, RoutesFile, asAlertmanagerReads);
  if (!loaded.ok) return loaded;
  loaded.value.original = redactedConfig(text);
  const globs = loaded.value.templates ?? [];
  if (globs.length === 0) return loaded;
  // The `templates:` files, then every templated field checked again with their defines in.
  const { set, errors } = loadTemplateFiles(globs, file);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  const lineOf = (path: readonly (string | number)[]) => {
    for (let depth = path.length; depth >= 0; depth -= 1) {
      const node = doc.getIn(path.slice(0, depth), true);
      if (isNode(node) && node.range) return lines.linePos(node.range[0]).line;
    }
    return 1;
  };
  const fieldErrors: RuleFileError[] = [];
  attachTemplates(loaded.value.receivers, set, (path, message) => fieldErrors.push({ file, line: lineOf(path), field: path.join('.'), message }));
  const all = [...errors, ...fieldErrors];
  return all.length > 0 ? { ok: false, errors: all } : loaded;
}
