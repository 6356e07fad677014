import { text, textOf } from './alertmanager-integration.ts';
import { defineChannel } from './channel-descriptor.ts';
import { mayText, mayUrl, needUrl } from './setting-fields.ts';
import { SLACK_ALT_TEXT_MAX_CHARS, SLACK_IMAGE_URL_MAX_CHARS, SLACK_SECTION_MAX_CHARS, slackChannel } from './slack.ts';

/** Slack incoming webhook; Alertmanager's `slack_configs`. */
export const slackDescriptor = defineChannel({
  name: 'slack',
  settings: { url: needUrl, channel: mayText, icon_url: mayUrl, image_url: mayUrl },
  // "1 message per second per channel", short bursts tolerated. https://api.slack.com/docs/rate-limits#incoming-webhooks
  rateLimit: { perSecond: 1, perMinute: 60 },
  sizeLimits: [
    { part: 'section text', max: SLACK_SECTION_MAX_CHARS, unit: 'characters' },
    { part: 'image_url', max: SLACK_IMAGE_URL_MAX_CHARS, unit: 'characters' },
    { part: 'image alt_text', max: SLACK_ALT_TEXT_MAX_CHARS, unit: 'characters' },
  ],
  alertmanager: {
    key: 'slack_configs',
    sendResolved: false,
    fields: ['api_url', 'channel', 'title', 'text', 'username', 'icon_emoji', 'icon_url', 'image_url'],
    templates: ['title', 'text', 'username', 'icon_emoji'],
    fieldOf: { url: 'api_url' },
    settings: (raw, g, issue) => {
      const url = text(raw, 'api_url') ?? g.slack_api_url;
      if (!url) issue('api_url', 'no api_url here and no global slack_api_url');
      if (raw.channel !== undefined && !text(raw, 'channel')) issue('channel', 'expected a channel name, such as #gpu-alerts');
      // Sent as they are (the message's icon, an image block): a URL, not a template, here.
      const look: Record<string, string> = {};
      for (const field of ['icon_url', 'image_url'] as const) {
        const value = text(raw, field);
        if (value !== undefined && !value.includes('{{')) look[field] = value;
        else if (raw[field] !== undefined) issue(field, 'expected a URL (a template is not supported in this field by gpualert)');
      }
      return { url: url ?? '', ...textOf(raw, 'channel'), ...look };
    },
    examples: [
      {
        api_url: 'https://hooks.slack.com/services/T000/B000/XXXX',
        channel: '#gpu-alerts',
        title: '{{ template "slack.default.title" . }}',
        text: '{{ range .Alerts }}{{ .Annotations.summary }}\n{{ end }}',
        username: 'gpualert',
        icon_emoji: ':rotating_light:',
        icon_url: 'https://example.com/icon.png',
        image_url: 'https://example.com/graph.png',
      },
    ],
  },
  create: (s, templates) =>
    slackChannel(
      {
        url: s.url,
        ...(s.channel ? { channel: s.channel } : {}),
        ...(s.icon_url ? { icon_url: s.icon_url } : {}),
        ...(s.image_url ? { image_url: s.image_url } : {}),
      },
      templates,
    ),
});
