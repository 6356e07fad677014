import { defineChannel } from './channel-descriptor.ts';
import { needUrl } from './setting-fields.ts';
import { WECOM_CONTENT_MAX_BYTES, wecomChannel } from './wecom.ts';

/** WeCom group robot; `wecom_configs` in an Alertmanager file takes these settings. */
export const wecomDescriptor = defineChannel({
  name: 'wecom',
  settings: { url: needUrl },
  // 20 a minute per robot. https://developer.work.weixin.qq.com/document/path/91770
  rateLimit: { perMinute: 20 },
  sizeLimits: [{ part: 'markdown content', max: WECOM_CONTENT_MAX_BYTES, unit: 'bytes' }],
  create: (s) => wecomChannel({ url: s.url }),
});
