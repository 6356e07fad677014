import { readFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { RoutesFile } from '@gpualert/notify';
import { newEnvelope, parseEnvelope, TOPICS, type NotificationData } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startNotifier } from './notifier-service.ts';
import { loadSilences, SILENCES_KEY } from './silences.ts';

const fixture = (path: string) => readFileSync(new URL(path, import.meta.url), 'utf8');
const STATE_V0 = fixture('../../../packages/notify/src/fixtures/state-v0/notifier-state.json');
const OUTBOX_V0 = JSON.parse(fixture('./fixtures/state-v0/notifier-outbox.json')) as Record<string, string>;
const SILENCES_V0 = JSON.parse(fixture('./fixtures/state-v0/notifier-silences.json')) as Record<string, string>;

/** The default routes' receivers, each recording only: what the notifier sends shows on gpualert.notifications. */
const routes = RoutesFile.parse({
  receivers: [
    { name: 'pager', channel: 'record' },
    { name: 'chat', channel: 'record' },
    { name: 'record', channel: 'record' },
  ],
  route: {
    receiver: 'record',
    group_by: ['host', 'category'],
    group_wait: '30s',
    group_interval: '5m',
    repeat_interval: '4h',
    routes: [
      { receiver: 'pager', matchers: ['severity="critical"', 'expected="false"'], page: true, continue: true },
      { receiver: 'chat', matchers: ['severity=~"warning|error|critical"'] },
    ],
  },
});

/**
 * The version-0 fixtures were saved at 2026-11-30T10:00Z, with a silence that ends at 12:00 and a
 * group due at 10:05:40. The notifier reads them at 11:00 on the wall clock, whatever day the test
 * runs: only Date is moved (it keeps advancing), timers are real.
 */
const SAVED_AT = Date.parse('2026-11-30T10:00:00.000Z');
const READ_AT = SAVED_AT + 60 * 60_000;
beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: READ_AT, shouldAdvanceTime: true });
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  vi.useRealTimers();
});

async function start(store: MemoryStore) {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    name: 'notifier',
    level: 'info',
    destination: new Writable({
      write(c, _e, done) {
        lines.push(JSON.parse(String(c)) as Record<string, unknown>);
        done();
      },
    }),
  });
  const bus = new MemoryBus();
  const notifier = await startNotifier({ bus, store, log, routes, env: {}, flushEveryMs: 20 });
  cleanups.push(async () => {
    await notifier.stop();
    await bus.close();
  });
  const records = async () =>
    (await bus.read(TOPICS.notifications)).flatMap((m) => {
      const r = parseEnvelope(m.value);
      return r.ok && r.value.type === 'notification' ? [r.value.data] : [];
    });
  const until = async (done: (r: NotificationData[]) => boolean) => {
    for (const deadline = Date.now() + 10_000; !done(await records()) && Date.now() < deadline;) await new Promise((r) => setTimeout(r, 20));
    return records();
  };
  return { notifier, bus, lines, until, warnings: () => lines.filter((l) => l.msg === 'state_rebuilt') };
}

async function seeded(state: string, outbox: Record<string, string>, silences: Record<string, string>): Promise<MemoryStore> {
  const store = new MemoryStore();
  await store.set('notifier:state', state);
  if (Object.keys(outbox).length > 0) await store.hashSet('notifier:outbox', outbox);
  if (Object.keys(silences).length > 0) await store.hashSet(SILENCES_KEY, silences);
  return store;
}

