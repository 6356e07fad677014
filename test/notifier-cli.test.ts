import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { envelopeMessage } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { newEnvelope, TOPICS } from '@gpualert/schema';
import { RedisStore } from '@gpualert/state/redis';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { cleanEnv, runCli, startCli } from './infra/run-cli.ts';
import { VendorReceivers } from './infra/vendor-receivers.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function routesFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'gpualert-routes-')), 'routes.yaml');
  writeFileSync(
    file,
    [
      'receivers:',
      '  - name: pager',
      '    channel: pagerduty',
      '    settings: { url: "env:PD_URL", routing_key: "env:PD_KEY" }',
      'route:',
      '  receiver: pager',
      '  page: true',
    ].join('\n'),
  );
  return file;
}

describe('gpualert notifier and silences from the command line', () => {
  it('killed with SIGKILL while the pager is down, restarted: the page arrives, once per fault', async () => {
    const vendors = new VendorReceivers({ feishu: '', dingtalk: '', webhook: 'whsec_', routingKey: 'K'.repeat(32), opsgenie: '' });
    await vendors.start();
    cleanups.push(() => vendors.stop());
    const prefix = `${uniqueName('ncli')}.`;
    const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 3 });
    await bus.ensureTopics(Object.values(TOPICS));
    cleanups.push(() => bus.close());
    const keyPrefix = `${uniqueName('ncli')}:`;
    const store = new RedisStore({ url: inject('redisUrl'), prefix: keyPrefix });
    cleanups.push(() => store.close());
    const env = cleanEnv({
      KAFKA_BROKERS: inject('kafkaBrokers'),
      REDIS_URL: inject('redisUrl'),
      GPUALERT_TOPIC_PREFIX: prefix,
      GPUALERT_KEY_PREFIX: keyPrefix,
      GPUALERT_ROUTES: routesFile(),
      PD_URL: `${vendors.base}/pagerduty/v2/enqueue`,
      PD_KEY: 'K'.repeat(32),
      GPUALERT_NOTIFIER_PORT: '0',
      GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
    });
    vendors.fail('pagerduty', '500');
    let notifier = startCli(['notifier'], env);
    await waitFor(() => notifier.output().includes('notifier_listening'), 'the notifier', 30_000);
    const alertFor = (fingerprint: string) =>
      envelopeMessage(
        newEnvelope({
          type: 'alert',
          host: 'gpu-node-009',
          source: 'test',
          data: {
            fingerprint,
            status: 'firing',
            severity: 'critical',
            category: 'fallen_off_bus',
            rule: 'gpu-absent',
            summary: `lost (${fingerprint})`,
            starts_at: new Date().toISOString(),
            evidence: [],
          },
        }),
      );
    await bus.publish(TOPICS.alerts, ['fp-one', 'fp-two'].map(alertFor));
    // Killed while it is retrying against the 500s: the page is in its outbox, not yet sent. (Its own
    // startup lines used to satisfy the old wait at once, and a fixed sleep could end before it even
    // consumed the alerts on a loaded machine, so that the kill tested nothing.)
    const refused = () => vendors.refusals.filter((r) => r.vendor === 'pagerduty').length;
    await waitFor(() => refused() >= 2, 'a page attempt refused and retried', 30_000);
    notifier.kill('SIGKILL');
    await once(notifier, 'exit');
    vendors.heal('pagerduty');
    notifier = startCli(['notifier'], env);
    cleanups.push(async () => {
      notifier.kill('SIGTERM');
      await once(notifier, 'exit');
    });
    await waitFor(() => new Set(vendors.of('pagerduty').map((r) => r.body.dedup_key)).size === 2, 'both pages after the restart', 60_000);
    // A later fault of the same host (same partition, same pager queue) is paged after anything judged
    // again from Kafka; then nothing is left in the outbox that could still go out. Only then is
    // "once" checked (a fixed sleep could end before a duplicate arrived).
    await bus.publish(TOPICS.alerts, [alertFor('fp-three')]);
    await waitFor(() => vendors.of('pagerduty').some((r) => r.body.dedup_key === 'fp-three'), "the later fault's page", 60_000);
    await waitFor(async () => Object.keys(await store.hashGetAll('notifier:outbox')).length === 0, 'an empty outbox', 30_000);
    const triggers = vendors.of('pagerduty').filter((r) => r.body.event_action === 'trigger');
    expect(new Set(triggers.map((r) => r.body.dedup_key))).toEqual(new Set(['fp-one', 'fp-two', 'fp-three']));
    expect(triggers.length).toBe(3);
  }, 120_000);

  it('adds, lists and expires a silence, and refuses one without an end or a reason', async () => {
    const env = cleanEnv({ REDIS_URL: inject('redisUrl'), GPUALERT_KEY_PREFIX: `${uniqueName('silence')}:` });
    const added = await runCli(
      ['silence', 'add', '--match', 'host=h1', '--match', 'severity=~warning|error', '--for', '2h', '--comment', 'firmware update', '--author', 'ana'],
      { env },
    );
    expect(added.code).toBe(0);
    const id = added.stdout.split(' ')[0]!;
    expect(added.stdout).toMatch(/host=h1 severity=~warning\|error {2}by ana: firmware update/);
    const listed = await runCli(['silence', 'list'], { env });
    expect(listed.stdout).toMatch(new RegExp(`^${id} {2}active`, 'm'));
    expect((await runCli(['silence', 'expire', id], { env })).code).toBe(0);
    expect((await runCli(['silence', 'list'], { env })).stdout).toMatch(new RegExp(`^${id} {2}expired`, 'm'));
    const noReason = await runCli(['silence', 'add', '--match', 'host=h1', '--for', '1h', '--comment', ' '], { env });
    expect([noReason.code, noReason.stderr.trim()]).toEqual([2, 'error[GA-CLI-USAGE]: gpualert silence add: a silence needs a comment saying why (--comment)']);
    const badMatcher = await runCli(['silence', 'add', '--match', 'host', '--for', '1h', '--comment', 'x'], { env });
    expect(badMatcher.stderr).toMatch(/bad matcher format: host/); // Alertmanager's wording (pkg/labels)
    const noEnd = await runCli(['silence', 'add', '--match', 'host=h1', '--comment', 'x'], { env });
    expect(noEnd.code).toBe(2);
    expect(noEnd.stderr).toMatch(/required option '--for <duration>'/);
  });

  it('says how many firing alerts a silence matches, and makes one that reaches across hosts only with --force', async () => {
    const keyPrefix = `${uniqueName('silence')}:`;
    const env = cleanEnv({ REDIS_URL: inject('redisUrl'), GPUALERT_KEY_PREFIX: keyPrefix });
    const store = new RedisStore({ url: inject('redisUrl'), prefix: keyPrefix });
    await store.hashSet(
      'notifier:firing',
      Object.fromEntries(['h1', 'h2', 'h3'].map((h) => [`fp-${h}`, JSON.stringify({ version: 1, labels: { host: h, alertname: 'GpuHot' } })])),
    );
    await store.close();
    const one = await runCli(['silence', 'add', '--match', 'host=h1', '--for', '1h', '--comment', 'swap', '--author', 'ana'], { env });
    expect(one.code, one.stderr).toBe(0);
    expect(one.stdout).toMatch(/\(matches 1 of 3 firing alerts on 1 host\)\n$/);
    const broad = await runCli(['silence', 'add', '--match', 'host=~.+', '--for', '1h', '--comment', 'storm', '--author', 'ana'], { env });
    expect([broad.code, broad.stderr.trim().split('\n').length]).toEqual([2, 1]);
    expect(broad.stderr).toMatch(/this silence matches 3 of 3 firing alerts on 3 hosts: .* \(--force/);
    const forced = await runCli(['silence', 'add', '--match', 'host=~.+', '--for', '1h', '--comment', 'storm', '--author', 'ana', '--force'], { env });
    expect(forced.code, forced.stderr).toBe(0);
    expect((await runCli(['silence', 'list'], { env })).stdout.trim().split('\n')).toHaveLength(2);
  });

  it('refuses a silence that is endless, matches everything or runs a non-RE2 regex: exit 2, one line, nothing stored', async () => {
    const env = cleanEnv({ REDIS_URL: inject('redisUrl'), GPUALERT_KEY_PREFIX: `${uniqueName('silence')}:` });
    const attempts: [string[], RegExp][] = [
      [['--match', 'host=h1', '--for', '9999999999999h'], /at most 90 days/],
      [['--match', 'host=h1', '--for', '91d'], /at most 90 days/], // days are a unit the limit speaks in
      [['--match', 'host=~.*', '--for', '1h'], /does not match the empty string/],
      [['--match', 'severity!=nope', '--for', '1h'], /does not match the empty string/],
      [['--match', 'host=~(a)\\1', '--for', '1h'], /not an RE2 regular expression/],
    ];
    for (const [args, message] of attempts) {
      const answer = await runCli(['silence', 'add', ...args, '--comment', 'x', '--author', 'ana'], { env });
      expect(answer.code, args.join(' ')).toBe(2);
      expect(answer.stderr.trim().split('\n')).toHaveLength(1);
      expect(answer.stderr).toMatch(message);
    }
    expect((await runCli(['silence', 'list'], { env })).stdout).toBe('');
  });

  it('refuses to start the notifier with a token under 16 characters, naming the variable, as `up` does', async () => {
    const answer = await runCli(['notifier'], { env: cleanEnv({ GPUALERT_ROUTES: routesFile(), GPUALERT_NOTIFIER_TOKEN: 'x' }) });
    expect([answer.code, answer.stderr.trim()]).toEqual([
      2,
      'error[GA-CONFIG-INVALID]: invalid config: GPUALERT_NOTIFIER_TOKEN (environment): must be at least 16 characters (got a value of 1 characters, not shown)',
    ]);
    const up = await runCli(['up'], { env: cleanEnv({ GPUALERT_NOTIFIER_TOKEN: 'x' }) });
    expect([up.code, up.stderr.trim()]).toEqual([
      2,
      'error[GA-CONFIG-INVALID]: invalid config: GPUALERT_NOTIFIER_TOKEN (environment): must be at least 16 characters (got a value of 1 characters, not shown)',
    ]);
  });
});
