import { text } from './alertmanager-integration.ts';
import { defineChannel } from './channel-descriptor.ts';
import { OPSGENIE_LIMITS, opsgenieChannel } from './opsgenie.ts';
import { needText, needUrl } from './setting-fields.ts';

/** Opsgenie's Alert API; Alertmanager's `opsgenie_configs`. */
export const opsgenieDescriptor = defineChannel({
  name: 'opsgenie',
  settings: { url: needUrl, api_key: needText },
  // None published (plan-dependent): the limit is its 429.
  sizeLimits: [
    { part: 'message', max: OPSGENIE_LIMITS.message, unit: 'characters' },
    { part: 'alias', max: OPSGENIE_LIMITS.alias, unit: 'characters' },
    { part: 'description', max: OPSGENIE_LIMITS.description, unit: 'characters' },
    { part: 'entity', max: OPSGENIE_LIMITS.entity, unit: 'characters' },
    { part: 'source', max: OPSGENIE_LIMITS.source, unit: 'characters' },
    { part: 'tags', max: OPSGENIE_LIMITS.tags, unit: 'items' },
    { part: 'tag', max: OPSGENIE_LIMITS.tag, unit: 'characters' },
    { part: 'close note', max: OPSGENIE_LIMITS.note, unit: 'characters' },
  ],
  alertmanager: {
    key: 'opsgenie_configs',
    sendResolved: true,
    fields: ['api_key', 'api_url', 'message', 'description'],
    templates: ['message', 'description'],
    fieldOf: { url: 'api_url' },
    settings: (raw, g, issue) => {
      const key = text(raw, 'api_key') ?? g.opsgenie_api_key;
      if (!key) issue('api_key', 'no api_key here and no global opsgenie_api_key');
      return { url: text(raw, 'api_url') ?? g.opsgenie_api_url ?? 'https://api.opsgenie.com/', api_key: key ?? '' };
    },
    examples: [
      {
        api_key: 'env:OPSGENIE_API_KEY',
        api_url: 'https://api.eu.opsgenie.com/',
        message: '{{ .CommonLabels.alertname }}',
        description: '{{ .CommonAnnotations.summary }}',
      },
    ],
  },
  create: (s, templates) => opsgenieChannel({ url: s.url, api_key: s.api_key }, templates),
});