describe('the notifier starts from what gpualert saved before versions (version 0)', () => {
  it('resends the outbox, keeps every silence and the state, and saves them back versioned', async () => {
    const store = await seeded(STATE_V0, OUTBOX_V0, SILENCES_V0);
    const { notifier, lines, until, warnings } = await start(store);
    const sent = (r: NotificationData[]) => r.filter((n) => n.outcome === 'sent');
    const records = await until((r) => sent(r).length >= 4);
    // The three notifications in flight went out, each once; then the waiting group (gpu-node-08), due
    // before the restart, told its first.
    const outbox = sent(records)
      .filter((n) => n.reason !== 'repeat')
      .filter((n) => n.reason === 'page' || n.fingerprints.includes('fp-maint') || (n.reason === 'first' && n.fingerprints.includes('fp-xid-79')));
    expect(outbox.map((n) => `${n.receiver}:${n.reason}:${n.fingerprints.join(',')}`).sort()).toEqual([
      'chat:first:fp-xid-79',
      'pager:page:fp-xid-79',
      'record:first:fp-maint',
    ]);
    expect(sent(records).some((n) => n.fingerprints.includes('fp-thermal-b'))).toBe(true);
    expect(warnings()).toEqual([]);
    expect(lines.find((l) => l.msg === 'state_migrated')).toMatchObject({ key: 'notifier:state', to: 'notifier:state:rest', from: 0, version: 2 });
    expect(Object.keys(notifier.state().silences).sort()).toEqual(Object.keys(SILENCES_V0).sort());
    expect(notifier.state().pages['pager|fp-xid-79']).toMatchObject({ status: 'firing', severity: 'critical' });
    for (let deadline = Date.now() + 5_000; Object.keys(await store.hashGetAll('notifier:outbox')).length > 0 && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 20));
    expect(await store.hashGetAll('notifier:outbox')).toEqual({});
    expect(JSON.parse((await store.get('notifier:state:rest'))!).version).toBe(2);
    // Version-0 silences still read from the store, for the CLI and the API too.
    expect(Object.keys(await loadSilences(store)).sort()).toEqual(Object.keys(SILENCES_V0).sort());
  });
});

describe('a damaged or hostile saved notifier is rebuilt with one warning line each, and runs', () => {
  it('drops a state of wrong types, an outbox entry with __proto__ and a huge list, and bad silences, keeping the good one and what a newer version wrote', async () => {
    const [goodId, goodSilence] = Object.entries(SILENCES_V0)[0]!;
    const [outboxId, outboxEntry] = Object.entries(OUTBOX_V0)[0]!;
    const hostileEntry = JSON.stringify({
      ['__proto__']: { polluted: true },
      notification: { ...JSON.parse(outboxEntry).notification, alerts: new Array(200_000).fill({}) },
      queuedAt: 1,
    });
    const store = await seeded(
      JSON.stringify({ groups: { __proto__: { polluted: true } }, pages: 'every one', silences: [], firing: 7 }),
      { [outboxId]: hostileEntry, other: '{"version":1,"notification":null}', 'n-future': '{"version":9,"whatever":"a newer gpualert queued"}' },
      {
        [goodId]: goodSilence,
        evil: '{"id":"evil","matchers":"host=~.*","startsAt":"now","endsAt":1e999}',
        ['__proto__']: '{"polluted":true}',
        future: '{"version":2,"id":"future"}',
      },
    );
    const { notifier, bus, until, warnings } = await start(store);
    expect(
      warnings()
        .map((w) => w.key)
        .sort(),
    ).toEqual(['notifier:outbox', 'notifier:silences', 'notifier:state']);
    expect(warnings().find((w) => w.key === 'notifier:state')!.reason).toMatch(/^version 0: (groups\.__proto__|pages): expected an object/);
    expect(warnings().find((w) => w.key === 'notifier:outbox')).toMatchObject({ unreadable: 3 });
    expect(warnings().find((w) => w.key === 'notifier:silences')).toMatchObject({ unreadable: 3 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(notifier.state().groups)).toEqual([]);
    // What a newer gpualert wrote (a rolling upgrade) is skipped but left for it; the rest is gone.
    expect(Object.keys(await store.hashGetAll('notifier:outbox'))).toEqual(['n-future']);
    expect(Object.keys(await store.hashGetAll(SILENCES_KEY)).sort()).toEqual([goodId, 'future'].sort());
    // and it works: a new page goes out.
    await bus.publish(TOPICS.alerts, [
      envelopeMessage(
        newEnvelope({
          type: 'alert',
          host: 'gpu-node-1',
          source: 'test',
          data: {
            fingerprint: 'fp-after',
            status: 'firing',
            severity: 'critical',
            category: 'fallen_off_bus',
            rule: 'gpu-absent',
            summary: 'lost',
            starts_at: new Date().toISOString(),
            evidence: [],
          },
        }),
      ),
    ]);
    const records = await until((r) => r.some((n) => n.fingerprints.includes('fp-after') && n.outcome === 'sent'));
    expect(records.filter((n) => n.fingerprints.includes('fp-after') && n.receiver === 'pager').map((n) => n.outcome)).toEqual(['sent']);
    expect(Object.keys(notifier.state().silences)).toEqual([goodId]);
  });
});
