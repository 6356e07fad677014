import { defineChannel } from './channel-descriptor.ts';
import { FEISHU_BODY_MAX_BYTES, FEISHU_TEXT_MAX_BYTES, feishuChannel } from './feishu.ts';
import { mayText, needUrl } from './setting-fields.ts';

/** Feishu/Lark custom bot; `feishu_configs` in an Alertmanager file takes these settings. */
export const feishuDescriptor = defineChannel({
  name: 'feishu',
  settings: { url: needUrl, secret: mayText },
  // 100 a minute and 5 a second per custom bot. https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
  rateLimit: { perSecond: 5, perMinute: 100 },
  sizeLimits: [
    { part: 'request body', max: FEISHU_BODY_MAX_BYTES, unit: 'bytes' },
    { part: 'text', max: FEISHU_TEXT_MAX_BYTES, unit: 'bytes as JSON' },
  ],
  create: (s) => feishuChannel({ url: s.url, ...(s.secret ? { secret: s.secret } : {}) }),
});
