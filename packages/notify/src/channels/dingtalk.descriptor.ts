import { defineChannel } from './channel-descriptor.ts';
import { DINGTALK_TEXT_MAX_BYTES, DINGTALK_TITLE_MAX_CHARS, dingtalkChannel } from './dingtalk.ts';
import { mayText, needUrl } from './setting-fields.ts';

/** DingTalk custom robot; `dingtalk_configs` in an Alertmanager file takes these settings. */
export const dingtalkDescriptor = defineChannel({
  name: 'dingtalk',
  settings: { url: needUrl, secret: mayText },
  // 20 a minute per robot, then 10 minutes blocked. https://open.dingtalk.com/document/orgapp/custom-robot-access
  rateLimit: { perMinute: 20 },
  sizeLimits: [
    { part: 'markdown title', max: DINGTALK_TITLE_MAX_CHARS, unit: 'characters' },
    { part: 'markdown text', max: DINGTALK_TEXT_MAX_BYTES, unit: 'bytes as JSON' },
  ],
  create: (s) => dingtalkChannel({ url: s.url, ...(s.secret ? { secret: s.secret } : {}) }),
});
