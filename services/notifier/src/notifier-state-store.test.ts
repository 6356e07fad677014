import { Writable } from 'node:stream';
import { envelopeMessage, MemoryBus } from '@gpualert/bus';
import { createLogger } from '@gpualert/log';
import { emptyNotifierState, NotifierCore, RoutesFile, saveNotifierState, type NotifierState } from '@gpualert/notify';
import { newEnvelope, parseEnvelope, TOPICS, type AlertData, type EnvelopeOf, type NotificationData } from '@gpualert/schema';
import { MemoryStore, MemoryStoreData } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { startNotifier } from './notifier-service.ts';
import { FIRING_KEY, GROUP_ALERTS_KEY, GROUPS_KEY, LEGACY_STATE_KEY, NotifierStateStore, STATE_KEY } from './notifier-state-store.ts';
import { groupAlertField } from './saved-groups.ts';
import { SILENCES_KEY } from './silences.ts';

const STATE_KEYS = new Set([STATE_KEY, GROUPS_KEY, GROUP_ALERTS_KEY, FIRING_KEY]);

/** The embedded store, counting what is written to the notifier's state keys, and failing one write on demand. */
class CountingStore extends MemoryStore {
  /** Per state key, the fields written (the key itself for a document). */
  readonly written: string[] = [];
  chars = 0;
  /** Steps begun: each reads the silences first. */
  steps = 0;
  private failIn: number | undefined;
  /** Whether the write `failWrite` asked for has failed. */
  failed = false;

  /** The n-th write from now (any key) throws, as a store gone away would. */
  failWrite(n: number): void {
    this.failIn = n;
  }

  reset(): void {
    this.written.length = 0;
    this.chars = 0;
  }

  private write(key: string, fields: Readonly<Record<string, string>>): void {
    if (this.failIn !== undefined && --this.failIn === 0) {
      this.failIn = undefined;
      this.failed = true;
      throw new Error('store went away');
    }
    if (!STATE_KEYS.has(key)) return;
    for (const [field, text] of Object.entries(fields)) {
      this.written.push(`${key} ${field}`);
      this.chars += text.length;
    }
  }

  override async set(key: string, value: string, options?: { ttlMs?: number }): Promise<void> {
    this.write(key, { [key]: value });
    await super.set(key, value, options);
  }

  override async hashSet(key: string, fields: Readonly<Record<string, string>>): Promise<void> {
    this.write(key, fields);
    await super.hashSet(key, fields);
  }

  override async hashDelete(key: string, ...fields: string[]): Promise<number> {
    this.write(key, Object.fromEntries(fields.map((f) => [f, ''])));
    return super.hashDelete(key, ...fields);
  }

  override async hashGetAll(key: string): Promise<Record<string, string>> {
    if (key === SILENCES_KEY) this.steps += 1;
    return super.hashGetAll(key);
  }
}

/** Chat groups per host (no pages), told after 30 s; a critical page besides. */
const routes = RoutesFile.parse({
  receivers: [
    { name: 'pager', channel: 'record' },
    { name: 'chat', channel: 'record' },
  ],
  route: {
    receiver: 'chat',
    group_by: ['host'],
    group_wait: '30s',
    group_interval: '5m',
    repeat_interval: '4h',
    routes: [{ receiver: 'pager', matchers: ['severity="critical"'], page: true }],
  },
});

