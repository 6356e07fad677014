import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './infra/run-cli.ts';

/** An Alertmanager file as a team has it: match/match_re, '...', continue (dispatch/route_test.go's tree, trimmed). */
const ALERTMANAGER_YML = `
receivers:
- name: notify-def
  webhook_configs: [{ url: 'http://127.0.0.1:9/def' }]
- name: notify-A
  webhook_configs: [{ url: 'http://127.0.0.1:9/a' }]
- name: notify-testing
  webhook_configs: [{ url: 'http://127.0.0.1:9/t' }]
- name: notify-productionA
  webhook_configs: [{ url: 'http://127.0.0.1:9/pa' }]
- name: notify-productionB
  webhook_configs: [{ url: 'http://127.0.0.1:9/pb' }]
route:
  receiver: notify-def
  routes:
  - match: { owner: team-A }
    receiver: notify-A
    routes:
    - match: { env: testing }
      receiver: notify-testing
      group_by: [...]
    - match: { env: production }
      receiver: notify-productionA
      group_wait: 1m
      continue: true
    - match_re: { env: "produ.*", job: ".*" }
      receiver: notify-productionB
      group_wait: 30s
      group_interval: 5m
      repeat_interval: 1h
      group_by: [job]
`;

function file(text: string): string {
  const path = join(mkdtempSync(join(tmpdir(), 'gpualert-am-')), 'alertmanager.yml');
  writeFileSync(path, text);
  return path;
}

describe('gpualert routes test and show (as amtool config routes)', () => {
  const routes = file(ALERTMANAGER_YML);

  it('names the receivers reached, then each match with its group labels and timings', async () => {
    const out = await runCli(['routes', 'test', '--routes', routes, 'owner=team-A', 'env=production', 'job=api']);
    expect(out.code).toBe(0);
    const lines = out.stdout.trim().split('\n');
    expect(lines[0]).toBe('notify-productionA,notify-productionB');
    expect(lines[1]).toContain('notify-productionA  route root.0.1  group_by [] {}  group_wait 1m  group_interval 5m  repeat_interval 4h');
    expect(lines[2]).toContain('notify-productionB  route root.0.2  group_by [job] {job="api"}  group_wait 30s  group_interval 5m  repeat_interval 1h');
    const all = await runCli(['routes', 'test', '--routes', routes, '{owner="team-A", env="testing", x="1"}']);
    expect(all.stdout).toContain('notify-testing  route root.0.0  group_by [...] {env="testing", owner="team-A", x="1"}');
  });

  it('exits 1 when --verify-receivers differs, 0 when it matches, 2 on a bad label', async () => {
    expect((await runCli(['routes', 'test', '--routes', routes, '--verify-receivers', 'notify-A', 'owner=team-A'])).code).toBe(0);
    const wrong = await runCli(['routes', 'test', '--routes', routes, '--verify-receivers', 'notify-def', 'owner=team-A']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('Expected receivers did not match resolved receivers');
    const bad = await runCli(['routes', 'test', '--routes', routes, 'owner=~team']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('a label is LABEL=VALUE');
  });

  it('shows the tree', async () => {
    const out = await runCli(['routes', 'show', '--routes', routes]);
    expect(out.code).toBe(0);
    expect(out.stdout).toBe(
      [
        'Routing tree:',
        '└── default-route  receiver: notify-def  group_by: []',
        '    └── {owner="team-A"}  receiver: notify-A',
        '        ├── {env="testing"}  receiver: notify-testing  group_by: [...]',
        '        ├── {env="production"}  receiver: notify-productionA  continue: true  group_wait: 1m',
        '        └── {env=~"produ.*",job=~".*"}  receiver: notify-productionB  group_by: [job]  group_wait: 30s  group_interval: 5m  repeat_interval: 1h',
        '',
      ].join('\n'),
    );
  });
});
