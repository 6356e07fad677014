import { text, untemplated } from './alertmanager-integration.ts';
import { defineChannel } from './channel-descriptor.ts';
import { mayOneOf, needText, needUrl } from './setting-fields.ts';
import { VICTOROPS_LIMITS, victoropsChannel } from './victorops.ts';

/** Alertmanager's default victorops api_url; the api key and routing key follow it as path segments. */
const VICTOROPS_API_URL = 'https://alert.victorops.com/integrations/generic/20131114/alert/';

/** Splunk On-Call (VictorOps) REST endpoint; Alertmanager's `victorops_configs`. */
export const victoropsDescriptor = defineChannel({
  name: 'victorops',
  // url: the REST endpoint up to its api key (…/integrations/generic/20131114/alert/); message_type: one of CRITICAL, WARNING, INFO.
  settings: {
    url: needUrl,
    api_key: needText,
    routing_key: needText,
    message_type: mayOneOf(['CRITICAL', 'WARNING', 'INFO'], 'CRITICAL, WARNING or INFO (a resolve is sent as RECOVERY)'),
  },
  sizeLimits: [
    { part: 'entity_id', max: VICTOROPS_LIMITS.entity_id, unit: 'characters' },
    { part: 'entity_display_name', max: VICTOROPS_LIMITS.entity_display_name, unit: 'characters' },
    { part: 'state_message', max: VICTOROPS_LIMITS.state_message, unit: 'characters' },
    { part: 'monitoring_tool', max: VICTOROPS_LIMITS.monitoring_tool, unit: 'characters' },
  ],
  alertmanager: {
    key: 'victorops_configs',
    sendResolved: true,
    fields: ['api_key', 'api_url', 'routing_key', 'message_type', 'entity_display_name', 'state_message', 'monitoring_tool'],
    templates: ['entity_display_name', 'state_message', 'monitoring_tool'],
    fieldOf: { url: 'api_url' },
    settings: (raw, g, issue) => {
      const key = text(raw, 'api_key') ?? g.victorops_api_key;
      if (!key) issue('api_key', 'no api_key here and no global victorops_api_key');
      if (!text(raw, 'routing_key')) issue('routing_key', 'a victorops integration needs routing_key');
      untemplated(raw, ['routing_key', 'message_type'], issue);
      if (raw.message_type !== undefined && !text(raw, 'message_type')) issue('message_type', 'expected CRITICAL, WARNING or INFO');
      // Alertmanager's default message_type: CRITICAL for every firing group, whatever its severity.
      const type = text(raw, 'message_type') ?? 'CRITICAL';
      return {
        url: text(raw, 'api_url') ?? g.victorops_api_url ?? VICTOROPS_API_URL,
        api_key: key ?? '',
        routing_key: text(raw, 'routing_key') ?? '',
        message_type: type,
      };
    },
    examples: [
      {
        api_key: 'env:VICTOROPS_API_KEY',
        api_url: 'https://alert.victorops.com/integrations/generic/20131114/alert/',
        routing_key: 'gpu-team',
        message_type: 'WARNING',
        entity_display_name: '{{ .CommonLabels.alertname }}',
        state_message: '{{ .CommonAnnotations.summary }}',
        monitoring_tool: 'gpualert',
      },
    ],
  },
  create: (s, templates) =>
    victoropsChannel({ url: s.url, api_key: s.api_key, routing_key: s.routing_key, ...(s.message_type ? { message_type: s.message_type } : {}) }, templates),
});
