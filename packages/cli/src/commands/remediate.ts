import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { MemoryBus, envelopeMessage, type Bus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { KubernetesExecutor, loadKubeConfig, SlurmExecutor, type Executor } from '@gpualert/executors';
import { formatRuleError } from '@gpualert/rules';
import {
  awaitsApproval,
  foldActions,
  loadPolicy,
  MAX_ACTION_VIEWS,
  MAX_APPROVAL_TIMEOUT_MS,
  newestFirst,
  RemediationCore,
  type ActionView,
  type Policy,
} from '@gpualert/remediation';
import { REMEDIATOR_SOURCE, startRemediator } from '@gpualert/remediator';
import { embeddedDataDir } from '@gpualert/runtime';
import { newEnvelope, parseEnvelope, TOPICS, type Envelope } from '@gpualert/schema';
import { CliError, EXIT, errorMessage } from '../cli-error.ts';
import { runService } from '../run-service.ts';
import { loadSettings } from '../settings/command-settings.ts';
import { ACTION_SETTINGS, REMEDIATE_SETTINGS } from '../settings/remediate-settings.ts';

type Options = Record<string, unknown>;

/** Errors one refused reload's line names. */
const MAX_RELOAD_ERRORS = 50;

/** Actions read for `action list` and to find one to approve: the newest this many. */
export const MAX_LISTED_ACTIONS = MAX_ACTION_VIEWS;
/**
 * How far back `action list|approve|deny` read gpualert.actions: 7 days, the longest an approval
 * may wait (the policy refuses a longer timeout). Older messages are not fetched at all.
 */
export const ACTION_READ_WINDOW_MS = MAX_APPROVAL_TIMEOUT_MS;

/** The policy file read, every rule a dry run with --dry-run; or each error at its file:line. */
function readPolicy(file: string | undefined, dryRun: boolean): { ok: true; policy: Policy } | { ok: false; errors: string[] } {
  const loaded = loadPolicy(file);
  if (!loaded.ok) return { ok: false, errors: loaded.errors.map(formatRuleError) };
  return { ok: true, policy: dryRun ? { ...loaded.value, rules: loaded.value.rules.map((r) => ({ ...r, dryRun: true })) } : loaded.value };
}

function policyFrom(file: string | undefined, dryRun: boolean): Policy {
  const read = readPolicy(file, dryRun);
  if (!read.ok) throw new CliError(`gpualert remediate: the policy does not load:\n${read.errors.join('\n')}`);
  return read.policy;
}

type RemediateConfig = ReturnType<typeof loadSettings<typeof REMEDIATE_SETTINGS.schema>>;

/** The scheduler the settings name: Slurm (its commands) or Kubernetes (its API, from a kubeconfig). */
function executorFrom(config: RemediateConfig): Executor {
  const commands = {
    ...(config.resetGpuCommand ? { 'reset-gpu': config.resetGpuCommand } : {}),
    ...(config.rebootCommand ? { reboot: config.rebootCommand } : {}),
  };
  if (config.executor === 'slurm') return new SlurmExecutor({ scontrol: config.scontrol, sinfo: config.sinfo, commands });
  let kubeConfig;
  try {
    kubeConfig = loadKubeConfig(config.kubeconfig);
  } catch (error) {
    throw new CliError(`gpualert remediate: no Kubernetes API server to act on: ${errorMessage(error)}`);
  }
  return new KubernetesExecutor({ kubeConfig, evictPods: config.evictPods, partitionLabel: config.nodePartitionLabel, commands });
}

/** `gpualert remediate`: the remediation service (issue 29) on Kafka, acting through Slurm or Kubernetes. */
export async function remediate(options: Options): Promise<number> {
  const config = loadSettings(REMEDIATE_SETTINGS, options);
  const policy = policyFrom(config.policy, config.dryRun);
  const executor = executorFrom(config);
  return runService('remediate', config, async ({ bus }, log) => {
    const core = new RemediationCore(policy, { source: REMEDIATOR_SOURCE, executor: executor.name });
    log.info({ rules: policy.rules.length, dry_run: config.dryRun, breaker: policy.breaker }, 'remediation_policy_loaded');
    const running = await startRemediator({ bus, log, core, executor, consoleUrl: config.consoleUrl });
    // SIGHUP reads the policy again, as the engine its rules: held hosts and open actions keep what
    // they were decided with; a file that does not load keeps the running policy.
    const onHangup = () => {
      const read = readPolicy(config.policy, config.dryRun);
      if (!read.ok) {
        log.error({ file: config.policy ?? 'rules/remediation.yaml (bundled)', errors: read.errors.slice(0, MAX_RELOAD_ERRORS) }, 'config_reload_failed');
        return;
      }
      core.setPolicy(read.policy);
      log.info({ rules: read.policy.rules.length, dry_run: config.dryRun, breaker: read.policy.breaker }, 'config_reloaded');
    };
    process.on('SIGHUP', onHangup);
    return {
      ...running,
      stop: async () => {
        process.off('SIGHUP', onHangup);
        await running.stop();
      },
    };
  });
}

function actionsBus(options: Options, write: boolean): { bus: Bus; where: string } {
  const config = loadSettings(ACTION_SETTINGS, options);
  if (config.kafkaBrokers)
    return {
      bus: new KafkaBus({ brokers: config.kafkaBrokers, topicPrefix: config.topicPrefix, publishTimeoutMs: 5_000 }),
      where: `Kafka at ${config.kafkaBrokers.join(',')}`,
    };
  if (write) throw new CliError('gpualert action: approving or denying needs KAFKA_BROKERS (the remediator reads approvals from gpualert.actions there)');
  const dataDir = embeddedDataDir(config.dataDir);
  if (!existsSync(dataDir)) throw new CliError(`gpualert action: no KAFKA_BROKERS and no embedded log at ${dataDir}`);
  return { bus: new MemoryBus({ dataDir }), where: `the embedded log at ${dataDir}` };
}

/** The actions of the last 7 days on the topic, folded to where each stands now (at most MAX_LISTED_ACTIONS, the newest). */
export async function readActions(bus: Bus, now: number = Date.now()): Promise<Map<string, ActionView>> {
  const envelopes: Envelope[] = [];
  for (const message of await bus.read(TOPICS.actions, { from: now - ACTION_READ_WINDOW_MS })) {
    const parsed = parseEnvelope(message.value.toString('utf8'));
    if (parsed.ok) envelopes.push(parsed.value);
  }
  return foldActions(envelopes, MAX_LISTED_ACTIONS);
}

/** `gpualert action list`: each action, where it stands, newest first. */
export async function actionList(options: Options): Promise<number> {
  const { bus, where } = actionsBus(options, false);
  try {
    const views = newestFirst((await readActions(bus)).values());
    if (options.json === true) process.stdout.write(`${JSON.stringify(views, null, 2)}\n`);
    else for (const v of views) process.stdout.write(`${v.id}  ${v.at}  ${v.host}  ${v.kind}  ${v.state}  ${v.rule}  ${v.reason}\n`);
    if (views.length === 0) process.stderr.write(`gpualert action list: no actions in ${where}\n`);
    return EXIT.ok;
  } catch (error) {
    throw new CliError(`gpualert action list: cannot read ${where}: ${errorMessage(error)}`, EXIT.failed);
  } finally {
    await bus.close();
  }
}

/** `gpualert action approve|deny ID [--by NAME] [--comment TEXT]`: a person's word, on the actions topic. */
export async function actionDecide(decision: 'approved' | 'denied', id: string, options: Options): Promise<number> {
  const verb = decision === 'approved' ? 'approve' : 'deny';
  if (typeof id !== 'string' || id.length === 0 || id.length > 128)
    throw new CliError(`gpualert action ${verb}: expected an action id (gpualert action list shows them)`);
  const { bus, where } = actionsBus(options, true);
  try {
    const view = (await readActions(bus)).get(id);
    if (!view) throw new CliError(`gpualert action ${verb}: no action ${JSON.stringify(id.slice(0, 80))} in ${where}`);
    if (!awaitsApproval(view)) throw new CliError(`gpualert action ${verb}: action ${id} is ${view.state}, not awaiting approval`);
    const by = typeof options.by === 'string' && options.by !== '' ? options.by.slice(0, 256) : whoAmI();
    const envelope = newEnvelope({
      type: 'action.approval',
      host: view.host,
      source: 'cli/0.1.0',
      data: { action_id: id, decision, by, ...(typeof options.comment === 'string' ? { comment: options.comment.slice(0, 1_000) } : {}) },
    });
    await bus.publish(TOPICS.actions, [envelopeMessage(envelope)]);
    process.stdout.write(`${id}: ${decision} (${view.kind} of ${view.host}); the remediator acts on it within seconds\n`);
    return EXIT.ok;
  } finally {
    await bus.close();
  }
}

function whoAmI(): string {
  try {
    return userInfo().username || 'cli';
  } catch {
    return 'cli';
  }
}
