import { emptyNotifierState } from '@gpualert/notify';
import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { PAGES_KEY, resolvedPageKey, SharedPageLog } from './shared-page-log.ts';

const T = Date.parse('2026-06-01T00:00:00Z');

describe('the page log notifiers share', () => {
  it('what one notifier paged and resolved is what the next one knows, whatever it remembered itself', async () => {
    const store = new MemoryStore();
    const a = emptyNotifierState();
    const b = emptyNotifierState();
    const log = new SharedPageLog(store, ['pager', 'chat']);
    // b paged fp1 long ago (its memory), then its partition moved to a, which resolved it.
    b.pages['pager|fp1'] = { status: 'firing', severity: 'critical', at: T };
    a.pages['pager|fp1'] = { status: 'firing', severity: 'critical', at: T };
    a.pages['pager|fp2'] = { status: 'firing', severity: 'error', at: T };
    await log.save(a, ['fp1', 'fp2']);
    delete a.pages['pager|fp1'];
    await log.save(a, ['fp1']);
    // Back on b: fp1 is no longer paged (a new fault would page again), fp2 is (its resolve is sent).
    await log.load(b, ['fp1', 'fp2', 'fp3']);
    expect(b.pages['pager|fp1']).toBeUndefined();
    expect(b.pages['pager|fp2']).toEqual({ status: 'firing', severity: 'error', at: T });
    expect(await log.firing('fp2')).toBe(true);
    expect(await log.firing('fp1')).toBe(false);
  });

  it("a resolve's partition and offset travel with it to the next replica", async () => {
    const store = new MemoryStore();
    const log = new SharedPageLog(store, ['pager']);
    const a = emptyNotifierState();
    a.pages['pager|fp'] = { status: 'resolved', severity: 'critical', at: T, partition: 2, offset: 41 };
    await log.save(a, ['fp']);
    const b = emptyNotifierState();
    await log.load(b, ['fp']);
    expect(b.pages['pager|fp']).toEqual({ status: 'resolved', severity: 'critical', at: T, partition: 2, offset: 41 });
  });

  it('a fault resolved for every receiver leaves the hash; its resolve is a key of its own that expires, and a later page wins over it', async () => {
    const store = new MemoryStore();
    const log = new SharedPageLog(store, ['pager', 'phone']);
    const a = emptyNotifierState();
    a.pages['pager|fp'] = { status: 'firing', severity: 'critical', at: T };
    a.pages['phone|fp'] = { status: 'firing', severity: 'critical', at: T };
    await log.save(a, ['fp']);
    await log.load(a, ['fp']);
    a.pages['pager|fp'] = { status: 'resolved', severity: 'critical', at: T + 1, partition: 1, offset: 7 };
    await log.save(a, ['fp']);
    // One receiver still told firing: the field stays, the resolve inside it.
    expect(Object.keys(await store.hashGetAll(PAGES_KEY))).toEqual(['fp']);
    await log.load(a, ['fp']);
    a.pages['phone|fp'] = { status: 'resolved', severity: 'critical', at: T + 1, partition: 1, offset: 7 };
    await log.save(a, ['fp']);
    expect(await store.hashGetAll(PAGES_KEY)).toEqual({});
    expect(await store.get(resolvedPageKey('fp'))).not.toBeNull();
    const b = emptyNotifierState();
    await log.load(b, ['fp']);
    expect(b.pages['pager|fp']).toEqual({ status: 'resolved', severity: 'critical', at: T + 1, partition: 1, offset: 7 });
    // Paged again by another replica: the hash's firing record is what a loader sees, the old resolve key notwithstanding.
    const c = emptyNotifierState();
    c.pages['pager|fp'] = { status: 'firing', severity: 'critical', at: T + 2 };
    await log.save(c, ['fp']);
    await log.load(b, ['fp']);
    expect(b.pages['pager|fp']?.status).toBe('firing');
  });

  it("a field that does not read keeps the notifier's memory; hostile fingerprints are fields, not keys of anything", async () => {
    const store = new MemoryStore();
    const log = new SharedPageLog(store, ['pager']);
    const state = emptyNotifierState();
    state.pages['pager|__proto__'] = { status: 'firing', severity: 'critical', at: T };
    await log.save(state, ['__proto__']);
    await store.hashSet(PAGES_KEY, { bad: '{"pager": {"status": "maybe"}}' });
    const other = emptyNotifierState();
    other.pages['pager|bad'] = { status: 'firing', severity: 'warning', at: T };
    await log.load(other, ['__proto__', 'bad']);
    expect(other.pages['pager|__proto__']).toEqual({ status: 'firing', severity: 'critical', at: T });
    expect(other.pages['pager|bad']).toEqual({ status: 'firing', severity: 'warning', at: T });
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
  });

  it('seeds an empty log once from the saved state (an upgrade from one notifier), never over a log in use', async () => {
    const store = new MemoryStore();
    const log = new SharedPageLog(store, ['pager']);
    const state = emptyNotifierState();
    state.pages['pager|fp9'] = { status: 'firing', severity: 'critical', at: T };
    expect(await log.seed(state)).toBe(1);
    const stale = emptyNotifierState();
    stale.pages['pager|fp8'] = { status: 'firing', severity: 'critical', at: T };
    expect(await log.seed(stale)).toBe(0);
    expect(Object.keys(await store.hashGetAll(PAGES_KEY))).toEqual(['fp9']);
  });
});
