import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modelProblems, routeOf, type Route } from './kubernetes-routes.ts';

/**
 * A loopback Kubernetes API server for the Kubernetes executor's tests: nodes and pods in memory,
 * and every request checked (kubernetes-routes.ts): its method and path must be an operation of
 * our route table (each entry following the Kubernetes API reference), its query parameters ones
 * that operation declares, a body's content type one it takes, and the body valid: an Eviction by
 * the `kubernetes-models` validator (Kubernetes v1.33.0's OpenAPI schemas), a patch by what the
 * patched node is, which must still be a valid `Node`. A field those schemas do not name is a
 * violation too, as with the API server's `fieldValidation=Strict`. Whatever breaks these rules is
 * recorded in `violations` (a test asserts none) and answered 400. A request without the bearer
 * token is answered 401.
 *
 * Not an API server: no watch, no admission, no RBAC, only merge patches; the taint checks are
 * the API server's own (key, value as a label value, effect, no duplicate). It speaks HTTPS with a
 * certificate for 127.0.0.1 made by openssl for the run (`ca` is what a kubeconfig trusts).
 */

/** Largest request body read. */
const MAX_BODY_BYTES = 1024 * 1024;
/** Requests remembered (a test makes a few dozen). */
const MAX_RECORDED = 10_000;
const TAINT_EFFECTS = new Set(['NoSchedule', 'PreferNoSchedule', 'NoExecute']);
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: ReadonlyMap<string, string>;
  readonly contentType: string | undefined;
  readonly body: string;
}

export interface NodeSeed {
  readonly name: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly unschedulable?: boolean;
  readonly taints?: readonly { key: string; effect: string; value?: string }[];
}

export interface PodSeed {
  readonly namespace: string;
  readonly name: string;
  readonly node: string;
  readonly ownerKind?: string;
}

interface Fault {
  readonly status: number;
  times: number;
  readonly method: string | undefined;
}

interface Checked {
  readonly route: Route;
  readonly params: ReadonlyMap<string, string>;
}

export class KubernetesApi {
  readonly requests: RecordedRequest[] = [];
  readonly violations: string[] = [];
  unauthorized = 0;
  /** Answer every request 404 with the request's Authorization header in the message (a server that leaks it back). */
  echoAuthorization = false;
  url = '';
  readonly ca: string;
  private readonly nodes = new Map<string, JsonObject>();
  private readonly pods = new Map<string, JsonObject>();
  private readonly blocked = new Set<string>();
  private readonly faults: Fault[] = [];
  private beforePatch: ((node: JsonObject) => void) | undefined;
  private version = 100;
  private server: Server;
  private readonly tls: { key: string; cert: string };
  private port = 0;

  private constructor(private readonly token: string) {
    this.tls = selfSigned();
    this.ca = this.tls.cert;
    this.server = this.newServer();
  }

  static async start(options: { token: string; nodes: readonly NodeSeed[]; pods?: readonly PodSeed[] }): Promise<KubernetesApi> {
    const api = new KubernetesApi(options.token);
    for (const seed of options.nodes) api.addNode(seed);
    for (const pod of options.pods ?? []) api.addPod(pod);
    await api.listen(0);
    api.url = `https://127.0.0.1:${api.port}`;
    return api;
  }

