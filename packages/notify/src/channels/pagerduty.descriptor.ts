import { text, untemplated } from './alertmanager-integration.ts';
import { defineChannel } from './channel-descriptor.ts';
import {
  PAGERDUTY_DEDUP_KEY_MAX_CHARS,
  PAGERDUTY_EVENT_MAX_BYTES,
  PAGERDUTY_FIELD_MAX_CHARS,
  PAGERDUTY_SUMMARY_MAX_CHARS,
  pagerdutyChannel,
} from './pagerduty.ts';
import { mayText, needUrl } from './setting-fields.ts';

/** PagerDuty's Events API v1 endpoint. Source: https://developer.pagerduty.com/docs/events-api-v1-overview (POST …/generic/2010-04-15/create_event.json) */
const PAGERDUTY_V1_URL = 'https://events.pagerduty.com/generic/2010-04-15/create_event.json';

/** PagerDuty, one event per alert; Alertmanager's `pagerduty_configs`. */
export const pagerdutyDescriptor = defineChannel({
  name: 'pagerduty',
  // routing_key: Events API v2; service_key: Events API v1 (Alertmanager's older integrations). One of them.
  settings: { url: needUrl, routing_key: mayText, service_key: mayText },
  checkSettings: (s) =>
    !s.routing_key === !s.service_key
      ? { key: 'routing_key', message: 'pagerduty needs one of settings.routing_key (Events API v2) and settings.service_key (Events API v1)' }
      : undefined,
  // About 120 events a minute per routing key (https://developer.pagerduty.com/docs/events-api-v2-overview#api-limits),
  // but a page is never held back here: over the limit PagerDuty answers 429, which is retried with backoff.
  rateLimit: undefined,
  sizeLimits: [
    { part: 'payload.summary', max: PAGERDUTY_SUMMARY_MAX_CHARS, unit: 'characters' },
    { part: 'dedup_key', max: PAGERDUTY_DEDUP_KEY_MAX_CHARS, unit: 'characters' },
    { part: 'source, component, group, class', max: PAGERDUTY_FIELD_MAX_CHARS, unit: 'characters' },
    { part: 'event', max: PAGERDUTY_EVENT_MAX_BYTES, unit: 'bytes as JSON' },
  ],
  alertmanager: {
    key: 'pagerduty_configs',
    sendResolved: true,
    fields: ['routing_key', 'service_key', 'url', 'description'],
    templates: ['description'],
    settings: (raw, g, issue) => {
      const routing = text(raw, 'routing_key');
      const service = text(raw, 'service_key');
      if (!routing && !service) issue('routing_key', 'a pagerduty integration needs routing_key (Events API v2) or service_key (Events API v1)');
      if (routing && service) issue('service_key', 'one of routing_key (Events API v2) and service_key (Events API v1), not both');
      untemplated(raw, ['routing_key', 'service_key'], issue);
      // Events API v1 at its own endpoint, as Alertmanager sends it: Alertmanager ignores url there, so a url given with it is refused rather than ignored.
      if (service && raw.url !== undefined)
        issue('url', 'Alertmanager sends Events API v1 (service_key) to its own endpoint and ignores url; remove url, or use routing_key (Events API v2)');
      if (service && !routing) return { url: PAGERDUTY_V1_URL, service_key: service };
      return { url: text(raw, 'url') ?? g.pagerduty_url ?? 'https://events.pagerduty.com/v2/enqueue', routing_key: routing ?? '' };
    },
    examples: [
      { routing_key: 'R0UT1NGKEY00000000000000000000AB', url: 'https://events.pagerduty.com/v2/enqueue', description: '{{ .CommonAnnotations.summary }}' },
      { service_key: 'SERV1CEKEY00000000000000000000AB', description: '{{ template "pagerduty.default.description" . }}' },
    ],
  },
  create: (s, templates) =>
    pagerdutyChannel(s.service_key ? { url: s.url, service_key: s.service_key } : { url: s.url, routing_key: s.routing_key ?? '' }, templates),
});
