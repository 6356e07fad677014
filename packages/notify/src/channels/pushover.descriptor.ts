import { text, textOf, untemplated } from './alertmanager-integration.ts';
import { defineChannel } from './channel-descriptor.ts';
import { PUSHOVER_LIMITS, pushoverChannel } from './pushover.ts';
import { mayOneOf, mayText, needText, needUrl } from './setting-fields.ts';

/** Pushover's message API. Source: https://pushover.net/api */
const PUSHOVER_URL = 'https://api.pushover.net/1/messages.json';

/** Pushover, one message per notification; Alertmanager's `pushover_configs`. */
export const pushoverDescriptor = defineChannel({
  name: 'pushover',
  settings: {
    url: needUrl,
    token: needText,
    user_key: needText,
    priority: mayOneOf(['-2', '-1', '0', '1', '2'], 'a priority from -2 to 2'),
    sound: mayText,
    device: mayText,
  },
  sizeLimits: [
    { part: 'message', max: PUSHOVER_LIMITS.message, unit: 'characters' },
    { part: 'title', max: PUSHOVER_LIMITS.title, unit: 'characters' },
  ],
  alertmanager: {
    key: 'pushover_configs',
    sendResolved: true,
    fields: ['user_key', 'token', 'priority', 'sound', 'device'],
    templates: [],
    settings: (raw, _g, issue) => {
      if (!text(raw, 'user_key')) issue('user_key', 'a pushover integration needs user_key');
      if (!text(raw, 'token')) issue('token', 'a pushover integration needs token');
      untemplated(raw, ['user_key', 'token'], issue);
      // Alertmanager's priority is a template (2 while firing, 0 resolved, by default); here a number from -2 to 2, or that default.
      const priority = raw.priority === undefined ? undefined : String(raw.priority);
      if (priority !== undefined && priority.includes('{{'))
        issue('priority', 'expected a priority from -2 to 2 (a template is not supported in this field by gpualert; without one: 2 while firing, 0 resolved)');
      return {
        url: PUSHOVER_URL,
        token: text(raw, 'token') ?? '',
        user_key: text(raw, 'user_key') ?? '',
        ...(priority !== undefined && !priority.includes('{{') ? { priority } : {}),
        ...textOf(raw, 'sound'),
        ...textOf(raw, 'device'),
      };
    },
    examples: [{ user_key: 'env:PUSHOVER_USER_KEY', token: 'env:PUSHOVER_TOKEN', priority: 1, sound: 'siren', device: 'oncall-phone' }],
  },
  create: (s) =>
    pushoverChannel({
      url: s.url,
      token: s.token,
      user_key: s.user_key,
      ...(s.priority ? { priority: s.priority } : {}),
      ...(s.sound ? { sound: s.sound } : {}),
      ...(s.device ? { device: s.device } : {}),
    }),
});
