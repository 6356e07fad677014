import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { REMEDIATE_SETTINGS } from '../../packages/cli/src/settings/remediate-settings.ts';
import { schemaErrors, typeErrors, type Manifest } from './kubernetes-schema.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const BASE = join(ROOT, 'deploy/kubernetes');

interface Kustomization {
  resources: string[];
  configMapGenerator: { name: string; namespace?: string; files?: string[]; literals?: string[] }[];
}

// Manifests are data read from YAML; the checks below walk them by path.
type Obj = Record<string, any>;

function readManifests(path: string): Manifest[] {
  const where = relative(ROOT, path);
  return parseAllDocuments(readFileSync(path, 'utf8')).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0]!.message}`);
    return { where: `${where}#${i}`, object: doc.toJS() as Manifest['object'] };
  });
}

/** What kustomize would generate from a configMapGenerator entry (names without the hash). */
function generatedConfigMap(generator: Kustomization['configMapGenerator'][number]): Manifest {
  const data = Object.create(null) as Record<string, string>;
  for (const file of generator.files ?? []) data[basename(file)] = readFileSync(join(BASE, file), 'utf8');
  for (const literal of generator.literals ?? []) {
    const at = literal.indexOf('=');
    data[literal.slice(0, at)] = literal.slice(at + 1);
  }
  return { where: `kustomization.yaml configMapGenerator ${generator.name}`, object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: generator.name, ...(generator.namespace ? { namespace: generator.namespace } : {}) }, data } };
}

const kustomization = readManifests(join(BASE, 'kustomization.yaml'))[0]!.object as unknown as Kustomization;
const resources = kustomization.resources.flatMap((file) => readManifests(join(BASE, file)));
const secrets = readManifests(join(BASE, 'secret.example.yaml'));
const generated = kustomization.configMapGenerator.map(generatedConfigMap);
const every = [...resources, ...secrets, ...generated];
const byName = (kind: string, name: string): Obj => resources.find((m) => m.object.kind === kind && (m.object as Obj).metadata?.name === name)!.object as Obj;
const workloads = resources.filter((m) => ['Deployment', 'DaemonSet', 'StatefulSet'].includes(String(m.object.kind))).map((m) => m.object as Obj);
const containersOf = (workload: Obj): Obj[] => workload.spec.template.spec.containers as Obj[];
const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);

