import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CORDON_ANNOTATION, KubernetesExecutor, loadKubeConfig, REASON_ANNOTATION, TAINT_KEY, type KubernetesExecutorOptions } from '@gpualert/executors';
import { parsePolicy, RemediationCore, type ActionCommand, type ExecutionOutcome } from '@gpualert/remediation';
import { newEnvelope, stableId, type EnvelopeOf } from '@gpualert/schema';
import { get as httpsGet, request as httpsRequest } from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KubernetesApi, type NodeSeed } from './infra/kubernetes-api.ts';

/**
 * The Kubernetes executor against a loopback API server that checks every request: the operation,
 * its query parameters and content type against our route table (test/infra/kubernetes-routes.ts,
 * after the Kubernetes API reference), the bodies and the patched nodes with the kubernetes-models
 * validators (Kubernetes v1.33.0's OpenAPI schemas), unknown fields included. No real cluster is
 * involved: what a real API server adds (admission, RBAC, the node controller) is not tried here.
 */
const TOKEN = 'k8s-test-token-5f0c2e9a7d1b';
const REASON = 'gpualert: GPU fell off the bus (Xid 79), reboot needed';
const NODES: NodeSeed[] = [
  ...Array.from({ length: 6 }, (_, i) => ({ name: `gpu-0${i + 1}`, labels: { 'gpualert.io/partition': 'train' } })),
  { name: 'gpu-07', labels: { 'topology.kubernetes.io/zone': 'zone-a' } },
  { name: 'gpu-08' },
];
let api: KubernetesApi;
/** Every outcome's error text, to look for the token in at the end. */
const errors: string[] = [];

beforeAll(async () => {
  api = await KubernetesApi.start({ token: TOKEN, nodes: NODES });
});

afterEach(() => {
  expect(api.violations).toEqual([]);
});

afterAll(async () => {
  await api?.stop();
});

function kubeConfig(token = TOKEN, server = api.url): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'loopback', server, skipTLSVerify: false, caData: Buffer.from(api.ca).toString('base64') }],
    users: [{ name: 'gpualert', token }],
    contexts: [{ name: 'test', cluster: 'loopback', user: 'gpualert' }],
    currentContext: 'test',
  });
  return kc;
}

function executor(options: Partial<KubernetesExecutorOptions> = {}): KubernetesExecutor {
  return new KubernetesExecutor({ kubeConfig: kubeConfig(), timeoutMs: 2_000, ...options });
}

async function run(ex: KubernetesExecutor, host: string, kind: ActionCommand['kind'], reason = REASON): Promise<ExecutionOutcome> {
  const outcome = await ex.run({ actionId: `a-${host}-${kind}`, host, kind, reason, attempt: 1 });
  if (outcome.outcome === 'failed') errors.push(outcome.error);
  return outcome;
}

const patches = (node: string) => api.requests.filter((r) => r.method === 'patch' && r.path === `/api/v1/nodes/${node}`);
const taints = (node: string): unknown[] => {
  const spec = api.node(node)?.spec;
  return typeof spec === 'object' && spec !== null && !Array.isArray(spec) && Array.isArray(spec.taints) ? spec.taints : [];
};
const field = (node: string, part: 'spec' | 'metadata', name: string): unknown => {
  const value = api.node(node)?.[part];
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? value[name] : undefined;
};
const entries = (value: unknown) => new Map<string, unknown>(typeof value === 'object' && value !== null && !Array.isArray(value) ? Object.entries(value) : []);
const annotations = (node: string) => entries(field(node, 'metadata', 'annotations'));
const taintKeys = (node: string) => taints(node).map((t) => entries(t).get('key'));

