import { describe, expect, it } from 'vitest';
import { redactSecrets, redactUrl } from './redact.ts';

describe('redactSecrets', () => {
  const cases: [string, string, string][] = [
    ['a Slack URL without scheme', 'TypeError: Failed to parse URL from hooks.slack.com/services/T000/B000/XXXXSECRET', 'XXXXSECRET'],
    ['userinfo', 'Request cannot be constructed from a URL that includes credentials: https://bob:hunter2@jira.example.com/rest', 'hunter2'],
    ['a DingTalk access token', 'Invalid URL: oapi.dingtalk.com/robot/send?access_token=DINGSECRET&sign=abc', 'DINGSECRET'],
    ['a Feishu hook', 'https://open.feishu.cn/open-apis/bot/v2/hook/FEISHU-UUID-SECRET', 'FEISHU-UUID-SECRET'],
    ['a WeCom key', 'https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=WECOMSECRET', 'WECOMSECRET'],
    ['a PagerDuty routing key', '{"routing_key":"R0UTINGKEY0000000000000000000000"}', 'R0UTINGKEY0000000000000000000000'],
    ['a Redis password', 'got "redis://default:REDISPW@redis:6379"', 'REDISPW'],
    ['a broker password without scheme', 'got "user:KAFKAPW@broker1:9092,broker2:9092"', 'KAFKAPW'],
    ['a bearer token', 'authorization: Bearer abc.DEF-token', 'abc.DEF-token'],
    ['a webhook secret', 'secret whsec_QUJDREVGR0g=', 'QUJDREVGR0g='],
    ['a VictorOps api key in its path', 'expected a URL (got "alert.victorops.com/integrations/generic/20131114/alert/VOSECRETKEY/gpu-team")', 'VOSECRETKEY'],
  ];
  it.each(cases)('hides %s', (_, text, secret) => {
    const out = redactSecrets(text);
    expect(out).not.toContain(secret);
    expect(out).toContain('[redacted]');
    expect(redactSecrets(out)).toBe(out);
  });

  it('leaves what is not a secret as it was', () => {
    for (const text of [
      'network: fetch failed',
      'gpu-node-002 GPU 3 at 12:30, broker host:9092',
      'oncall@example.com',
      'http://127.0.0.1:3000/slack/hooks',
      'HTTP 400: invalid_payload',
    ]) {
      expect(redactSecrets(text)).toBe(text);
    }
    expect(redactUrl('https://hooks.slack.com/services/T0/B0/SECRET')).toBe('https://hooks.slack.com/services/[redacted]');
  });
});
