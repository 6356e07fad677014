import {
  CoreV1Api,
  createConfiguration,
  PatchStrategy,
  ServerConfiguration,
  KubeConfig,
  setHeaderOptions,
  type Middleware,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { kubernetesNodeNameProblem, type ActionCommand, type ExecutionOutcome } from '@gpualert/remediation';
import type { Executor, SchedulerInventory } from './executor.ts';
import { failedOutcome, oneLine, requestFailure } from './kubernetes-failure.ts';
import { runAction, type OperatorCommands } from './operator-command.ts';
import { CORDON_ANNOTATION, hasQuarantine, quarantineTaint, REASON_ANNOTATION, reasonAnnotation, TAINT_KEY } from './quarantine-taint.ts';

export interface KubernetesExecutorOptions {
  /** Where the API server is and who we are to it (`loadFromDefault`: KUBECONFIG, ~/.kube/config, or in-cluster). */
  readonly kubeConfig: KubeConfig;
  /** Per request, and per run of an operator's program (default 10 s). */
  readonly timeoutMs?: number;
  /** A drain also evicts the node's pods through the Eviction API, which respects PodDisruptionBudgets (default: only cordon and taint). */
  readonly evictPods?: boolean;
  /** The node label naming its partition (default `gpualert.io/partition`, then the zone label). */
  readonly partitionLabel?: string;
  /** The operator's programs for `reset-gpu` and `reboot`. */
  readonly commands?: OperatorCommands;
}

export const DEFAULT_PARTITION_LABEL = 'gpualert.io/partition';
/** Where a node without the partition label is counted from: its zone, else `default`. */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** Nodes read for the inventory at most, in pages of NODE_PAGE (so at most MAX_KUBERNETES_NODES / NODE_PAGE pages). */
export const MAX_KUBERNETES_NODES = 100_000;
const NODE_PAGE = 500;
/** Pods evicted by one drain at most (the kubelet's default is 110 a node)… */
export const MAX_PODS_EVICTED = 1_000;
/** …out of at most this many read, in pages of POD_PAGE. */
const MAX_PODS_READ = 5_000;
const POD_PAGE = 250;
/** Read-modify-write rounds when another writer changed the node between our read and our patch (HTTP 409). */
const CONFLICT_ROUNDS = 4;

/**
 * Where the API server is and who we are to it: `file` when given (`--kubeconfig`), else the
 * client's standard places (KUBECONFIG, ~/.kube/config, then the pod's service account in-cluster).
 * Throws when none names a current cluster.
 */
export function loadKubeConfig(file?: string): KubeConfig {
  const kc = new KubeConfig();
  if (file !== undefined) kc.loadFromFile(file);
  else kc.loadFromDefault();
  if (!kc.getCurrentCluster()) throw new Error(`${file ?? 'the default kubeconfig'} names no current cluster`);
  return kc;
}

/** A merge patch for a node, or undefined when the node is already as asked. */
type NodeChange = (node: V1Node) => Record<string, unknown> | undefined;

/**
 * Kubernetes through its API (`@kubernetes/client-node`). A drain cordons the node
 * (`spec.unschedulable`) and adds gpualert's `NoSchedule` taint, with the whole reason in an
 * annotation, then, if asked, evicts its pods through the Eviction API (a PodDisruptionBudget's
 * 429 is a retriable failure, reported). A resume lifts gpualert's taint and uncordons only a node
 * gpualert cordoned. Each change is a JSON merge patch carrying the `resourceVersion` read, so a
 * concurrent writer's change is never overwritten (409: read again, patch again). Every request has
 * a deadline; a node name that is not a Kubernetes node name is refused before any request.
 */
export class KubernetesExecutor implements Executor {
  readonly name = 'kubernetes';
  private readonly api: CoreV1Api;
  private readonly timeoutMs: number;
  private readonly partitionLabel: string;

  constructor(private readonly options: KubernetesExecutorOptions) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.partitionLabel = options.partitionLabel ?? DEFAULT_PARTITION_LABEL;
    const cluster = options.kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig names no current cluster');
    const deadline: Middleware = {
      pre: (context) => {
        context.setSignal(AbortSignal.timeout(this.timeoutMs));
        return Promise.resolve(context);
      },
      post: (response) => Promise.resolve(response),
    };
    this.api = new CoreV1Api(
      createConfiguration({
        baseServer: new ServerConfiguration(cluster.server, {}),
        authMethods: { default: options.kubeConfig },
        promiseMiddleware: [deadline],
      }),
    );
  }

  run(command: ActionCommand): Promise<ExecutionOutcome> {
    return runAction(
      command,
      kubernetesNodeNameProblem(command.host),
      { drain: (host, reason) => this.drain(host, reason), resume: (host) => this.resume(host) },
      this.options.commands,
      this.timeoutMs,
    );
  }

  /** Each node's partition: its partition label, else its zone, else `default` (as the core's own fallback). */
  async inventory(): Promise<SchedulerInventory> {
    const hostPartitions = new Map<string, string>();
    const partitions = new Map<string, number>();
    let next: string | undefined;
    let pages = 0;
    do {
      pages += 1;
      let page;
      try {
        page = await this.api.listNode({ limit: NODE_PAGE, ...(next !== undefined ? { _continue: next } : {}) });
      } catch (error) {
        const failure = requestFailure(error);
        throw new Error(`kubernetes: list nodes: ${failure.status !== undefined ? `HTTP ${failure.status}` : 'no answer'}: ${failure.detail}`);
      }
      for (const node of page.items) {
        const name = node.metadata?.name;
        if (name === undefined || hostPartitions.has(name)) continue;
        const labels = new Map(Object.entries(node.metadata?.labels ?? {}));
        const partition = labels.get(this.partitionLabel) ?? labels.get(ZONE_LABEL) ?? 'default';
        hostPartitions.set(name, partition);
        partitions.set(partition, (partitions.get(partition) ?? 0) + 1);
        if (hostPartitions.size >= MAX_KUBERNETES_NODES) break;
      }
      next = page.metadata?._continue || undefined;
    } while (next !== undefined && hostPartitions.size < MAX_KUBERNETES_NODES && pages < MAX_KUBERNETES_NODES / NODE_PAGE);
    return { partitions, hostPartitions };
  }

  private async drain(node: string, reason: string): Promise<ExecutionOutcome> {
    const held = await this.change('drain', node, (current) => {
      if (hasQuarantine(current.spec?.taints)) return undefined;
      // Cordoned already by someone else: ours is the taint only, and a resume leaves their cordon.
      const cordonedByUs = current.spec?.unschedulable !== true;
      return {
        metadata: {
          resourceVersion: current.metadata?.resourceVersion,
          annotations: { [REASON_ANNOTATION]: reasonAnnotation(reason), ...(cordonedByUs ? { [CORDON_ANNOTATION]: 'true' } : {}) },
        },
        spec: { unschedulable: true, taints: [...(current.spec?.taints ?? []), quarantineTaint(reason)] },
      };
    });
    if (held.outcome === 'failed' || this.options.evictPods !== true) return held;
    const evicted = await this.evictPods(node);
    if ('outcome' in evicted) return evicted;
    return held.outcome === 'already_held' && evicted.count === 0 ? held : { outcome: 'succeeded' };
  }

  private async resume(node: string): Promise<ExecutionOutcome> {
    let cordonedByOthers = false;
    const lifted = await this.change('resume', node, (current) => {
      const ours = hasQuarantine(current.spec?.taints);
      const cordonedByUs = new Map(Object.entries(current.metadata?.annotations ?? {})).get(CORDON_ANNOTATION) === 'true';
      cordonedByOthers = current.spec?.unschedulable === true && !cordonedByUs;
      if (!ours && !cordonedByUs) return undefined;
      return {
        metadata: { resourceVersion: current.metadata?.resourceVersion, annotations: { [REASON_ANNOTATION]: null, [CORDON_ANNOTATION]: null } },
        spec: { taints: (current.spec?.taints ?? []).filter((t) => t.key !== TAINT_KEY), ...(cordonedByUs ? { unschedulable: false } : {}) },
      };
    });
    if (lifted.outcome === 'failed' || !cordonedByOthers) return lifted;
    return {
      outcome: 'failed',
      retriable: false,
      error: `kubernetes: resume of node ${node}: ${lifted.outcome === 'succeeded' ? "gpualert's taint lifted, but the" : 'the'} node is cordoned by someone else: left cordoned`,
    };
  }

  /** Reads the node and patches what `change` asks, again from a fresh read when another writer got there first. */
  private async change(what: string, node: string, change: NodeChange): Promise<ExecutionOutcome> {
    for (let round = 1; ; round += 1) {
      let current: V1Node;
      try {
        current = await this.api.readNode({ name: node });
      } catch (error) {
        return failedOutcome(`${what} (read)`, node, requestFailure(error));
      }
      const patch = change(current);
      if (patch === undefined) return { outcome: 'already_held' };
      try {
        await this.api.patchNode({ name: node, body: patch }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
        return { outcome: 'succeeded' };
      } catch (error) {
        const failure = requestFailure(error);
        if (failure.status !== 409 || round >= CONFLICT_ROUNDS) return failedOutcome(`${what} (patch)`, node, failure);
      }
    }
  }

  /** Evicts the node's pods a drain moves (not DaemonSets', mirror or finished pods); a PDB's refusal is retried later. */
  private async evictPods(node: string): Promise<{ count: number } | ExecutionOutcome> {
    const listed = await this.podsOn(node);
    if ('outcome' in listed) return listed;
    let count = 0;
    let blocked = 0;
    for (const pod of listed.pods) {
      const name = pod.metadata?.name;
      const namespace = pod.metadata?.namespace;
      if (name === undefined || namespace === undefined) continue;
      try {
        await this.api.createNamespacedPodEviction({ name, namespace, body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace } } });
        count += 1;
      } catch (error) {
        const failure = requestFailure(error);
        if (failure.status === 404) continue; // gone already
        if (failure.status === 429) blocked += 1;
        else return failedOutcome(`eviction of pod ${oneLine(`${namespace}/${name}`)}`, node, failure);
      }
    }
    if (blocked > 0)
      return {
        outcome: 'failed',
        retriable: true,
        error: `kubernetes: drain of node ${node}: cordoned and tainted, but ${blocked} pod(s) not evicted (HTTP 429: a PodDisruptionBudget allows no disruption now)`,
      };
    return { count };
  }

  private async podsOn(node: string): Promise<{ pods: V1Pod[] } | ExecutionOutcome> {
    const pods: V1Pod[] = [];
    let next: string | undefined;
    let pages = 0;
    do {
      pages += 1;
      let page;
      try {
        page = await this.api.listPodForAllNamespaces({
          fieldSelector: `spec.nodeName=${node}`,
          limit: POD_PAGE,
          ...(next !== undefined ? { _continue: next } : {}),
        });
      } catch (error) {
        return failedOutcome('drain (list pods)', node, requestFailure(error));
      }
      for (const pod of page.items) if (moves(pod) && pods.length < MAX_PODS_EVICTED) pods.push(pod);
      next = page.metadata?._continue || undefined;
    } while (next !== undefined && pods.length < MAX_PODS_EVICTED && pages < MAX_PODS_READ / POD_PAGE);
    return { pods };
  }
}

/** Whether a drain moves this pod: a DaemonSet's comes back on the node, a mirror pod is the kubelet's, a finished one is no load. */
function moves(pod: V1Pod): boolean {
  if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed' || pod.metadata?.deletionTimestamp !== undefined) return false;
  if ((pod.metadata?.ownerReferences ?? []).some((o) => o.kind === 'DaemonSet')) return false;
  return !new Map(Object.entries(pod.metadata?.annotations ?? {})).has('kubernetes.io/config.mirror');
}