/** One raw request to the loopback server, as a client that does not follow the spec would send it. */
function raw(
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
  token = TOKEN,
  server = api,
): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    const req = httpsRequest(
      `${server.url}${path}`,
      { method, ca: server.ca, headers: { authorization: `Bearer ${token}`, 'content-type': contentType } },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => done({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', fail);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

describe('the loopback API server', () => {
  it('records every request the route table or the kubernetes-models validators do not allow (so "no violations" means something)', async () => {
    const own = await KubernetesApi.start({ token: TOKEN, nodes: [{ name: 'n-1' }], pods: [{ namespace: 'ml', name: 'p', node: 'n-1' }] });
    const send = (method: string, path: string, body?: unknown, type?: string) => raw(method, path, body, type, TOKEN, own);
    const merge = 'application/merge-patch+json';
    const eviction = { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p', namespace: 'ml' } };
    try {
      // Requests as the executor makes them pass: not recorded.
      expect((await send('GET', '/api/v1/nodes/n-1')).status).toBe(200);
      expect((await send('GET', '/api/v1/nodes?limit=500&labelSelector=a%3Db')).status).toBe(200);
      expect((await send('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn-1&limit=200')).status).toBe(200);
      expect((await send('PATCH', '/api/v1/nodes/n-1', { metadata: { labels: { 'example.com/a': 'b' } }, spec: { unschedulable: true } }, merge)).status).toBe(
        200,
      );
      expect((await send('PATCH', '/api/v1/nodes/n-1', { metadata: { labels: { 'example.com/a': null } }, spec: { unschedulable: null } }, merge)).status).toBe(
        200,
      );
      expect((await send('POST', '/api/v1/namespaces/ml/pods/p/eviction', eviction)).status).toBe(201);
      expect(own.takeViolations()).toEqual([]);

      const wrong: [string, string, unknown?, string?][] = [
        ['GET', '/api/v1/nodez'],
        ['DELETE', '/api/v1/pods'],
        ['GET', '/api/v1/nodes?labelSelectr=a'],
        ['GET', '/api/v1/nodes/n-1?limit=1'],
        ['PATCH', '/api/v1/nodes/n-1', { spec: { unschedulable: true } }, 'text/plain'],
        ['PATCH', '/api/v1/nodes/n-1', { spec: { unschedulabel: true } }, merge],
        ['PATCH', '/api/v1/nodes/n-1', { spec: { taints: [{ key: 'k', effect: 'NoSchedule', valu: 'x' }] } }, merge],
        ['PATCH', '/api/v1/nodes/n-1', { spec: { taints: [{ key: 'k', effect: 'NoSchedul' }] } }, merge],
        ['PATCH', '/api/v1/nodes/n-1', { spec: { unschedulable: 'yes' } }, merge],
        ['POST', '/api/v1/namespaces/ml/pods/p/eviction', { ...eviction, deleteOption: {} }],
        ['POST', '/api/v1/namespaces/ml/pods/p/eviction', { ...eviction, apiVersion: 'policy/v1beta2' }],
        ['POST', '/api/v1/namespaces/ml/pods/p/eviction', { ...eviction, metadata: { name: 'q', namespace: 'ml' } }],
      ];
      for (const [method, path, body, type] of wrong) await send(method, path, body, type);
      const violations = own.takeViolations();
      expect(violations).toHaveLength(wrong.length);
      expect(violations.join('\n')).toMatch(
        new RegExp(
          [
            'nodez: no such operation in the route table',
            'DELETE /api/v1/pods: no such operation',
            'labelSelectr is not declared',
            'n-1: query parameter limit is not declared',
            'text/plain is not one of',
            '/spec/unschedulabel: unknown field',
            '/spec/taints/0/valu: unknown field',
            'data/spec/taints/0/effect must be equal to one of the allowed values',
            'data/spec/unschedulable must be boolean',
            '/deleteOption: unknown field',
            'data/apiVersion must be equal to one of the allowed values',
            'metadata.name is not the name in the path',
          ]
            .map((part) => part.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'))
            .join('[\\s\\S]*'),
        ),
      );
      expect(own.node('n-1')?.spec).toEqual({}); // nothing invalid was stored
      expect((await raw('GET', '/api/v1/nodes/n-1', undefined, 'application/json', 'wrong', own)).status).toBe(401);
    } finally {
      await own.stop();
    }
  });
});

describe('the Kubernetes executor on a spec-checked loopback API server', () => {
  it('drains a node: cordoned, tainted NoSchedule with a valid taint value, the whole reason in an annotation, by a merge patch', async () => {
    const ex = executor();
    expect(await run(ex, 'gpu-01', 'drain')).toEqual({ outcome: 'succeeded' });
    expect(field('gpu-01', 'spec', 'unschedulable')).toBe(true);
    expect(taints('gpu-01')).toEqual([{ key: TAINT_KEY, effect: 'NoSchedule', value: 'gpualert-GPU-fell-off-the-bus-Xid-79-reboot-needed' }]);
    expect(annotations('gpu-01').get(REASON_ANNOTATION)).toBe(REASON);
    expect(annotations('gpu-01').get(CORDON_ANNOTATION)).toBe('true');
    const [patch] = patches('gpu-01');
    expect(patch?.contentType).toBe('application/merge-patch+json');
    expect(JSON.parse(patch?.body ?? '{}')).toMatchObject({ metadata: { resourceVersion: expect.any(String) } });
  });

  it('a drain that holds is already_held and sends no second patch', async () => {
    const ex = executor();
    expect(await run(ex, 'gpu-02', 'drain')).toEqual({ outcome: 'succeeded' });
    expect(patches('gpu-02')).toHaveLength(1); // a drain is seen as a patch
    expect(await run(ex, 'gpu-02', 'drain', 'gpualert: something else')).toEqual({ outcome: 'already_held' });
    expect(patches('gpu-02')).toHaveLength(1);
    expect(taints('gpu-02')).toHaveLength(1);
  });

  it("resume lifts only gpualert's taint, uncordons a node gpualert cordoned, and never lifts someone else's cordon", async () => {
    const ex = executor();
    // gpu-03: someone's own taint beside ours; gpualert cordoned it, so a resume uncordons it.
    api.changeNode('gpu-03', (node) => {
      node.spec = { taints: [{ key: 'example.com/maintenance', effect: 'NoExecute', value: 'disk' }] };
    });
    expect(await run(ex, 'gpu-03', 'drain')).toEqual({ outcome: 'succeeded' });
    expect(taints('gpu-03')).toHaveLength(2);
    expect(await run(ex, 'gpu-03', 'resume')).toEqual({ outcome: 'succeeded' });
    expect(taints('gpu-03')).toEqual([{ key: 'example.com/maintenance', effect: 'NoExecute', value: 'disk' }]);
    expect(field('gpu-03', 'spec', 'unschedulable')).toBe(false);
    expect(annotations('gpu-03').has(CORDON_ANNOTATION)).toBe(false);
    expect(annotations('gpu-03').has(REASON_ANNOTATION)).toBe(false);
    expect(await run(ex, 'gpu-03', 'resume')).toEqual({ outcome: 'already_held' });

    // gpu-04: cordoned by a person before gpualert came; gpualert's drain adds its taint only.
    api.changeNode('gpu-04', (node) => {
      node.spec = { unschedulable: true };
    });
    expect(await run(ex, 'gpu-04', 'drain')).toEqual({ outcome: 'succeeded' });
    expect(annotations('gpu-04').has(CORDON_ANNOTATION)).toBe(false);
    const resumed = await run(ex, 'gpu-04', 'resume');
    expect(resumed).toMatchObject({ outcome: 'failed', retriable: false, error: expect.stringContaining('cordoned by someone else') });
    expect(taints('gpu-04')).toEqual([]);
    expect(field('gpu-04', 'spec', 'unschedulable')).toBe(true);
    api.changeNode('gpu-04', (node) => {
      node.spec = {};
    });
  });

  it('another writer between our read and our patch: 409, read again, and both changes stand', async () => {
    const ex = executor();
    api.raceNextPatch((node) => {
      node.spec = { taints: [{ key: 'example.com/other', effect: 'PreferNoSchedule' }] };
    });
    const before = patches('gpu-05').length;
    expect(await run(ex, 'gpu-05', 'drain')).toEqual({ outcome: 'succeeded' });
    expect(patches('gpu-05').length - before).toBe(2); // the first met the conflict
    expect(taintKeys('gpu-05')).toEqual(['example.com/other', TAINT_KEY]);
    expect(await run(ex, 'gpu-05', 'resume')).toEqual({ outcome: 'succeeded' });
    expect(taintKeys('gpu-05')).toEqual(['example.com/other']);
  });

  it("evicts the node's pods through the Eviction API, leaves DaemonSet pods, and a PodDisruptionBudget's 429 is retriable and reported", async () => {
    api.addPod({ namespace: 'ml', name: 'trainer-0', node: 'gpu-06' });
    api.addPod({ namespace: 'ml', name: 'trainer-1', node: 'gpu-06' });
    api.addPod({ namespace: 'kube-system', name: 'dcgm-exporter-x', node: 'gpu-06', ownerKind: 'DaemonSet' });
    api.addPod({ namespace: 'ml', name: 'elsewhere', node: 'gpu-01' });
    api.blockEviction('ml', 'trainer-1');
    const ex = executor({ evictPods: true });
    const first = await run(ex, 'gpu-06', 'drain');
    expect(first).toMatchObject({ outcome: 'failed', retriable: true, error: expect.stringMatching(/gpu-06.*1 pod\(s\) not evicted \(HTTP 429/) });
    expect(api.podNames().sort()).toEqual(['kube-system/dcgm-exporter-x', 'ml/elsewhere', 'ml/trainer-1']);
    expect(taints('gpu-06')).toHaveLength(1); // cordoned and tainted all the same
    const evictions = api.requests.filter((r) => r.path.endsWith('/eviction') && r.path.includes('/trainer-'));
    expect(evictions.map((r) => r.path)).toEqual(['/api/v1/namespaces/ml/pods/trainer-0/eviction', '/api/v1/namespaces/ml/pods/trainer-1/eviction']);
    expect(api.requests.find((r) => r.method === 'get' && r.path === '/api/v1/pods')?.query.get('fieldSelector')).toBe('spec.nodeName=gpu-06');

    // The budget allows it later: the retry evicts the rest, and the drain is done.
    api.unblockEviction('ml', 'trainer-1');
    expect(await run(ex, 'gpu-06', 'drain')).toEqual({ outcome: 'succeeded' });
    expect(api.podNames().sort()).toEqual(['kube-system/dcgm-exporter-x', 'ml/elsewhere']);
    expect(await run(ex, 'gpu-06', 'drain')).toEqual({ outcome: 'already_held' });
  });

  it('an API server that is down, slow or failing is a retriable failure naming the node; the core retries it with backoff and the drain lands', async () => {
    const ex = executor({ timeoutMs: 500 });
    await api.down();
    let down: ExecutionOutcome;
    try {
      down = await run(ex, 'gpu-07', 'drain');
    } finally {
      await api.up();
    }
    expect(down).toMatchObject({
      outcome: 'failed',
      retriable: true,
      error: expect.stringMatching(/^kubernetes: drain \(read\) of node gpu-07: no answer: .*ECONNREFUSED/),
    });

    api.fail(0, 1, 'get'); // no answer: the deadline ends it
    const slow = await run(ex, 'gpu-07', 'drain');
    expect(slow).toMatchObject({ outcome: 'failed', retriable: true, error: expect.stringContaining('timed out') });
    api.fail(503, 1, 'patch');
    expect(await run(ex, 'gpu-07', 'drain')).toMatchObject({ outcome: 'failed', retriable: true, error: expect.stringContaining('node gpu-07: HTTP 503') });
    api.fail(403, 1);
    expect(await run(ex, 'gpu-07', 'drain')).toMatchObject({ outcome: 'failed', retriable: false, error: expect.stringContaining('node gpu-07: HTTP 403') });
    expect(await run(ex, 'gpu-99', 'drain')).toMatchObject({ outcome: 'failed', retriable: false, error: expect.stringContaining('node gpu-99: HTTP 404') });
    expect(taints('gpu-07')).toEqual([]);

    // With the core: the first try meets a server that is down; the retry after the backoff lands.
    const policy = parsePolicy(
      't.yaml',
      `breaker: { max_share: 1, window: 1h }\ndefaults: { approval: { required: false } }\nrules:\n  - { name: bus, match: ['category="fallen_off_bus"'], action: drain }\n`,
    );
    if (!policy.ok) throw new Error(JSON.stringify(policy.errors));
    const core = new RemediationCore(policy.value, { source: 'test', executor: ex.name });
    const inventory = await ex.inventory();
    core.setInventory(inventory.partitions, inventory.hostPartitions); // gpu-07 is zone-a's one node
    const t0 = Date.parse('2026-06-01T00:00:00Z');
    const decided = core.alert(alert('gpu-07'), t0);
    const [command] = decided.commands;
    if (!command) throw new Error(`no drain decided: ${JSON.stringify(decided.envelopes.map((e) => e.data))}`);
    await api.down();
    let report;
    try {
      const outcome = await ex.run(command);
      if (outcome.outcome === 'failed') errors.push(outcome.error);
      report = core.result(command.actionId, outcome, t0).envelopes[0];
    } finally {
      await api.up();
    }
    expect(report?.type === 'action.result' && [report.data.outcome, report.data.next_attempt_at]).toEqual(['retrying', new Date(t0 + 1_000).toISOString()]);
    expect(report?.type === 'action.result' && report.data.error).toContain('gpu-07');
    const [retry] = core.tick(t0 + 1_000).commands;
    expect(retry && [retry.host, retry.attempt]).toEqual(['gpu-07', 2]);
    if (!retry) return;
    const landed = core.result(retry.actionId, await ex.run(retry), t0 + 1_000).envelopes[0];
    expect(landed?.type === 'action.result' && landed.data.outcome).toBe('succeeded');
    expect(taints('gpu-07')).toHaveLength(1);
  });

  it('refuses a node name Kubernetes would not take or a URL would read as a path, a query or a list, with no request made', async () => {
    const ex = executor();
    const before = api.requests.length;
    expect(await run(ex, 'gpu-08', 'resume')).toEqual({ outcome: 'already_held' });
    expect(api.requests.length).toBeGreaterThan(before); // a request is seen when one is made
    const seen = api.requests.length;
    const hostile = [
      '-n',
      '--all',
      'a/b',
      '../x',
      '..',
      'a,b',
      'gpu-[01-02]',
      'a?b=1',
      'a#b',
      'a%2Fb',
      'GPU-01',
      'gpu_01',
      'a..b',
      'a b',
      `${'a'.repeat(64)}.b`,
      'a'.repeat(254),
      '',
    ];
    for (const host of hostile) {
      for (const kind of ['drain', 'resume'] as const)
        expect(await run(ex, host, kind), host).toMatchObject({ outcome: 'failed', retriable: false, error: expect.stringContaining('refused') });
    }
    expect(api.requests.length).toBe(seen);
  });

  it('reads partitions from the partition label, then the zone label, in pages', async () => {
    const big = await KubernetesApi.start({
      token: TOKEN,
      nodes: Array.from({ length: 620 }, (_, i) => ({ name: `n-${i}`, ...(i < 600 ? { labels: { 'gpualert.io/partition': i < 300 ? 'a' : 'b' } } : {}) })),
    });
    try {
      const inventory = await new KubernetesExecutor({ kubeConfig: kubeConfig(TOKEN, big.url) }).inventory();
      expect([...inventory.partitions].sort()).toEqual([
        ['a', 300],
        ['b', 300],
        ['default', 20],
      ]);
      expect(big.requests.filter((r) => r.path === '/api/v1/nodes').map((r) => r.query.get('continue') ?? '')).toEqual(['', '500']);
      expect(big.violations).toEqual([]);
    } finally {
      await big.stop();
    }
    const inventory = await executor().inventory();
    expect([inventory.hostPartitions.get('gpu-01'), inventory.hostPartitions.get('gpu-07'), inventory.hostPartitions.get('gpu-08')]).toEqual([
      'train',
      'zone-a',
      'default',
    ]);
  });

  it('reads a kubeconfig file as `gpualert remediate --kubeconfig` does, and says which one names no cluster', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpualert-kubeconfig-'));
    try {
      const file = join(dir, 'config');
      const cluster = { server: api.url, 'certificate-authority-data': Buffer.from(api.ca).toString('base64') };
      const config = { apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster }], users: [{ name: 'u', user: { token: TOKEN } }] };
      writeFileSync(file, JSON.stringify({ ...config, contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }], 'current-context': 'x' }));
      const inventory = await new KubernetesExecutor({ kubeConfig: loadKubeConfig(file) }).inventory();
      expect(inventory.hostPartitions.get('gpu-01')).toBe('train');
      writeFileSync(file, JSON.stringify(config));
      expect(() => loadKubeConfig(file)).toThrow(`${file} names no current cluster`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('never puts the token in an outcome, even when the API server repeats it back', async () => {
    const ex = executor();
    const echoing = new KubernetesExecutor({ kubeConfig: kubeConfig(`${TOKEN}-wrong`) });
    const refused = await run(echoing, 'gpu-08', 'drain');
    expect(refused).toMatchObject({ outcome: 'failed', retriable: false, error: expect.stringContaining('HTTP 401') });
    expect(api.unauthorized).toBeGreaterThan(0);
    // A server that echoes the credential in its message: the executor must blank it.
    api.echoAuthorization = true;
    try {
      const echoed = await new Promise<string>((done, fail) => {
        const url = `${api.url}/api/v1/nodes/missing`;
        httpsGet(url, { ca: api.ca, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
          let text = '';
          res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          res.on('end', () => done(text));
        }).on('error', fail);
      });
      expect(echoed).toContain(TOKEN); // what the executor is handed holds it
      expect(await run(ex, 'missing', 'drain')).toMatchObject({ outcome: 'failed', error: expect.stringContaining('Bearer [redacted]') });
    } finally {
      api.echoAuthorization = false;
    }
    expect(errors.length).toBeGreaterThan(10);
    expect(errors.filter((e) => e.includes(TOKEN.slice(0, 12)))).toEqual([]);
  });
});

function alert(host: string): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: stableId('alert', host, 'fp'),
    ts: '2026-06-01T00:00:00.000Z',
    host,
    labels: {},
    source: 'engine/test',
    data: {
      fingerprint: `fp-${host}`,
      status: 'firing',
      severity: 'critical',
      category: 'fallen_off_bus',
      rule: 'gpu-absent',
      summary: `GPU 3 on ${host} has disappeared (Xid 79)`,
      starts_at: '2026-06-01T00:00:00.000Z',
      evidence: [],
    },
  });
}
