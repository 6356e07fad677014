import { envelopeMessage, RetriableError, type Bus, type Subscription } from '@gpualert/bus';
import type { Executor } from '@gpualert/executors';
import { redactSecrets, type Logger } from '@gpualert/log';
import { actionAlerts, type ActionCommand, type CoreOutput, type ExecutionOutcome, type RemediationCore } from '@gpualert/remediation';
import { serialQueue } from '@gpualert/runtime';
import { TOPICS, type Envelope } from '@gpualert/schema';

export const REMEDIATOR_GROUP = 'gpualert-remediator';
export const REMEDIATOR_SOURCE = 'remediator/0.1.0';
/** Commands run at once across hosts; one host's run one after another. */
export const MAX_COMMANDS_IN_FLIGHT = 16;
/** A firing alert older than this when read is not acted on (logged as remediation_alert_too_old). */
export const MAX_ALERT_AGE_MS = 10 * 60_000;
/**
 * Decisions and results waiting for the bus (Kafka away) at most; past this the oldest are dropped,
 * each drop logged as an error (remediation_unpublished_dropped). Their actions still ran.
 */
export const MAX_UNPUBLISHED = 10_000;
/** Envelopes per publish call when the waiting ones go out. */
const PUBLISH_CHUNK = 500;

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
  /** Where people reach the notifier's console: an approval's message links to its action there. */
  readonly consoleUrl?: string | undefined;
}

/**
 * `gpualert remediate`: alerts in, actions out (issue 29). A consumer group of its own over the
 * alerts, the actions topic (approvals from `gpualert action approve`), GPU samples (a held
 * host's healthy samples) and provider events (a reboot that completed). What the core decides is
 * published on `gpualert.actions`, with alerts for people (an approval to give, a breaker that
 * tripped) on `gpualert.alerts`; a batch's commands run before its offsets commit, so an alert
 * whose action was never tried is read again after a crash (and the executor's check of the
 * node's state keeps a drain from being repeated). A decision the bus would not take (Kafka away)
 * waits in memory and goes out in order when it answers; its commands run meanwhile, so an action
 * is never left running with nobody to finish it, and the batch commits only once all is out.
 */
export async function startRemediator(options: RemediatorOptions): Promise<{ stop(): Promise<void> }> {
  const { bus, log, core, executor } = options;
  await bus.ensureTopics([TOPICS.actions, TOPICS.alerts]);
  await refreshInventory(options);

  // What the core decided that is not on the bus yet, oldest first.
  const unpublished: Envelope[] = [];
  const hold = (out: CoreOutput) => {
    for (const e of out.envelopes) logEnvelope(log, e);
    unpublished.push(...out.envelopes);
    const over = unpublished.length - MAX_UNPUBLISHED;
    if (over > 0) {
      const dropped = unpublished.splice(0, over);
      log.error({ dropped: over, first: dropped[0]?.id, last: dropped[dropped.length - 1]?.id }, 'remediation_unpublished_dropped');
    }
  };
  /** Publishes what waits, in order: true when nothing waits any more. */
  const flush = async (publish: Bus['publish']): Promise<boolean> => {
    while (unpublished.length > 0) {
      const chunk = unpublished.slice(0, PUBLISH_CHUNK);
      try {
        await publish(TOPICS.actions, chunk.map(envelopeMessage));
        const alerts = actionAlerts(chunk, REMEDIATOR_SOURCE, options.consoleUrl);
        if (alerts.length > 0) await publish(TOPICS.alerts, alerts.map(envelopeMessage));
      } catch (error) {
        log.warn({ waiting: unpublished.length, error: redactSecrets(error instanceof Error ? error.message : String(error)) }, 'remediation_publish_failed');
        return false;
      }
      unpublished.splice(0, chunk.length);
    }
    return true;
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
          const outcome = await runSafely(executor, command);
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
        hold({ envelopes, commands });
        await flush(publish); // the commands run whether or not the bus took the decisions
        if (commands.length > 0) hold(await execute(commands));
        // Not all out: the batch runs again (it decides nothing twice) and commits once all is out.
        if (!(await flush(publish))) throw new RetriableError(`${unpublished.length} remediation envelopes wait for gpualert.actions`);
      }),
  });

  let ticking = false;
  const tick = async () => {
    if (ticking) return;
    ticking = true;
    try {
      await queue.run(async () => {
        const publish = bus.publish.bind(bus);
        const out = core.tick(Date.now());
        hold(out);
        await flush(publish);
        if (out.commands.length > 0) hold(await execute(out.commands));
        await flush(publish);
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
      // A last try for what still waits; what the bus will not take now is said, not dropped quietly.
      if (!(await queue.run(() => flush(bus.publish.bind(bus)))))
        log.error({ lost: unpublished.length, first: unpublished[0]?.id }, 'remediation_unpublished_lost_at_stop');
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
      // The word counts from when it was given (the remediator may read it late): after the deadline it is the timeout's.
      const given = Date.parse(envelope.ts);
      const out = core.approve(
        envelope.data.action_id,
        envelope.data.decision,
        envelope.data.by,
        now,
        envelope.data.comment,
        Math.min(Number.isFinite(given) ? given : now, now),
      );
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

/** An executor that throws (a bug: `run` reports failures as outcomes) fails the action, retriably, rather than leaving it running. */
async function runSafely(executor: Executor, command: ActionCommand): Promise<ExecutionOutcome> {
  try {
    return await executor.run(command);
  } catch (error) {
    // Published in the action's record: one line, no secret (a client's exception can carry its request's headers), bounded.
    const why = redactSecrets(error instanceof Error ? error.message : String(error))
      .replace(/\s+/g, ' ')
      .slice(0, 500);
    return { outcome: 'failed', retriable: true, error: `${executor.name} executor threw: ${why}` };
  }
}

async function refreshInventory(options: RemediatorOptions): Promise<void> {
  try {
    const inventory = await options.executor.inventory();
    options.core.setInventory(inventory.partitions, inventory.hostPartitions);
  } catch (error) {
    options.log.warn(
      { executor: options.executor.name, error: redactSecrets(error instanceof Error ? error.message : String(error)) },
      'remediation_inventory_failed',
    );
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