  addNode(seed: NodeSeed): void {
    const spec: JsonObject = {};
    if (seed.unschedulable !== undefined) spec.unschedulable = seed.unschedulable;
    if (seed.taints) spec.taints = seed.taints.map((t) => ({ key: t.key, effect: t.effect, ...(t.value !== undefined ? { value: t.value } : {}) }));
    this.nodes.set(seed.name, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: seed.name, uid: `uid-${seed.name}`, resourceVersion: this.nextVersion(), labels: { ...seed.labels } },
      spec,
      status: {},
    });
  }

  addPod(seed: PodSeed): void {
    const owner = seed.ownerKind
      ? { ownerReferences: [{ apiVersion: 'apps/v1', kind: seed.ownerKind, name: `${seed.name}-owner`, uid: `uid-${seed.name}` }] }
      : {};
    this.pods.set(`${seed.namespace}/${seed.name}`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: seed.name, namespace: seed.namespace, resourceVersion: this.nextVersion(), ...owner },
      spec: { nodeName: seed.node, containers: [{ name: 'main', image: 'busybox' }] },
      status: { phase: 'Running' },
    });
  }

  /** The node as stored now (a copy). */
  node(name: string): JsonObject | undefined {
    const node = this.nodes.get(name);
    return node ? copy(node) : undefined;
  }

  /** The violations recorded so far, removed from the record (for a test that makes some on purpose). */
  takeViolations(): string[] {
    return this.violations.splice(0);
  }

  podNames(): string[] {
    return [...this.pods.keys()];
  }

  /** Someone else changes the node (a new resourceVersion), as kubectl would. */
  changeNode(name: string, change: (node: JsonObject) => void): void {
    const node = this.nodes.get(name);
    if (!node) throw new Error(`no node ${name}`);
    change(node);
    object(node.metadata).resourceVersion = this.nextVersion();
  }

  /** Runs `change` just before the next patch is applied: another writer between our read and our patch. */
  raceNextPatch(change: (node: JsonObject) => void): void {
    this.beforePatch = change;
  }

  /** A PodDisruptionBudget that allows no disruption of this pod: its eviction is answered 429. */
  blockEviction(namespace: string, name: string): void {
    this.blocked.add(`${namespace}/${name}`);
  }

  unblockEviction(namespace: string, name: string): void {
    this.blocked.delete(`${namespace}/${name}`);
  }

  /** The next `times` requests (of `method`, if given) are answered `status` (0: never answered) and change nothing. */
  fail(status: number, times = 1, method?: string): void {
    this.faults.push({ status, times, method });
  }

  /** Stops listening (connections refused) until `up`. */
  async down(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((done) => this.server.close(() => done()));
  }

  async up(): Promise<void> {
    this.server = this.newServer();
    await this.listen(this.port);
  }

  async stop(): Promise<void> {
    if (this.server.listening) await this.down();
  }

  private async listen(port: number): Promise<void> {
    await new Promise<void>((done) => this.server.listen(port, '127.0.0.1', done));
    const address = this.server.address();
    if (typeof address !== 'object' || !address) throw new Error('no address');
    this.port = address.port;
  }

  private newServer(): Server {
    return createServer(this.tls, (request, response) => {
      void this.handle(request, response).catch((error: unknown) => {
        this.violations.push(`test server error: ${String(error)}`);
        send(response, 500, status(500, 'InternalError', 'test server error'));
      });
    });
  }

  private nextVersion(): string {
    this.version += 1;
    return String(this.version);
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await readBody(request);
    const url = new URL(request.url ?? '/', 'http://loopback');
    const method = (request.method ?? 'GET').toLowerCase();
    const contentType = request.headers['content-type'];
    const recorded: RecordedRequest = { method, path: url.pathname, query: new Map(url.searchParams), contentType, body };
    if (this.requests.length < MAX_RECORDED) this.requests.push(recorded);

    if (request.headers.authorization !== `Bearer ${this.token}`) {
      this.unauthorized += 1;
      return send(response, 401, status(401, 'Unauthorized', 'Unauthorized'));
    }
    const checked = this.check(recorded);
    if (typeof checked === 'string') {
      this.violations.push(checked);
      return send(response, 400, status(400, 'BadRequest', checked));
    }
    if (this.echoAuthorization) return send(response, 404, status(404, 'NotFound', `not found (authorization: ${request.headers.authorization ?? ''})`));
    const fault = this.faults.find((f) => f.times > 0 && (f.method === undefined || f.method === method));
    if (fault) {
      fault.times -= 1;
      if (fault.status === 0) return; // no answer at all: the client's deadline must end it
      return send(response, fault.status, status(fault.status, fault.status === 409 ? 'Conflict' : 'InternalError', `injected ${fault.status}`));
    }
    const [answer, payload] = this.route(checked, url, recorded);
    send(response, answer, payload);
  }

  /** The route table's operation for this request, or what about the request it does not allow. */
  private check(request: RecordedRequest): Checked | string {
    const where = `${request.method.toUpperCase()} ${request.path}`;
    let found: Checked | undefined;
    try {
      found = routeOf(request.method, request.path);
    } catch {
      return `${where}: the path is not well percent-encoded`;
    }
    if (!found) return `${where}: no such operation in the route table`;
    const { route } = found;
    for (const name of request.query.keys()) if (!route.query.has(name)) return `${where}: query parameter ${name} is not declared for this operation`;
    if (route.contentTypes === undefined) return request.body === '' ? found : `${where}: a body where the operation takes none`;
    const type = (request.contentType ?? '').split(';')[0]?.trim() ?? '';
    if (!route.contentTypes.includes(type)) return `${where}: content type ${type} is not one of ${route.contentTypes.join(', ')}`;
    let parsed: Json;
    try {
      parsed = toJson(JSON.parse(request.body));
    } catch {
      return `${where}: the body is not JSON`;
    }
    const problems = bodyProblems(found, type, parsed);
    return problems.length > 0 ? `${where}: the body does not match the schema: ${problems.join('; ')}` : found;
  }

  private route(checked: Checked, url: URL, request: RecordedRequest): [number, Json] {
    const { route, params } = checked;
    const name = params.get('name') ?? '';
    switch (`${route.method} ${route.template}`) {
      case 'get /api/v1/nodes':
        return [200, this.page('NodeList', [...this.nodes.values()], url)];
      case 'get /api/v1/nodes/{name}': {
        const node = this.nodes.get(name);
        return node ? [200, node] : [404, status(404, 'NotFound', `nodes "${name}" not found`)];
      }
      case 'patch /api/v1/nodes/{name}':
        return this.patchNode(name, request);
      case 'get /api/v1/pods': {
        const selector = url.searchParams.get('fieldSelector') ?? '';
        const node = /^spec\.nodeName=(.+)$/.exec(selector)?.[1];
        if (selector !== '' && node === undefined) return [400, status(400, 'BadRequest', `field selector ${selector} not supported here`)];
        const pods = [...this.pods.values()].filter((p) => node === undefined || object(p.spec).nodeName === node);
        return [200, this.page('PodList', pods, url)];
      }
      case 'post /api/v1/namespaces/{namespace}/pods/{name}/eviction': {
        const key = `${params.get('namespace') ?? ''}/${name}`;
        if (!this.pods.has(key)) return [404, status(404, 'NotFound', `pods "${name}" not found`)];
        if (this.blocked.has(key)) return [429, status(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.")];
        this.pods.delete(key);
        return [201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 }];
      }
      default:
        this.violations.push(`${route.method.toUpperCase()} ${url.pathname}: in the route table, but not served by the test server`);
        return [405, status(405, 'MethodNotAllowed', 'not served by the test server')];
    }
  }

  private patchNode(name: string, request: RecordedRequest): [number, Json] {
    const node = this.nodes.get(name);
    if (!node) return [404, status(404, 'NotFound', `nodes "${name}" not found`)];
    if (request.contentType !== 'application/merge-patch+json') return [415, status(415, 'UnsupportedMediaType', 'the test server applies merge patches only')];
    if (this.beforePatch) {
      const change = this.beforePatch;
      this.beforePatch = undefined;
      this.changeNode(name, change);
    }
    const patch: unknown = JSON.parse(request.body);
    const wanted = object(object(toJson(patch)).metadata).resourceVersion;
    if (typeof wanted === 'string' && wanted !== object(node.metadata).resourceVersion)
      return [
        409,
        status(
          409,
          'Conflict',
          `Operation cannot be fulfilled on nodes "${name}": the object has been modified; please apply your changes to the latest version and try again`,
        ),
      ];
    const next = mergePatch(node, toJson(patch));
    const problems = modelProblems('Node', next);
    if (problems.length > 0) {
      this.violations.push(`PATCH node ${name}: the patched node is not a valid Node: ${problems.join('; ')}`);
      return [422, status(422, 'Invalid', 'the patched node is not a valid Node')];
    }
    const invalid = taintProblem(object(next).spec);
    if (invalid !== undefined) return [422, status(422, 'Invalid', `Node "${name}" is invalid: ${invalid}`)];
    const stored = object(next);
    object(stored.metadata).resourceVersion = this.nextVersion();
    this.nodes.set(name, stored);
    return [200, stored];
  }

  private page(kind: string, items: JsonObject[], url: URL): JsonObject {
    const limit = Number(url.searchParams.get('limit') ?? '0');
    const from = Number(url.searchParams.get('continue') ?? '0');
    const end = limit > 0 ? from + limit : items.length;
    const metadata: JsonObject = { resourceVersion: String(this.version), ...(end < items.length ? { continue: String(end) } : {}) };
    return { kind, apiVersion: 'v1', metadata, items: items.slice(from, end) };
  }
}

