import { envelopeMessage, type Bus, type Subscription } from '@gpualert/bus';
import type { Executor } from '@gpualert/executors';
import type { Logger } from '@gpualert/log';
import { actionAlerts, type ActionCommand, type CoreOutput, type RemediationCore } from '@gpualert/remediation';
import { serialQueue } from '@gpualert/runtime';
import { TOPICS, type Envelope } from '@gpualert/schema';

export const REMEDIATOR_GROUP = 'gpualert-remediator';
export const REMEDIATOR_SOURCE = 'remediator/0.1.0';
/** Commands run at once across hosts; one host's run one after another. */
export const MAX_COMMANDS_IN_FLIGHT = 16;
/** A firing alert older than this when read is not acted on (logged as remediation_alert_too_old). */
export const MAX_ALERT_AGE_MS = 10 * 60_000;

export interface RemediatorOptions {
  readonly bus: Bus;
  readonly log: Logger;
  readonly core: RemediationCore;
  readonly executor: Executor;
  readonly group?: string;
  /** How often approvals time out, retries fall due and holds are undone (default 1 s). */
  readonly tickMs?: number;
  /** How often the scheduler's partitions are read again (default 60 s). */
  readonly inventoryMs?: number;
}

/**
 * `gpualert remediate`: alerts in, actions out (issue 29). A consumer group of its own over the
 * alerts, the actions topic (approvals from `gpualert action approve`), GPU samples (a held
 * host's healthy samples) and provider events (a reboot that completed). What the core decides is
 * published on `gpualert.actions`, with alerts for people (an approval to give, a breaker that
 * tripped) on `gpualert.alerts`; a batch's commands run before its offsets commit, so an alert
 * whose action was never tried is read again after a crash (and the executor's check of the
 * node's state keeps a drain from being repeated).
 */
export async function startRemediator(options: RemediatorOptions): Promise<{ stop(): Promise<void> }> {
  const { bus, log, core, executor } = options;
  await bus.ensureTopics([TOPICS.actions, TOPICS.alerts]);
  await refreshInventory(options);

  const publishAll = async (publish: Bus['publish'], out: CoreOutput) => {
    if (out.envelopes.length === 0) return;
    await publish(TOPICS.actions, out.envelopes.map(envelopeMessage));
    const alerts = actionAlerts(out.envelopes, REMEDIATOR_SOURCE);
    if (alerts.length > 0) await publish(TOPICS.alerts, alerts.map(envelopeMessage));
    for (const e of out.envelopes) logEnvelope(log, e);
  };

  /** Runs commands (per host in order, hosts side by side) and feeds each outcome back. */
  const execute = async (commands: readonly ActionCommand[]): Promise<CoreOutput> => {
    const envelopes: Envelope[] = [];
    const byHost = new Map<string, ActionCommand[]>();
    for (const c of commands) byHost.set(c.host, [...(byHost.get(c.host) ?? []), c]);
    const queues = [...byHost.values()];
    const worker = async () => {
      for (let queue = queues.shift(); queue; queue = queues.shift())
        for (const command of queue) {
          const outcome = await executor.run(command);
          envelopes.push(...core.result(command.actionId, outcome, Date.now()).envelopes);
        }
    };
    await Promise.all(Array.from({ length: Math.min(MAX_COMMANDS_IN_FLIGHT, queues.length) }, worker));
    return { envelopes, commands: [] };
  };

  // The batches and the tick, one at a time: an undo's resume and a new alert calling for the drain
  // must not interleave (the resume would put back a host the alert wants out).
  const queue = serialQueue();
  const subscription: Subscription = await bus.consume({
    group: options.group ?? REMEDIATOR_GROUP,
    topics: [TOPICS.alerts, TOPICS.actions, TOPICS.gpuSamples, TOPICS.providerEvents],
    // A new remediator acts on what happens from now on: the topics' history (a week of alerts, and
    // approvals of actions long gone) is no reason to drain a node today.
    fromBeginning: false,
    handler: (batch, context) =>
      queue.run(async () => {
        const envelopes: Envelope[] = [];
        const commands: ActionCommand[] = [];
        for (const { envelope } of batch.items) {
          const out = consume(core, envelope, Date.now(), log);
          envelopes.push(...out.envelopes);
          commands.push(...out.commands);
        }
        const publish = context.publish.bind(context);
        await publishAll(publish, { envelopes, commands });
        if (commands.length > 0) await publishAll(publish, await execute(commands));
      }),
  });

  let ticking = false;
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      await queue.run(async () => {
        const out = core.tick(Date.now());
        await publishAll(bus.publish.bind(bus), out);
        if (out.commands.length > 0) await publishAll(bus.publish.bind(bus), await execute(out.commands));
      });
    } finally {
      ticking = false;
    }
  };
  const ticker = setInterval(
    () => void tick().catch((error: unknown) => log.error({ error: String(error) }, 'remediation_tick_failed')),
    options.tickMs ?? 1_000,
  );
  const inventory = setInterval(() => void refreshInventory(options), options.inventoryMs ?? 60_000);
  ticker.unref();
  inventory.unref();
  log.info({ executor: executor.name, group: options.group ?? REMEDIATOR_GROUP }, 'remediator_started');

  return {
    async stop() {
      clearInterval(ticker);
      clearInterval(inventory);
      await subscription.stop();
      await queue.idle();
    },
  };
}

