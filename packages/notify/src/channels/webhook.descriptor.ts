import { text, textOf } from './alertmanager-integration.ts';
import { defineChannel } from './channel-descriptor.ts';
import { mayChecked, mayCount, mayOneOf, needUrl } from './setting-fields.ts';
import { WEBHOOK_FORMATS, webhookChannel, webhookSecretProblem } from './webhook.ts';

/** A generic webhook signed the Standard Webhooks way; Alertmanager's `webhook_configs` (its payload, version 4). */
export const webhookDescriptor = defineChannel({
  name: 'webhook',
  settings: { url: needUrl, secret: mayChecked(webhookSecretProblem), format: mayOneOf(WEBHOOK_FORMATS), max_alerts: mayCount },
  sizeLimits: [],
  alertmanager: {
    key: 'webhook_configs',
    sendResolved: true,
    fields: ['url', 'secret', 'max_alerts'],
    templates: [],
    settings: (raw, _g, issue) => {
      const max = raw.max_alerts;
      if (!text(raw, 'url')) issue('url', 'a webhook needs url');
      if (max !== undefined && !(typeof max === 'number' && Number.isInteger(max) && max >= 0)) issue('max_alerts', 'expected a whole number, 0 or more');
      // Alertmanager's payload (version 4), so what reads Alertmanager's webhooks reads ours unchanged.
      return {
        url: text(raw, 'url') ?? '',
        format: 'alertmanager',
        ...textOf(raw, 'secret'),
        ...(typeof max === 'number' && max > 0 ? { max_alerts: String(max) } : {}),
      };
    },
    examples: [
      { url: 'https://hooks.example.com/alertmanager', max_alerts: 10 },
      { url: 'https://hooks.example.com/signed', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', max_alerts: 0 },
    ],
  },
  create: (s) =>
    webhookChannel({
      url: s.url,
      ...(s.secret ? { secret: s.secret } : {}),
      ...(s.format ? { format: s.format } : {}),
      ...(s.max_alerts ? { max_alerts: Number(s.max_alerts) } : {}),
    }),
});