let tlsMaterial: { key: string; cert: string } | undefined;
/** A self-signed certificate for 127.0.0.1, made once a run. */
function selfSigned(): { key: string; cert: string } {
  if (tlsMaterial) return tlsMaterial;
  const dir = mkdtempSync(join(tmpdir(), 'gpualert-k8s-tls-'));
  try {
    const args = ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=kubernetes.test'];
    execFileSync('openssl', [...args, '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], {
      stdio: 'ignore',
    });
    tlsMaterial = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
    return tlsMaterial;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** What is wrong with a body for its route (empty: nothing). */
function bodyProblems(checked: Checked, contentType: string, body: Json): string[] {
  const { route, params } = checked;
  switch (route.body) {
    case undefined:
      return [];
    case 'node-patch':
      // A JSON patch is a list of operations; the other three are a partial object (JSON is YAML).
      // What a merge patch makes of the node is checked as a Node when it is applied.
      if (contentType === 'application/json-patch+json')
        return Array.isArray(body) && body.every((op) => typeof object(op).op === 'string' && typeof object(op).path === 'string')
          ? []
          : ['a JSON patch is a list of {op, path, …}'];
      return typeof body === 'object' && body !== null && !Array.isArray(body) ? [] : ['a patch of a Node is an object'];
    case 'eviction': {
      const problems = modelProblems('Eviction', body);
      // As the API server: the name (and namespace, if given) in the body are the pod's in the path.
      const metadata = object(object(body).metadata);
      if (problems.length === 0 && metadata.name !== params.get('name')) problems.push('metadata.name is not the name in the path');
      if (problems.length === 0 && metadata.namespace !== undefined && metadata.namespace !== params.get('namespace'))
        problems.push('metadata.namespace is not the namespace in the path');
      return problems;
    }
  }
}

/** RFC 7386 merge patch; a `__proto__` member is refused (it would never reach a real object). */
function mergePatch(target: Json, patch: Json): Json {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: JsonObject = typeof target === 'object' && target !== null && !Array.isArray(target) ? copy(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key === '__proto__') throw new Error('a __proto__ member in a patch');
    if (value === null) Reflect.deleteProperty(out, key);
    else out[key] = mergePatch(out[key] ?? null, value);
  }
  return out;
}

/** What the API server says of a node's taints: key, value, effect, and no key and effect twice. */
function taintProblem(spec: Json | undefined): string | undefined {
  const seen = new Set<string>();
  for (const taint of array(object(spec).taints)) {
    const t = object(taint);
    if (typeof t.key !== 'string' || !QUALIFIED_NAME.test(t.key)) return `spec.taints.key: Invalid value: ${JSON.stringify(t.key)}`;
    if (t.value !== undefined && (typeof t.value !== 'string' || t.value.length > 63 || !LABEL_VALUE.test(t.value)))
      return `spec.taints.value: Invalid value: ${JSON.stringify(t.value)}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.'`;
    if (typeof t.effect !== 'string' || !TAINT_EFFECTS.has(t.effect)) return `spec.taints.effect: Unsupported value: ${JSON.stringify(t.effect)}`;
    const id = `${t.key}:${t.effect}`;
    if (seen.has(id)) return `spec.taints: Duplicate value: ${id}`;
    seen.add(id);
  }
  return undefined;
}

function status(code: number, reason: string, message: string): JsonObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

function send(response: ServerResponse, code: number, payload: Json): void {
  response.writeHead(code, { 'content-type': 'application/json' });
  response.end(JSON.stringify(payload));
}

async function readBody(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    size += buffer.length;
    if (size > MAX_BODY_BYTES) throw new Error('request body over 1 MiB');
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function toJson(value: unknown): Json {
  return JSON.parse(JSON.stringify(value)) as Json;
}

function copy(value: JsonObject): JsonObject {
  return object(toJson(value));
}

function object(value: Json | undefined): JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
}

function array(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}