function alert(host: string, severity: AlertData['severity'] = 'warning', status: 'firing' | 'resolved' = 'firing'): EnvelopeOf<'alert'> {
  return newEnvelope({
    type: 'alert',
    id: `${host}-${severity}-${status}`,
    host,
    source: 'test',
    labels: { cluster: 'lab' },
    data: {
      fingerprint: `fp-${host}-${severity}`,
      status,
      severity,
      category: 'thermal',
      rule: 'r',
      summary: `hot ${host}`,
      starts_at: '2026-11-30T10:00:00.000Z',
      evidence: [],
    },
  });
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function until(done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !(await done());) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function start(store: CountingStore, bus = new MemoryBus()) {
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
  const notifier = await startNotifier({ bus, store, log, routes, env: {}, flushEveryMs: 20 });
  let stopped = false;
  const stop = async () => {
    if (!stopped) await notifier.stop();
    stopped = true;
  };
  cleanups.push(async () => {
    await stop();
    await bus.close();
  });
  const records = async (): Promise<NotificationData[]> =>
    (await bus.read(TOPICS.notifications)).flatMap((m) => {
      const r = parseEnvelope(m.value);
      return r.ok && r.value.type === 'notification' ? [r.value.data] : [];
    });
  /** Waits until `n` more steps have run to their end (each begins by reading the silences). */
  const steps = async (n: number) => {
    const target = store.steps + n + 1;
    await until(() => store.steps >= target, `${n} steps`);
  };
  return { notifier, bus, lines, records, steps, stop };
}

const hosts = (n: number) => Array.from({ length: n }, (_, i) => `gpu-node-${i}`);

describe('the notifier saves what a step changed', () => {
  it('one new alert among 1,000 open groups writes its group and its alert, not the 1,000 others', async () => {
    const store = new CountingStore();
    const { notifier, bus } = await start(store);
    await bus.publish(
      TOPICS.alerts,
      hosts(1_000).map((h) => envelopeMessage(alert(h))),
    );
    await until(async () => Object.keys(await store.hashGetAll(GROUPS_KEY)).length === 1_000, '1,000 groups saved');
    const whole = saveNotifierState(notifier.state()).length;
    store.reset();
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('gpu-node-new'))]);
    await until(() => Object.hasOwn(notifier.state().groups, 'root|chat|host="gpu-node-new"'), 'the new group committed');
    expect(store.written).toEqual([
      `${GROUPS_KEY} root|chat|host="gpu-node-new"`,
      `${GROUP_ALERTS_KEY} ${groupAlertField('root|chat|host="gpu-node-new"', 'fp-gpu-node-new-warning')}`,
      `${FIRING_KEY} fp-gpu-node-new-warning`,
    ]);
    // What the step wrote, against the whole state the notifier saved at every step before.
    expect(store.chars).toBeLessThan(whole / 100);
    expect(Object.keys(notifier.state().groups)).toHaveLength(1_001);
  });

  it('a step whose second write fails leaves the state as the last step saved it, and its retry notifies once', async () => {
    const store = new CountingStore();
    const { notifier, bus, records, steps } = await start(store);
    await bus.publish(
      TOPICS.alerts,
      hosts(20).map((h) => envelopeMessage(alert(h))),
    );
    await until(() => Object.keys(notifier.state().groups).length === 20, '20 groups committed');
    // The page's step writes its outbox entry first, then the state: the state's first write fails.
    store.failWrite(2);
    await bus.publish(TOPICS.alerts, [envelopeMessage(alert('gpu-node-3', 'critical'))]);
    const paged = async () => (await records()).filter((r) => r.receiver === 'pager' && r.outcome === 'sent');
    await until(async () => (await paged()).length > 0, 'the page');
    await steps(3);
    expect(store.failed).toBe(true);
    expect((await paged()).map((r) => r.fingerprints)).toEqual([['fp-gpu-node-3-critical']]);
    // The retry saved its changes, the failed attempt none of its own: the store reads back as the state in memory.
    const restarted = new NotifierStateStore(store, createLogger({ name: 't', level: 'silent' }));
    const loaded = await restarted.load();
    expect(JSON.parse(saveNotifierState(loaded))).toEqual(JSON.parse(saveNotifierState(notifier.state())));
    expect(loaded.pages['pager|fp-gpu-node-3-critical']).toMatchObject({ status: 'firing' });
  });

  it('a notifier started on the single document of gpualert 0.1 loads every group, moves it to fields once, and notifies nothing twice', async () => {
    // What a notifier of today's release left: 300 groups told their first, one page, all in `notifier:state`.
    const core = new NotifierCore(routes);
    const state: NotifierState = emptyNotifierState();
    const t = Date.now() - 60_000;
    for (const h of hosts(300)) core.ingest(state, alert(h), t);
    core.ingest(state, alert('gpu-node-7', 'critical'), t);
    core.flush(state, t + 31_000);
    const data = new MemoryStoreData();
    await new MemoryStore({ data }).set(LEGACY_STATE_KEY, saveNotifierState(state));

    const store = new CountingStore({ data });
    const first = await start(store);
    expect(first.lines.find((l) => l.msg === 'state_migrated')).toMatchObject({ key: LEGACY_STATE_KEY, to: STATE_KEY, from: 1, version: 2, groups: 300 });
    expect(Object.keys(first.notifier.state().groups).sort()).toEqual(Object.keys(state.groups).sort());
    expect(first.notifier.state().pages['pager|fp-gpu-node-7-critical']).toMatchObject({ status: 'firing' });
    expect(Object.keys(await store.hashGetAll(GROUPS_KEY))).toHaveLength(300);
    expect(JSON.parse((await store.get(STATE_KEY))!)).toMatchObject({ version: 2 });
    // Everything fires again as it did: nothing is news, nothing is told.
    await first.bus.publish(TOPICS.alerts, [...hosts(300).map((h) => envelopeMessage(alert(h))), envelopeMessage(alert('gpu-node-7', 'critical'))]);
    await first.steps(3);
    await first.stop();

    // Started again: the new layout reads back as it is, without a second migration.
    const second = await start(store, first.bus);
    expect(second.lines.some((l) => l.msg === 'state_migrated' || l.msg === 'state_rebuilt')).toBe(false);
    expect(JSON.parse(saveNotifierState(second.notifier.state()))).toEqual(JSON.parse(saveNotifierState(first.notifier.state())));
    await second.bus.publish(TOPICS.alerts, [envelopeMessage(alert('gpu-node-9')), envelopeMessage(alert('gpu-node-7', 'critical'))]);
    await second.steps(3);
    expect((await second.records()).filter((r) => r.outcome === 'sent')).toEqual([]);
  });
});

