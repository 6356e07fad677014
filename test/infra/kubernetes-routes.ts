import { Eviction } from 'kubernetes-models/policy/v1/Eviction';
import { Node } from 'kubernetes-models/v1/Node';

/**
 * What the loopback Kubernetes API server (kubernetes-api.ts) lets through, written by us, not
 * taken from a fetched document:
 *
 * - the operations: a route table of the few core/v1 and policy/v1 operations the executor has any
 *   business with, each with the query parameters and body content types the Kubernetes API
 *   reference gives that operation (the section it follows is named above each entry);
 * - the objects: the validators of the `kubernetes-models` npm package (4.5.1, generated from the
 *   OpenAPI schemas of Kubernetes v1.33.0), plus a check for fields those schemas do not name
 *   (`unknownFields`), which the generated validators let through.
 */

export type Method = 'get' | 'patch' | 'post';
/** What a body must be: a patch of a Node (checked again as the patched Node), or an Eviction. */
export type BodyKind = 'node-patch' | 'eviction';

export interface Route {
  readonly method: Method;
  /** The path with `{param}` segments. */
  readonly template: string;
  readonly segments: readonly string[];
  /** The query parameters the operation declares. */
  readonly query: ReadonlySet<string>;
  /** The content types its body may have; undefined: the operation takes no body. */
  readonly contentTypes: readonly string[] | undefined;
  readonly body: BodyKind | undefined;
}

/** The query parameters of every list operation ("list or watch objects of kind …"). */
const LIST_QUERY = [
  'allowWatchBookmarks',
  'continue',
  'fieldSelector',
  'labelSelector',
  'limit',
  'pretty',
  'resourceVersion',
  'resourceVersionMatch',
  'sendInitialEvents',
  'timeoutSeconds',
  'watch',
];

/** The four patch types the API server takes for a built-in kind (see "Update API Objects in Place Using kubectl patch" and "Server-Side Apply"). */
export const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];

function route(method: Method, template: string, query: readonly string[], body?: { kind: BodyKind; contentTypes: readonly string[] }): Route {
  return { method, template, segments: template.split('/'), query: new Set(query), contentTypes: body?.contentTypes, body: body?.kind };
}

export const ROUTES: readonly Route[] = [
  // Kubernetes API reference, Cluster Resources › Node (v1) › Operations › get "read the specified Node".
  route('get', '/api/v1/nodes/{name}', ['pretty']),
  // Kubernetes API reference, Cluster Resources › Node (v1) › Operations › list "list or watch objects of kind Node".
  route('get', '/api/v1/nodes', LIST_QUERY),
  // Kubernetes API reference, Cluster Resources › Node (v1) › Operations › patch "partially update the specified Node"
  // (body: Patch; the content type says which of the four kinds of patch it is).
  route('patch', '/api/v1/nodes/{name}', ['dryRun', 'fieldManager', 'fieldValidation', 'force', 'pretty'], { kind: 'node-patch', contentTypes: PATCH_TYPES }),
  // Kubernetes API reference, Workload Resources › Pod (v1) › Operations › list "list or watch objects of kind Pod"
  // (all namespaces; the executor selects a node's pods with fieldSelector=spec.nodeName=…).
  route('get', '/api/v1/pods', LIST_QUERY),
  // Kubernetes API reference, Eviction (policy/v1) › Operations › create "create eviction of a Pod" (body: Eviction).
  // The API server also decodes YAML and protobuf bodies; the client sends JSON, the only one served here.
  route('post', '/api/v1/namespaces/{namespace}/pods/{name}/eviction', ['dryRun', 'fieldManager', 'fieldValidation', 'pretty'], {
    kind: 'eviction',
    contentTypes: ['application/json'],
  }),
];

/** The route for a method and a path, and the path's parameters by name; undefined when the table has none. */
export function routeOf(method: string, path: string): { route: Route; params: ReadonlyMap<string, string> } | undefined {
  const segments = path.split('/');
  for (const candidate of ROUTES) {
    if (candidate.method !== method || candidate.segments.length !== segments.length) continue;
    const params = new Map<string, string>();
    const matches = candidate.segments.every((s, i) => {
      const actual = segments[i] ?? '';
      if (!s.startsWith('{')) return s === actual;
      if (actual === '') return false;
      params.set(s.slice(1, -1), decodeURIComponent(actual));
      return true;
    });
    if (matches) return { route: candidate, params };
  }
  return undefined;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Deepest nesting of an object checked (a Node is about 8 deep). */
const MAX_DEPTH = 64;

/** The kinds checked, each by its kubernetes-models class. */
const MODELS = new Map<'Node' | 'Eviction', { prototype: { validate(): void } }>([
  ['Node', Node],
  ['Eviction', Eviction],
]);

/**
 * What is wrong with `value` as an object of `kind`: the errors of its kubernetes-models validator
 * (types, required fields, enums, formats, apiVersion and kind), else every field none of its
 * schemas name. The OpenAPI schemas leave objects open, so the validators let an unknown field
 * (`unschedulabel`) through, where the API server with `fieldValidation=Strict` refuses it. But a
 * generated validator reads, by name, every field its schema names (and every entry of a map such
 * as `labels`), so the value is handed to it behind proxies that note each field read: a field it
 * never read is one the schema does not have. test/kubernetes-executor.test.ts shows it flagging
 * misspelt fields.
 */
export function modelProblems(kind: 'Node' | 'Eviction', value: Json): string[] {
  const model = MODELS.get(kind);
  if (!model) return [`no validator for ${kind}`];
  const read = new Set<string>();
  const present: string[] = [];
  const watch = (item: Json, path: string, depth: number): Json => {
    if (depth > MAX_DEPTH) throw new RangeError(`nested deeper than ${MAX_DEPTH}`);
    if (typeof item !== 'object' || item === null) return item;
    if (Array.isArray(item)) return item.map((element, i) => watch(element, `${path}/${i}`, depth + 1));
    const watched = Object.fromEntries(
      Object.entries(item).map(([key, field]) => {
        const at = `${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
        present.push(at);
        return [key, watch(field, at, depth + 1)];
      }),
    );
    return new Proxy(watched, {
      get(target, key, receiver) {
        if (typeof key === 'string') read.add(`${path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`);
        return Reflect.get(target, key, receiver);
      },
    });
  };
  let watched: Json;
  try {
    watched = watch(value, '', 0);
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
  try {
    model.prototype.validate.call(watched);
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
  return present.filter((path) => !read.has(path)).map((path) => `${path}: unknown field`);
}