/** One envelope into the core: alerts decide, approvals answer, samples and reboots are evidence. */
function consume(core: RemediationCore, envelope: Envelope, now: number, log: Logger): CoreOutput {
  const none: CoreOutput = { envelopes: [], commands: [] };
  switch (envelope.type) {
    case 'alert':
      // Its own alerts (an approval to give, a breaker) are for people, not for the policy.
      if (envelope.source === REMEDIATOR_SOURCE) return none;
      // An alert read long after it was raised (a backlog, a consumer that was away) is told, not acted on.
      if (now - Date.parse(envelope.ts) > MAX_ALERT_AGE_MS && envelope.data.status === 'firing') {
        log.info({ host: envelope.host, fingerprint: envelope.data.fingerprint, ts: envelope.ts }, 'remediation_alert_too_old');
        return none;
      }
      return core.alert(envelope, now);
    case 'action.approval': {
      if (envelope.source === REMEDIATOR_SOURCE || envelope.data.decision === 'expired') return none;
      const out = core.approve(envelope.data.action_id, envelope.data.decision, envelope.data.by, now, envelope.data.comment);
      if (typeof out === 'string') {
        log.info({ action_id: envelope.data.action_id, by: envelope.data.by, why: out }, 'remediation_approval_ignored');
        return none;
      }
      return out;
    }
    case 'gpu.sample':
      // Evidence counts from when it happened, never later than now: an old sample read late proves nothing about the node since.
      if (envelope.data.error === undefined && core.watches(envelope.host)) core.evidence(envelope.host, 'healthy', happened(envelope, now));
      return none;
    case 'provider.event':
      if (envelope.data.kind === 'reboot' && envelope.data.status === 'completed')
        for (const host of envelope.data.hosts) core.evidence(host, 'reboot', happened(envelope, now));
      return none;
    default:
      return none;
  }
}

async function refreshInventory(options: RemediatorOptions): Promise<void> {
  try {
    const inventory = await options.executor.inventory();
    options.core.setInventory(inventory.partitions, inventory.hostPartitions);
  } catch (error) {
    options.log.warn({ executor: options.executor.name, error: error instanceof Error ? error.message : String(error) }, 'remediation_inventory_failed');
  }
}

function logEnvelope(log: Logger, e: Envelope): void {
  if (e.type === 'action') {
    const detail = { action_id: e.data.action_id, host: e.host, kind: e.data.kind, phase: e.data.phase, rule: e.data.policy_rule, reason: e.data.reason };
    if (e.data.breaker_tripped === true) log.error(detail, 'remediation_breaker_tripped');
    else if (e.data.breaker_closed === true) log.info(detail, 'remediation_breaker_closed');
    else log.info(detail, 'remediation_action');
  } else if (e.type === 'action.result') {
    const detail = { action_id: e.data.action_id, host: e.host, kind: e.data.kind, outcome: e.data.outcome, attempt: e.data.attempt, error: e.data.error };
    if (e.data.outcome === 'failed' || e.data.outcome === 'retrying') log.warn(detail, 'remediation_result');
    else log.info(detail, 'remediation_result');
  } else if (e.type === 'action.approval') log.info({ action_id: e.data.action_id, decision: e.data.decision, by: e.data.by }, 'remediation_approval');
}

/** When an envelope's event happened, as evidence: its own time, never past now. */
function happened(envelope: Envelope, now: number): number {
  const at = Date.parse(envelope.ts);
  return Number.isFinite(at) ? Math.min(at, now) : now;
}