describe('a group is saved as a head and a field per alert', () => {
  const quiet = createLogger({ name: 't', level: 'silent' });
  const storm = RoutesFile.parse({
    receivers: [{ name: 'chat', channel: 'record' }],
    route: { receiver: 'chat', group_by: ['cluster'], group_wait: '30s', group_interval: '5m', repeat_interval: '4h' },
  });

  it('one more alert in a group of 1,000 writes that alert alone, not the group again', async () => {
    const core = new NotifierCore(storm);
    const store = new CountingStore();
    const saved = new NotifierStateStore(store, quiet);
    const state = await saved.load();
    const t = Date.parse('2026-11-30T10:00:00Z');
    for (const h of hosts(1_000)) core.ingest(state, alert(h), t);
    await saved.save(state);
    expect(Object.keys(state.groups)).toEqual(['root|chat|cluster="lab"']);
    const group = JSON.stringify(state.groups['root|chat|cluster="lab"']).length;
    store.reset();
    core.ingest(state, alert('gpu-node-new'), t + 1_000);
    await saved.save(state);
    expect(store.written).toEqual([
      `${GROUP_ALERTS_KEY} ${groupAlertField('root|chat|cluster="lab"', 'fp-gpu-node-new-warning')}`,
      `${FIRING_KEY} fp-gpu-node-new-warning`,
    ]);
    expect(store.chars).toBeLessThan(group / 100);
    // The flush that tells all 1,001 writes each alert's told record, and the head for its times.
    store.reset();
    core.flush(state, t + 31_000);
    await saved.save(state);
    expect(store.written.filter((w) => w.startsWith(GROUP_ALERTS_KEY))).toHaveLength(1_001);
    expect(store.written.filter((w) => w.startsWith(`${GROUPS_KEY} `))).toEqual([`${GROUPS_KEY} root|chat|cluster="lab"`]);
    const reread = await new NotifierStateStore(store, quiet).load();
    expect(JSON.parse(saveNotifierState(reread))).toEqual(JSON.parse(saveNotifierState(state)));
  });

  it('groups saved whole (a field per group, as the release before wrote them) are split once, load as they were, and notify nothing again', async () => {
    const core = new NotifierCore(routes);
    const store = new CountingStore();
    const saved = new NotifierStateStore(store, quiet);
    const state = await saved.load();
    const t = Date.now() - 60_000;
    for (const h of hosts(30)) core.ingest(state, alert(h), t);
    core.flush(state, t + 31_000);
    await saved.save(state);
    // The layout before: each group one field of version 1, its alerts and told records inside, no alert fields.
    await store.delete(GROUP_ALERTS_KEY);
    await store.hashSet(GROUPS_KEY, Object.fromEntries(Object.entries(state.groups).map(([key, g]) => [key, JSON.stringify({ version: 1, ...g })])));
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({
      name: 't',
      level: 'info',
      destination: new Writable({
        write(c, _e, done) {
          lines.push(JSON.parse(String(c)) as Record<string, unknown>);
          done();
        },
      }),
    });
    // A split cut short after its first write (the store gone): nothing of the groups is lost, the next start splits again.
    store.failWrite(2);
    await expect(new NotifierStateStore(store, log).load()).rejects.toThrow('store went away');
    lines.length = 0;
    const loaded = await new NotifierStateStore(store, log).load();
    expect(lines.map((l) => l.msg)).toEqual(['state_rebuilt', 'state_migrated']); // the first try's alert fields, dropped until their group is split
    expect(lines[1]).toMatchObject({ key: GROUPS_KEY, to: GROUP_ALERTS_KEY, groups: 30, alerts: 30 });
    expect(JSON.parse(saveNotifierState(loaded))).toEqual(JSON.parse(saveNotifierState(state)));
    expect(Object.values(await store.hashGetAll(GROUPS_KEY)).every((text) => JSON.parse(text).version === 2 && !('alerts' in JSON.parse(text)))).toBe(true);
    expect(Object.keys(await store.hashGetAll(GROUP_ALERTS_KEY))).toHaveLength(30);
    // Loaded again: as it is, no second migration; and the told records kept: nothing is news.
    lines.length = 0;
    const again = await new NotifierStateStore(store, log).load();
    expect(lines).toEqual([]);
    expect(JSON.parse(saveNotifierState(again))).toEqual(JSON.parse(saveNotifierState(state)));
    for (const h of hosts(30)) core.ingest(again, alert(h), t + 40_000);
    expect(core.flush(again, t + 60_000).filter((d) => 'send' in d)).toEqual([]);
  });
});

