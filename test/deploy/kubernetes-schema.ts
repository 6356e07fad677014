import { join } from 'node:path';
import ts from 'typescript';

/**
 * Validates Kubernetes objects against the Kubernetes OpenAPI schemas, as `kubectl apply` with
 * strict field validation would: the `kubernetes-models` validators (generated from the OpenAPI
 * spec of Kubernetes 1.33: types, required fields, enums, formats), and, because those schemas
 * allow unknown fields, TypeScript's excess-property check against the same package's types,
 * which names a misspelt field such as `readOnlyRootFileSystem` that the API server would refuse.
 */
export interface Manifest {
  readonly where: string;
  readonly object: { apiVersion?: string; kind?: string } & Record<string, unknown>;
}

/** apiVersion/kind → the kubernetes-models module and its interface. */
const MODELS = new Map<string, readonly [string, string]>([
  ['v1/Namespace', ['kubernetes-models/v1/Namespace', 'INamespace']],
  ['v1/ServiceAccount', ['kubernetes-models/v1/ServiceAccount', 'IServiceAccount']],
  ['v1/ConfigMap', ['kubernetes-models/v1/ConfigMap', 'IConfigMap']],
  ['v1/Secret', ['kubernetes-models/v1/Secret', 'ISecret']],
  ['v1/Service', ['kubernetes-models/v1/Service', 'IService']],
  ['apps/v1/Deployment', ['kubernetes-models/apps/v1/Deployment', 'IDeployment']],
  ['apps/v1/DaemonSet', ['kubernetes-models/apps/v1/DaemonSet', 'IDaemonSet']],
  ['apps/v1/StatefulSet', ['kubernetes-models/apps/v1/StatefulSet', 'IStatefulSet']],
  ['v1/ResourceQuota', ['kubernetes-models/v1/ResourceQuota', 'IResourceQuota']],
  ['policy/v1/PodDisruptionBudget', ['kubernetes-models/policy/v1/PodDisruptionBudget', 'IPodDisruptionBudget']],
  ['networking.k8s.io/v1/NetworkPolicy', ['kubernetes-models/networking.k8s.io/v1/NetworkPolicy', 'INetworkPolicy']],
  ['rbac.authorization.k8s.io/v1/ClusterRole', ['kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole', 'IClusterRole']],
  ['rbac.authorization.k8s.io/v1/ClusterRoleBinding', ['kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding', 'IClusterRoleBinding']],
]);

function modelOf(manifest: Manifest): readonly [string, string] {
  const key = `${manifest.object.apiVersion}/${manifest.object.kind}`;
  const model = MODELS.get(key);
  if (!model) throw new Error(`${manifest.where}: no schema here for ${key}; add it to MODELS in test/deploy/kubernetes-schema.ts`);
  return model;
}

/** Errors from the OpenAPI validators, each naming the manifest and the field. */
export async function schemaErrors(manifests: readonly Manifest[]): Promise<string[]> {
  const errors: string[] = [];
  for (const manifest of manifests) {
    const [module, iface] = modelOf(manifest);
    const exports = (await import(module)) as Record<string, new (data: unknown) => { validate(): void }>;
    const Model = exports[iface.slice(1)]!;
    try {
      new Model(manifest.object).validate();
    } catch (error) {
      const details = (error as { errors?: { instancePath: string; message?: string }[] }).errors;
      for (const d of details ?? [{ instancePath: '', message: (error as Error).message }]) errors.push(`${manifest.where}: ${d.instancePath || '/'} ${d.message ?? ''}`);
    }
  }
  return errors;
}

/** Unknown or mistyped fields, by compiling each object as a literal of its kind's type. */
export function typeErrors(manifests: readonly Manifest[]): string[] {
  const file = join(import.meta.dirname, '__manifests__.ts');
  const lines: string[] = [];
  const owner: string[] = [];
  manifests.forEach((manifest, i) => {
    const [module, iface] = modelOf(manifest);
    lines.push(`import type { ${iface} as T${i} } from '${module}';`);
    owner.push(manifest.where);
  });
  const header = lines.length;
  manifests.forEach((manifest, i) => lines.push(`export const m${i}: T${i} = ${JSON.stringify(manifest.object)};`));
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true, noEmit: true, skipLibCheck: true, types: [],
    module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022,
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) =>
    name === file ? ts.createSourceFile(name, source, version) : getSourceFile(name, version, ...rest);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || fileExists(name);
  const program = ts.createProgram([file], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const line = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
    const where = line >= header ? owner[line - header] : 'the generated check';
    return `${where}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
}
