import { Writable } from 'node:stream';
import { DEADLETTER_HEADERS, MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { RoutesFile } from '@gpualert/notify';
import { encodeVersioned, TOPICS } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { expect, it } from 'vitest';
import { waitFor } from '@gpualert/test-support';
import { startNotifier } from './notifier-service.ts';
import { OUTBOX_ENTRY } from './outbox.ts';

const routes = RoutesFile.parse({
  receivers: [{ name: 'pager', channel: 'record' }],
  route: { receiver: 'pager', group_by: ['host'], group_wait: '30s', group_interval: '5m', repeat_interval: '4h' },
});

it('what the outbox holds for a receiver the routes no longer have is dead-lettered with why and leaves the outbox, one line each', async () => {
  const store = new MemoryStore();
  const entries: Record<string, string> = {};
  for (let i = 0; i < 50; i += 1) {
    const id = `n-${i}`;
    entries[id] = encodeVersioned(OUTBOX_ENTRY, {
      notification: { id, receiver: 'old-chat', group: 'g', reason: 'first', alerts: [], firing: 0 },
      queuedAt: i,
    });
  }
  await store.hashSet('notifier:outbox', entries);
  const lines: { msg?: string; error?: string }[] = [];
  const log = createLogger({
    name: 'notifier',
    level: 'info',
    destination: new Writable({
      write(c, _e, done) {
        lines.push(JSON.parse(String(c)) as { msg?: string });
        done();
      },
    }),
  });
  const bus = new MemoryBus();
  const notifier = await startNotifier({ bus, store, log, routes, env: {}, flushEveryMs: 20 });
  try {
    await waitFor(async () => Object.keys(await store.hashGetAll('notifier:outbox')).length === 0, 'the outbox to empty', 30_000);
    const dead = await bus.read(TOPICS.deadletter);
    expect(dead).toHaveLength(50);
    expect(dead[0]!.headers[DEADLETTER_HEADERS.reason]).toContain('"old-chat" is not in the routes');
    expect(lines.filter((l) => l.msg === 'notification_dead_lettered')).toHaveLength(50);
    expect(lines.filter((l) => l.msg === 'notification_drain_failed')).toEqual([]);
  } finally {
    await notifier.stop();
    await bus.close();
  }
});