describe('what a step changed is found without serialising the rest, and a failed step goes back', () => {
  const quiet = createLogger({ name: 't', level: 'silent' });
  /** Every group and firing alert as text, to diff the slow way. */
  const texts = (state: NotifierState) => {
    const out = new Map<string, string>();
    for (const [key, g] of Object.entries(state.groups)) {
      out.set(`g ${key}`, JSON.stringify([g.key, g.route, g.nextFlush, g.lastSent]));
      for (const fp of new Set([...Object.keys(g.alerts), ...Object.keys(g.told)]))
        out.set(`a ${groupAlertField(key, fp)}`, JSON.stringify([g.alerts[fp], g.told[fp]]));
    }
    for (const [fp, labels] of Object.entries(state.firing)) out.set(`f ${fp}`, JSON.stringify([labels, state.about[fp]]));
    out.set(`r ${STATE_KEY}`, JSON.stringify([state.pages, state.sources]));
    return out;
  };

  it('writes every group and alert whose text changed, over a run of alerts, resolves, repeats and flushes', async () => {
    const core = new NotifierCore(routes);
    const store = new CountingStore();
    const saved = new NotifierStateStore(store, quiet);
    const state = await saved.load();
    await saved.save(state);
    let before = texts(state);
    let t = Date.parse('2026-11-30T10:00:00Z');
    const severities: AlertData['severity'][] = ['warning', 'error', 'critical'];
    // A fixed pseudo-random walk: the same steps on every run.
    let seed = 7;
    const next = (n: number) => (seed = (seed * 48_271) % 2_147_483_647) % n;
    for (let step = 0; step < 60; step += 1) {
      for (let i = 0; i < 5; i += 1) core.ingest(state, alert(`gpu-node-${next(12)}`, severities[next(3)], next(3) === 0 ? 'resolved' : 'firing'), t);
      t += [1_000, 31_000, 301_000, 4 * 3_600_000][next(4)]!;
      core.flush(state, t);
      const after = texts(state);
      const changed = [...after].filter(([k, v]) => before.get(k) !== v).map(([k]) => k.slice(2));
      const gone = [...before.keys()].filter((k) => !after.has(k)).map((k) => k.slice(2));
      store.reset();
      await saved.save(state);
      const written = store.written.map((w) => w.slice(w.indexOf(' ') + 1));
      expect(written.sort()).toEqual([...changed, ...gone].sort());
      before = after;
    }
  });

  it('a save that fails at its second write leaves the state as the last save committed it, and the next save writes all it changed', async () => {
    const core = new NotifierCore(routes);
    const store = new CountingStore();
    const saved = new NotifierStateStore(store, quiet);
    const state = await saved.load();
    const t = Date.parse('2026-11-30T10:00:00Z');
    for (const h of hosts(50)) core.ingest(state, alert(h), t);
    await saved.save(state);
    const committed = saveNotifierState(state);
    core.ingest(state, alert('gpu-node-1', 'error'), t + 1_000);
    core.ingest(state, alert('gpu-node-2', 'critical'), t + 1_000);
    core.ingest(state, alert('gpu-node-3', 'warning', 'resolved'), t + 1_000);
    core.flush(state, t + 31_000);
    store.failWrite(2);
    await expect(saved.save(state)).rejects.toThrow('store went away');
    expect(saved.rollback(state)).toEqual([]);
    // The same content (an entry put back may come last in its map: no decision depends on that order).
    expect(JSON.parse(saveNotifierState(state))).toEqual(JSON.parse(committed));
    // The failed step wrote its groups before its alerts failed: a step that changes nothing (a
    // timer flush with nothing due) puts the store back to the state, or a restart would load them.
    await saved.save(state);
    const reread = await new NotifierStateStore(store, quiet).load();
    expect(JSON.parse(saveNotifierState(reread))).toEqual(JSON.parse(committed));
    // Decided again, as the retry does: the store ends as the state.
    core.ingest(state, alert('gpu-node-1', 'error'), t + 1_000);
    core.ingest(state, alert('gpu-node-2', 'critical'), t + 1_000);
    core.ingest(state, alert('gpu-node-3', 'warning', 'resolved'), t + 1_000);
    core.flush(state, t + 31_000);
    await saved.save(state);
    const loaded = await new NotifierStateStore(store, quiet).load();
    expect(JSON.parse(saveNotifierState(loaded))).toEqual(JSON.parse(saveNotifierState(state)));
  });

  it('a group field that does not read is dropped with one warning line and the rest loads; a fingerprint named __proto__ is only a key', async () => {
    const core = new NotifierCore(routes);
    const store = new CountingStore();
    const saved = new NotifierStateStore(store, quiet);
    const state = await saved.load();
    const t = Date.parse('2026-11-30T10:00:00Z');
    for (const h of hosts(10)) core.ingest(state, alert(h), t);
    const hostile = alert('gpu-node-3');
    core.ingest(state, { ...hostile, data: { ...hostile.data, fingerprint: '__proto__' } }, t);
    await saved.save(state);
    const [victim] = Object.keys(state.groups);
    await store.hashSet(GROUPS_KEY, { [victim!]: '{"version":2,"key":"not this one"}', 'root|chat|host="gpu-node-99"': '{"version":2,"key":7' });
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({
      name: 't',
      level: 'info',
      destination: new Writable({
        write(c, _e, done) {
          lines.push(JSON.parse(String(c)) as Record<string, unknown>);
          done();
        },
      }),
    });
    const loaded = await new NotifierStateStore(store, log).load();
    // The victim's alert is left without its group: dropped too, and said so.
    expect(lines.filter((l) => l.msg === 'state_rebuilt')).toEqual([
      expect.objectContaining({ key: GROUPS_KEY, unreadable: 2 }),
      expect.objectContaining({ key: GROUP_ALERTS_KEY, unreadable: 1, examples: [expect.stringContaining('its group is not saved')] }),
    ]);
    expect(Object.keys(loaded.groups).sort()).toEqual(
      Object.keys(state.groups)
        .filter((k) => k !== victim)
        .sort(),
    );
    expect(Object.keys(await store.hashGetAll(GROUPS_KEY))).toHaveLength(9);
    expect(Object.keys(await store.hashGetAll(GROUP_ALERTS_KEY)).some((f) => f.includes(victim!))).toBe(false);
    expect(Object.hasOwn(loaded.firing, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(loaded.firing)).toBeNull();
    expect(({} as Record<string, unknown>).cluster).toBeUndefined();
  });
});