describe('deploy/kubernetes', () => {
  it('every manifest, the example secrets and the generated ConfigMaps are valid against the Kubernetes OpenAPI schemas', async () => {
    expect(every.length).toBeGreaterThanOrEqual(12);
    expect(await schemaErrors(every)).toEqual([]);
  });

  it('no manifest has a field Kubernetes does not know (strict field validation)', () => {
    expect(typeErrors(every)).toEqual([]);
  }, 30_000);

  it('the validators catch a misspelt security field, a bad enum and a missing required field', async () => {
    const agent = structuredClone(byName('DaemonSet', 'gpualert-agent'));
    agent.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem = true;
    const engine = structuredClone(byName('Deployment', 'gpualert-engine'));
    engine.spec.template.spec.restartPolicy = 'Sometimes';
    delete engine.spec.selector;
    const bad: Manifest[] = [{ where: 'agent', object: agent }, { where: 'engine', object: engine }];
    expect(typeErrors(bad).join('\n')).toMatch(/readOnlyRootFileSystem.*does not exist in type 'ISecurityContext'/);
    const errors = (await schemaErrors(bad)).join('\n');
    expect(errors).toContain('/spec/template/spec/restartPolicy');
    expect(errors).toContain('engine: /spec must have required property selector');
  }, 30_000);

  it('runs the agent on GPU nodes only, through the NVIDIA runtime, reading /dev/kmsg read-only', () => {
    const spec = byName('DaemonSet', 'gpualert-agent').spec.template.spec as Obj;
    expect(spec.nodeSelector).toEqual({ 'nvidia.com/gpu.present': 'true' });
    expect(spec.tolerations).toContainEqual({ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' });
    expect(spec.runtimeClassName).toBe('nvidia');
    const [agent] = containersOf(byName('DaemonSet', 'gpualert-agent'));
    expect(agent!.resources.limits['nvidia.com/gpu'], 'the agent must take no GPU from the scheduler').toBeUndefined();
    expect(agent!.volumeMounts).toContainEqual({ name: 'kmsg', mountPath: '/dev/kmsg', readOnly: true });
    expect(spec.volumes).toContainEqual({ name: 'kmsg', hostPath: { path: '/dev/kmsg', type: 'CharDevice' } });
    expect(agent!.securityContext.readOnlyRootFilesystem).toBe(true);
    // The API server refuses privileged with allowPrivilegeEscalation: false.
    expect(agent!.securityContext.privileged && agent!.securityContext.allowPrivilegeEscalation === false).toBe(false);
    expect(spec.hostNetwork ?? false).toBe(false);
    expect(spec.hostPID ?? false).toBe(false);
  });

  it("requests at least the memory each service was measured to hold at its peak, with a limit above it, and CPU", () => {
    // Peak RSS in MiB of what each container runs (the image's dist/ bundle), as the comment beside
    // each request cites it: `npm run bench -- e2e --quick` (engine at 1,000 GPUs, notifier, agent)
    // and `npm run bench -- intake`. The remediator was not measured (no cluster).
    const measuredPeakMiB = new Map([
      ['gpualert-engine', 276],
      ['gpualert-notifier', 152],
      ['gpualert-intake', 125],
      ['gpualert-agent', 102],
    ]);
    const mebibytes = (quantity: string) => {
      const m = /^(\d+)(Mi|Gi)$/.exec(quantity);
      if (!m) throw new Error(`a memory quantity in Mi or Gi, not ${quantity}`);
      return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
    };
    for (const workload of workloads) {
      const name = workload.metadata.name as string;
      for (const container of containersOf(workload)) {
        const { requests, limits } = container.resources as { requests: Record<string, string>; limits: Record<string, string> };
        expect(requests.cpu, name).toMatch(/^\d+m$/);
        expect(mebibytes(limits.memory!), name).toBeGreaterThan(mebibytes(requests.memory!));
        const measured = measuredPeakMiB.get(name);
        if (measured !== undefined) expect(mebibytes(requests.memory!), `${name}: its request against its measured peak`).toBeGreaterThanOrEqual(measured);
      }
    }
    expect([...measuredPeakMiB.keys()].every((name) => workloads.some((w) => w.metadata.name === name))).toBe(true);
  });

  it('runs every other container as non-root, read-only, with no capability, and no token but for the remediator, which calls the API', () => {
    for (const workload of workloads) {
      expect(workload.spec.template.spec.automountServiceAccountToken, workload.metadata.name).toBe(workload.metadata.name === 'gpualert-remediator');
      if (workload.kind === 'DaemonSet') continue;
      expect(workload.spec.template.spec.securityContext.runAsNonRoot, workload.metadata.name).toBe(true);
      for (const container of containersOf(workload)) {
        expect(container.securityContext, workload.metadata.name).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      }
    }
  });

  it('probes liveness on /healthz and readiness on /readyz where a service serves it (/healthz where it has only that), and the intake has a Service on 9468', () => {
    const expected = new Map([['gpualert-agent', 9469], ['gpualert-notifier', 9095], ['gpualert-intake', 9468], ['gpualert-engine', 9470]]);
    const readiness = new Map([['gpualert-notifier', '/readyz'], ['gpualert-engine', '/readyz'], ['gpualert-intake', '/readyz']]);
    for (const workload of workloads) {
      const [container] = containersOf(workload);
      const port = expected.get(workload.metadata.name);
      if (port === undefined) {
        expect(container!.readinessProbe, `${workload.metadata.name} serves no HTTP`).toBeUndefined();
        continue;
      }
      expect(container!.ports).toContainEqual({ name: 'http', containerPort: port });
      expect(container!.readinessProbe.httpGet, workload.metadata.name).toEqual({ path: readiness.get(workload.metadata.name) ?? '/healthz', port: 'http' });
      // Liveness never on /readyz: a Kafka or Redis away must not restart every pod (the agent's is a TCP probe: its /healthz says whether samples get through).
      expect(container!.livenessProbe, workload.metadata.name).toBeDefined();
      if (container!.livenessProbe.httpGet) expect(container!.livenessProbe.httpGet, workload.metadata.name).toEqual({ path: '/healthz', port: 'http' });
    }
    expect(byName('Service', 'gpualert-intake').spec.ports).toEqual([{ name: 'http', port: 9468, targetPort: 'http' }]);
  });

  it('lets Prometheus scrape every engine pod, whose /metrics every dashboard draws from (a headless Service and the scrape annotations)', () => {
    const engine = byName('Service', 'gpualert-engine');
    expect(engine.spec).toMatchObject({ clusterIP: 'None', selector: { 'app.kubernetes.io/name': 'gpualert-engine' }, ports: [{ name: 'http', port: 9470, targetPort: 'http' }] });
    for (const [kind, name] of [
      ['Deployment', 'gpualert-engine'],
      ['StatefulSet', 'gpualert-notifier'],
    ] as const) {
      const workload = byName(kind, name);
      const port = String((containersOf(workload)[0]!.ports as Obj[]).find((p) => p.name === 'http')!.containerPort);
      expect(workload.spec.template.metadata.annotations, name).toMatchObject({ 'prometheus.io/scrape': 'true', 'prometheus.io/port': port, 'prometheus.io/path': '/metrics' });
    }
  });

  it('the engine runs with the rules ConfigMaps laid out as rules/, every template included', () => {
    const templates = readdirSync(join(ROOT, 'rules/templates')).filter((f) => f.endsWith('.yaml')).sort();
    const generator = kustomization.configMapGenerator.find((g) => g.name === 'gpualert-rule-templates')!;
    expect(generator.files!.map((f) => basename(f)).sort()).toEqual(templates);
    const engine = byName('Deployment', 'gpualert-engine');
    expect(containersOf(engine)[0]!.args).toEqual(['engine', '--rules', '/etc/gpualert/rules']);
    const rules = (engine.spec.template.spec.volumes as Obj[]).find((v) => v.name === 'rules')!;
    const items = (rules.projected.sources as Obj[]).find((s) => s.configMap.name === 'gpualert-rule-templates')!.configMap.items as Obj[];
    expect(items.map((i) => i.path).sort()).toEqual(templates.map((t) => `templates/${t}`));
    const ruleFiles = kustomization.configMapGenerator.find((g) => g.name === 'gpualert-rules')!.files!;
    expect(ruleFiles.map((f) => relative(BASE, join(BASE, f)))).toEqual(['rules/defaults.yaml', 'rules/xid-catalog.yaml']);
    expect(dirname(relative(BASE, join(BASE, kustomization.configMapGenerator.find((g) => g.name === 'gpualert-routes')!.files![0]!)))).toBe('rules');
  });

  it("reads rules/ from its own copy, which is the repository's rules/ byte for byte (kustomize reads nothing outside the base)", () => {
    const files = kustomization.configMapGenerator.flatMap((g) => g.files ?? []);
    expect(files.length).toBeGreaterThanOrEqual(8);
    for (const file of files) {
      expect(file, 'a file inside the base').toMatch(/^rules\//);
      expect(readFileSync(join(BASE, file), 'utf8'), `deploy/kubernetes/${file} differs from ${file}: copy it again`).toBe(readFileSync(join(ROOT, file), 'utf8'));
    }
  });

  it('runs the services under the restricted Pod Security Standard and only the agent privileged, in a namespace of its own', () => {
    const namespaces = new Map(resources.filter((m) => m.object.kind === 'Namespace').map((m) => [(m.object as Obj).metadata.name as string, (m.object as Obj).metadata.labels as Record<string, string>]));
    expect(namespaces.get('gpualert')?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    expect(namespaces.get('gpualert-agent')?.['pod-security.kubernetes.io/enforce']).toBe('privileged');
    for (const workload of workloads) {
      const privileged = containersOf(workload).some((c) => c.securityContext?.privileged === true);
      expect([workload.metadata.name, workload.metadata.namespace]).toEqual([workload.metadata.name, privileged ? 'gpualert-agent' : 'gpualert']);
      if (privileged) continue;
      // What `restricted` asks of every pod in gpualert, checked here as the admission would.
      const pod = workload.spec.template.spec as Obj;
      expect(pod.securityContext, workload.metadata.name).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      for (const c of containersOf(workload)) expect(c.securityContext, `${workload.metadata.name}/${c.name}`).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    }
    // Every namespaced object says where it goes: the base sets no namespace of its own.
    expect(kustomization).not.toHaveProperty('namespace');
    for (const m of [...resources, ...generated]) {
      if (!CLUSTER_SCOPED.has(String(m.object.kind))) expect((m.object as Obj).metadata.namespace, m.where).toMatch(/^gpualert(-agent)?$/);
    }
  });

  it('admits the agent\'s system-node-critical priority outside kube-system: a ResourceQuota for that class in its namespace', () => {
    const agent = byName('DaemonSet', 'gpualert-agent');
    expect(agent.spec.template.spec.priorityClassName).toBe('system-node-critical');
    // Its settings in its own namespace, Redis included: the kernel collector keeps its place in /dev/kmsg there.
    const settings = generated.find((m) => (m.object as Obj).metadata.name === 'gpualert-settings' && (m.object as Obj).metadata.namespace === agent.metadata.namespace);
    expect(Object.keys(((settings?.object as Obj | undefined)?.data ?? {}) as Record<string, string>)).toEqual(expect.arrayContaining(['KAFKA_BROKERS', 'REDIS_URL']));
    const quota = resources.find((m) => m.object.kind === 'ResourceQuota')?.object as Obj | undefined;
    expect(quota?.metadata.namespace).toBe(agent.metadata.namespace);
    expect(quota?.spec.scopeSelector.matchExpressions).toEqual([{ scopeName: 'PriorityClass', operator: 'In', values: ['system-node-critical'] }]);
  });

  it('a drain takes one pod of each service at a time, and ingress reaches each pod on its own port only', () => {
    const budgets = resources.filter((m) => m.object.kind === 'PodDisruptionBudget').map((m) => m.object as Obj);
    const policies = resources.filter((m) => m.object.kind === 'NetworkPolicy').map((m) => m.object as Obj);
    for (const workload of workloads) {
      const labels = workload.spec.template.metadata.labels as Record<string, string>;
      const selects = (selector: Obj) => Object.entries((selector.matchLabels ?? {}) as Record<string, string>).every(([k, v]) => labels[k] === v);
      const same = (o: Obj) => o.metadata.namespace === workload.metadata.namespace;
      if (workload.kind !== 'DaemonSet') expect(budgets.filter((b) => same(b) && selects(b.spec.selector)).map((b) => b.spec.maxUnavailable), workload.metadata.name).toEqual([1]);
      // A default deny in its namespace, and one policy opening the container's own port.
      expect(policies.some((p) => same(p) && Object.keys(p.spec.podSelector).length === 0 && p.spec.ingress === undefined && p.spec.policyTypes.includes('Ingress')), `default deny for ${workload.metadata.name}`).toBe(true);
      // A pod that serves nothing (the remediator) gets no opening at all.
      const port = ((containersOf(workload)[0]!.ports ?? []) as Obj[]).find((p) => p.name === 'http')?.containerPort as number | undefined;
      const opened = policies.filter((p) => same(p) && Object.keys(p.spec.podSelector).length > 0 && selects(p.spec.podSelector)).flatMap((p) => (p.spec.ingress as Obj[]).flatMap((r) => (r.ports as Obj[]).map((x) => x.port as number)));
      expect(opened, workload.metadata.name).toEqual(port === undefined ? [] : [port]);
    }
  });

  it('runs the notifier as a cluster of three named replicas (Alertmanager HA): each its own name from its pod, rolled one at a time', () => {
    const notifier = byName('StatefulSet', 'gpualert-notifier');
    expect(notifier.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(notifier.spec.updateStrategy).toEqual({ type: 'RollingUpdate' });
    const env = (containersOf(notifier)[0]!.env as Obj[]).find((e) => e.name === 'GPUALERT_NOTIFIER_REPLICA');
    expect(env?.valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
    expect(resources.some((m) => m.object.kind === 'Deployment' && (m.object as Obj).metadata.name === 'gpualert-notifier')).toBe(false);
  });

  it('runs `gpualert remediate --executor kubernetes` once, with the flags and settings the command has, its policy mounted where it reads it', () => {
    const remediator = byName('Deployment', 'gpualert-remediator');
    expect(remediator.spec.replicas).toBe(1);
    expect(remediator.spec.strategy).toEqual({ type: 'Recreate' });
    const [container] = containersOf(remediator);
    const args = container!.args as string[];
    expect(args.slice(0, 3)).toEqual(['remediate', '--executor', 'kubernetes']);
    // Every flag is one `gpualert remediate --help` lists, and every variable one of its settings.
    const help = spawnSync(process.execPath, [join(ROOT, 'bin/gpualert.mjs'), 'remediate', '--help'], { encoding: 'utf8' }).stdout;
    const flags = args.filter((a) => a.startsWith('--'));
    expect(flags.length).toBeGreaterThan(1);
    for (const flag of flags) expect(help, flag).toMatch(new RegExp(`^\\s+${flag}\\b`, 'm'));
    expect(help).not.toMatch(/^\s+--no-such-flag\b/m);
    const envs = new Set(Object.values(REMEDIATE_SETTINGS.sources).map((s) => s?.env));
    for (const e of container!.env as Obj[]) expect(envs.has(e.name as string), e.name as string).toBe(true);
    const policy = args[args.indexOf('--policy') + 1]!;
    const mount = (container!.volumeMounts as Obj[]).find((m) => policy.startsWith(`${m.mountPath as string}/`))!;
    const volume = (remediator.spec.template.spec.volumes as Obj[]).find((v) => v.name === mount.name)!;
    const generator = kustomization.configMapGenerator.find((g) => g.name === volume.configMap.name)!;
    expect(generator.files!.map((f) => basename(f))).toContain(basename(policy));
  });

  it('binds the remediator, and it alone, to what the Kubernetes executor does: nodes get/list/patch, pods list, pods/eviction create', () => {
    const role = byName('ClusterRole', 'gpualert-remediator');
    const grants = (role.rules as Obj[]).flatMap((r) => (r.resources as string[]).flatMap((res) => (r.verbs as string[]).map((v) => `${res}:${v}`))).sort();
    expect(grants).toEqual(['nodes:get', 'nodes:list', 'nodes:patch', 'pods/eviction:create', 'pods:list']);
    for (const r of role.rules as Obj[]) expect(r.apiGroups).toEqual(['']);
    const bindings = resources.filter((m) => m.object.kind === 'ClusterRoleBinding' || m.object.kind === 'RoleBinding').map((m) => m.object as Obj);
    expect(bindings).toHaveLength(1);
    expect(bindings[0]!.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'gpualert-remediator' });
    const account = byName('Deployment', 'gpualert-remediator').spec.template.spec.serviceAccountName as string;
    expect(bindings[0]!.subjects).toEqual([{ kind: 'ServiceAccount', name: account, namespace: 'gpualert' }]);
    expect(byName('ServiceAccount', account).metadata.namespace).toBe('gpualert');
  });

  it('the example secrets hold placeholders only, and name every env: credential the routes read', () => {
    const values = secrets.flatMap((m) => Object.values(((m.object as Obj).stringData ?? {}) as Record<string, string>));
    expect(values.length).toBeGreaterThan(0);
    for (const value of values) expect(value).toMatch(/^REPLACE_WITH_[A-Za-z_]+$/);
    const notifier = secrets.find((m) => (m.object as Obj).metadata.name === 'gpualert-notifier')!.object as Obj;
    const wanted = [...readFileSync(join(ROOT, 'rules/routes.yaml'), 'utf8').matchAll(/"env:([A-Z_]+)"/g)].map((m) => m[1]);
    expect(Object.keys(notifier.stringData)).toEqual(expect.arrayContaining([...wanted, 'GPUALERT_NOTIFIER_TOKEN']));
  });

  // kubectl carries kustomize; where it is installed (it is on this project's machines), the
  // rendered base is validated too, hashed ConfigMap names and all.
  const kubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;
  it.skipIf(!kubectl)('renders with plain `kubectl kustomize` (no load-restrictor flag), and what it renders is valid too', async () => {
    const run = spawnSync('kubectl', ['kustomize', BASE], { encoding: 'utf8' });
    expect(run.stderr).toBe('');
    const rendered = parseAllDocuments(run.stdout).map((d, i) => ({ where: `rendered#${i}`, object: d.toJS() as Manifest['object'] }));
    expect(rendered).toHaveLength(resources.length + generated.length);
    expect(await schemaErrors(rendered)).toEqual([]);
    expect(typeErrors(rendered)).toEqual([]);
  }, 60_000);
});
