import { defineChannel } from './channel-descriptor.ts';
import { SERVICENOW_SHORT_DESCRIPTION_MAX_CHARS, SERVICENOW_TEXT_MAX_CHARS, servicenowChannel } from './servicenow.ts';
import { mayText, needText, needUrl } from './setting-fields.ts';

/** ServiceNow incidents (Table API); `servicenow_configs` in an Alertmanager file takes these settings. */
export const servicenowDescriptor = defineChannel({
  name: 'servicenow',
  settings: { url: needUrl, user: needText, password: needText, close_code: mayText },
  // None published (per instance): the limit is its 429.
  sizeLimits: [
    { part: 'short_description', max: SERVICENOW_SHORT_DESCRIPTION_MAX_CHARS, unit: 'characters' },
    { part: 'description and work notes', max: SERVICENOW_TEXT_MAX_CHARS, unit: 'characters' },
  ],
  create: (s) => servicenowChannel({ url: s.url, user: s.user, password: s.password, ...(s.close_code ? { close_code: s.close_code } : {}) }),
});
