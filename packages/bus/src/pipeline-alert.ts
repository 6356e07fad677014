import { newEnvelope, stableId, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { envelopeMessage, type DeadLetterHook, type PoisonMessage } from './bus.ts';

/** The host of alerts about gpualert itself: they group together, apart from any machine's. */
export const PIPELINE_HOST = 'gpualert';
export const PIPELINE_SOURCE = 'bus/0.1.0';
export const PIPELINE_RULE = 'pipeline-deadletter';

/** Stable per (group, topic): a handler that keeps failing on one input fires one alert, not one per message. */
export function pipelineFingerprint(group: string, topic: string): string {
  return stableId('pipeline', group, topic).slice(0, 18).replace(/-/g, '');
}

/** The `pipeline` alert for one poison message: severity error, routed like any other alert. */
export function pipelineAlert(poison: PoisonMessage, now: number): EnvelopeOf<'alert'> {
  const { group, message, envelope, reason } = poison;
  const at = new Date(now).toISOString();
  return newEnvelope({
    type: 'alert',
    // Per message, deterministic: a retried dead-letter step republishes the same alert.
    id: stableId('pipeline-alert', group, message.topic, message.partition, message.offset),
    host: PIPELINE_HOST,
    source: PIPELINE_SOURCE,
    ts: at,
    labels: { group, topic: message.topic },
    data: {
      fingerprint: pipelineFingerprint(group, message.topic),
      status: 'firing',
      severity: 'error',
      category: 'pipeline',
      rule: PIPELINE_RULE,
      summary: `${group} could not process a ${envelope.type} message from ${message.topic}; it was dead-lettered`,
      description: `partition ${message.partition}, offset ${message.offset}: ${reason}`,
      action: `Read it on ${TOPICS.deadletter} (headers name the group, topic, offset and reason), fix the cause, and publish it again`,
      starts_at: at,
      evidence: [envelope.id],
    },
  });
}

/**
 * The default dead-letter hook: one `pipeline` alert per poison message. A poison message that
 * is itself a pipeline alert raises none, or a consumer of alerts failing on them would feed itself.
 */
export const raisePipelineAlert: DeadLetterHook = async (poison, publish) => {
  const now = Date.now();
  const alerts = poison
    .filter(({ envelope }) => !(envelope.type === 'alert' && envelope.data.category === 'pipeline'))
    .map((p) => envelopeMessage(pipelineAlert(p, now)));
  if (alerts.length > 0) await publish(TOPICS.alerts, alerts);
};
