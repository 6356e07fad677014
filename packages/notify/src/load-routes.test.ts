import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatRuleError } from '@gpualert/rules';
import { describe, expect, it } from 'vitest';
import { createChannel, ReceiverConfigError } from './channels/registry.ts';
import { loadRoutes } from './load-routes.ts';

function file(lines: string[]): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gpualert-routes-')), 'routes.yaml');
  writeFileSync(path, lines.join('\n'));
  return path;
}

const errors = (path: string) => {
  const loaded = loadRoutes(path);
  return loaded.ok ? [] : loaded.errors.map(formatRuleError);
};

describe('loading a routes file', () => {
  it('rejects a receiver URL without a scheme at its line, without printing its token', () => {
    const path = file([
      'receivers:',
      '  - name: ding',
      '    channel: dingtalk',
      '    settings:',
      '      url: "oapi.dingtalk.com/robot/send?access_token=SECRETTOKEN123"',
      'route:',
      '  receiver: ding',
    ]);
    const found = errors(path);
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(new RegExp(`^${path}:5: receivers\\.0\\.settings\\.url: expected a URL with scheme http:// or https://`));
    expect(found[0]).not.toContain('SECRETTOKEN123');
  });

  it('rejects a missing required setting, an unknown one and credentials in an HTTP URL', () => {
    const path = file([
      'receivers:',
      '  - name: pd',
      '    channel: pagerduty',
      '    settings: { url: "https://events.pagerduty.com/v2/enqueue", routingkey: "x" }',
      '  - name: jira',
      '    channel: jira',
      '    settings: { url: "https://bob:hunter2@jira.example.com", user: bob, token: t, project: OPS }',
      'route:',
      '  receiver: pd',
    ]);
    const found = errors(path).join('\n');
    expect(found).toContain(':4: receivers.0.settings.routingkey: pagerduty takes no setting "routingkey"');
    expect(found).toContain(
      ':4: receivers.0.settings.routing_key: pagerduty needs one of settings.routing_key (Events API v2) and settings.service_key (Events API v1)',
    );
    expect(found).toContain(':7: receivers.1.settings.url: the URL must not carry user:password');
    expect(found).not.toContain('hunter2');
  });

  it('rejects a regex RE2 does not take at its line, in routes and inhibit rules', () => {
    const path = file([
      'receivers: [{ name: r, channel: record }]',
      'route:',
      '  receiver: r',
      '  routes:',
      '    - matchers: [\'host=~"(a)\\1"\']',
      'inhibit_rules:',
      '  - source: [\'category=~"(?=x)"\']',
      '    target: [\'host="h"\']',
    ]);
    const found = errors(path);
    expect(found).toHaveLength(2);
    expect(found[0]).toMatch(/:5: route\.routes\.0\.matchers\.0: .*not an RE2 regular expression/);
    expect(found[1]).toMatch(/:7: inhibit_rules\.0\.source\.0: .*not an RE2 regular expression/);
  });

  it('checks a setting read from the environment at start, naming the variable and not the value', () => {
    const loaded = loadRoutes(file(['receivers: [{ name: chat, channel: slack, settings: { url: "env:SLACK_URL" } }]', 'route: { receiver: chat }']));
    expect(loaded.ok).toBe(true);
    const receiver = loaded.ok ? loaded.value.receivers[0]! : undefined!;
    const attempt = () => createChannel(receiver, { SLACK_URL: 'hooks.slack.com/services/T0/B0/SECRETPART' });
    expect(attempt).toThrow(ReceiverConfigError);
    expect(attempt).toThrow(/^receiver "chat" \(slack\): settings\.url \(from SLACK_URL\): expected a URL with scheme/);
    expect(attempt).not.toThrow(/SECRETPART/);
    expect(createChannel(receiver, { SLACK_URL: 'https://hooks.slack.com/services/T0/B0/x' }).name).toBe('slack');
  });
});
