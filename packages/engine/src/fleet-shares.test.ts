import { MAX_EVENT_LEAD_MS, MAX_SHARED_HOSTS } from '@gpualert/schema';
import { describe, expect, it } from 'vitest';
import { dict, emptyFleetState, newHostState } from './engine-state.ts';
import { shareOf, SharedView } from './fleet-shares.ts';

const share = (s: object) => JSON.stringify(s);

describe('fleet shares', () => {
  it("puts the other engines' hosts into the view, keeps the owned hosts' own entries, and names the clusters that changed", () => {
    const fleet = emptyFleetState();
    fleet.jobs.j = dict();
    fleet.jobs.j.mine = { util: 10, at: 5 };
    fleet.clusters.east = dict();
    fleet.clusters.east.mine = { driver: '535', cuda: '12.2' };
    const owns = (h: string) => h === 'mine';
    const view = new SharedView();
    const first = {
      mine: share({ job: { name: 'j', util: 99, at: 0 } }), // what this engine wrote earlier: memory wins
      same: share({ cluster: { name: 'east', driver: '550', cuda: '12.4' } }),
      gone: share({ job: { name: 'j', util: 90, at: 1 } }),
      other: share({ job: { name: 'j', util: 95, at: 4 }, cluster: { name: 'west', driver: '550', cuda: '12.4' } }),
    };
    expect(view.apply(fleet, first, owns)).toEqual(new Set(['east', 'west']));
    expect(fleet.jobs.j).toEqual({ mine: { util: 10, at: 5 }, gone: { util: 90, at: 1 }, other: { util: 95, at: 4 } });
    expect(view.apply(fleet, first, owns)).toEqual(new Set()); // nothing changed
    // `gone` forgotten, `other` left its cluster, `same` upgraded its driver.
    const second = { same: share({ cluster: { name: 'east', driver: '555', cuda: '12.4' } }), other: share({ job: { name: 'j', util: 96, at: 6 } }) };
    expect(view.apply(fleet, second, owns)).toEqual(new Set(['east', 'west']));
    expect(fleet.jobs.j).toEqual({ mine: { util: 10, at: 5 }, other: { util: 96, at: 6 } });
    expect(fleet.clusters.west).toBeUndefined();
    expect(fleet.clusters.east).toEqual({ mine: { driver: '535', cuda: '12.2' }, same: { driver: '555', cuda: '12.4' } });
  });

  it('counts nowhere a share that does not read, and takes a host named __proto__ as a name', () => {
    const fleet = emptyFleetState();
    const before = Object.getOwnPropertyNames(Object.prototype).join();
    new SharedView().apply(
      fleet,
      Object.assign(Object.create(null) as Record<string, string>, {
        bad: '{not json',
        long: share({ job: { name: 'x'.repeat(2_000), util: 1, at: 1 } }),
        nan: '{"job":{"name":"j","util":"NaN","at":1}}',
        ['__proto__']: share({ cluster: { name: 'east', driver: '550', cuda: '12.4' } }),
      }),
      () => false,
    );
    expect(Object.keys(fleet.jobs)).toEqual([]);
    expect(Object.keys(fleet.clusters.east!)).toEqual(['__proto__']);
    expect(Object.getOwnPropertyNames(Object.prototype).join()).toBe(before);
  });

  it("shares a host's entries under its current job and cluster labels only", () => {
    const fleet = emptyFleetState();
    const host = newHostState('h', { job: 'j', cluster: 'east' }, 'default');
    expect(shareOf(fleet, host)).toBeUndefined();
    fleet.jobs.j = dict();
    fleet.jobs.j.h = { util: 50, at: 7 };
    fleet.jobs.old = dict();
    fleet.jobs.old.h = { util: 1, at: 1 };
    expect(shareOf(fleet, host)).toEqual({ job: { name: 'j', util: 50, at: 7 } });
  });

  it('counts nowhere a share out of range, dated ahead, misnamed or under a name no host has, and says how many', () => {
    const now = Date.parse('2026-12-01T06:00:00Z');
    const fleet = emptyFleetState();
    const job = (util: number, at = now) => share({ job: { name: 'j', util, at }, cluster: { name: 'east', driver: '550', cuda: '12.4' } });
    const view = new SharedView();
    const shares = Object.assign(dict<string>(), {
      ok: job(100),
      idle: job(0, now - 30 * 86_400_000), // heard of long ago: not fresh, but still a member of its cluster
      over: job(101),
      under: job(-0.5),
      ahead: job(50, now + 365 * 86_400_000), // would count as a fresh peer for a year
      copied: share({ host: 'elsewhere', job: { name: 'j', util: 50, at: now } }),
      named: share({ host: 'named', job: { name: 'j', util: 50, at: now } }),
      ['h'.repeat(254)]: job(50),
      ['bad\u001b[2Jname']: job(50),
    });
    view.apply(fleet, shares, () => false, false, now);
    expect(Object.keys(fleet.jobs.j!).sort()).toEqual(['idle', 'named', 'ok']);
    expect(Object.keys(fleet.clusters.east!).sort()).toEqual(['idle', 'ok']);
    expect(view.skipped).toEqual({ beyond: 0, refused: 6 });
    // The next tick, nothing changed: the same count, none of them counted in.
    view.apply(fleet, shares, () => false, false, now + 2_000);
    expect(view.skipped).toEqual({ beyond: 0, refused: 6 });
    expect(Object.keys(fleet.jobs.j!).sort()).toEqual(['idle', 'named', 'ok']);
  });

  it('takes in a share dated ahead once the time it is dated at is near, and not before', () => {
    const now = Date.parse('2026-12-01T06:00:00Z');
    const fleet = emptyFleetState();
    const view = new SharedView();
    const shares = { p: share({ job: { name: 'j', util: 90, at: now + 10 * 60_000 } }) };
    view.apply(fleet, shares, () => false, false, now);
    expect(fleet.jobs.j).toBeUndefined();
    view.apply(fleet, shares, () => false, false, now + 4 * 60_000);
    expect(fleet.jobs.j).toBeUndefined();
    view.apply(fleet, shares, () => false, false, now + 10 * 60_000 - MAX_EVENT_LEAD_MS); // unchanged text, but now within the lead
    expect(fleet.jobs.j).toEqual({ p: { util: 90, at: now + 10 * 60_000 } });
    expect(view.skipped).toEqual({ beyond: 0, refused: 0 });
  });

  it(`reads at most ${MAX_SHARED_HOSTS.toLocaleString('en-US')} shares a tick and counts the rest as left out`, () => {
    const fleet = emptyFleetState();
    const shares = dict<string>();
    const text = share({ cluster: { name: 'east', driver: '550', cuda: '12.4' } });
    for (let i = 0; i < MAX_SHARED_HOSTS + 5; i += 1) shares[`h-${i}`] = text;
    const view = new SharedView();
    view.apply(fleet, shares, () => false);
    expect(Object.keys(fleet.clusters.east!).length).toBe(MAX_SHARED_HOSTS);
    expect(view.skipped).toEqual({ beyond: 5, refused: 0 });
  });

  it('fields no gpualert wrote cannot push real hosts out: refused shares take no place, and hosts already in the view go first', () => {
    const fleet = emptyFleetState();
    const real = share({ cluster: { name: 'east', driver: '550', cuda: '12.4' } });
    const view = new SharedView();
    view.apply(fleet, { 'east-old': real }, () => false);
    // Integer-like names come first in a JavaScript object, whatever order the store gave.
    const shares = dict<string>();
    shares['east-real'] = real;
    shares['east-old'] = real;
    for (let i = 0; i < MAX_SHARED_HOSTS; i += 1) shares[String(i)] = 'x';
    view.apply(fleet, shares, () => false);
    expect(Object.keys(fleet.clusters.east!).sort()).toEqual(['east-old', 'east-real']);
    expect(view.skipped).toEqual({ beyond: 0, refused: MAX_SHARED_HOSTS });
    // At the bound, a new host waits behind the ones already in the view.
    const full = dict<string>();
    for (let i = 0; i < MAX_SHARED_HOSTS + 1; i += 1) full[`h-${i}`] = real;
    const bounded = new SharedView();
    const fleet2 = emptyFleetState();
    bounded.apply(fleet2, { 'h-late': real }, () => false);
    bounded.apply(fleet2, { ...full, 'h-late': real }, () => false);
    expect(fleet2.clusters.east!['h-late']).toBeDefined();
    expect(bounded.skipped.beyond).toBe(2);
  });

  it('shares a utilisation within 0..100 % even where smoothing rounds past it, so no other engine refuses it', () => {
    const fleet = emptyFleetState();
    const host = newHostState('h', { job: 'j' }, 'default');
    fleet.jobs.j = dict();
    fleet.jobs.j.h = { util: 100.00000000000001, at: 7 }; // 100 % smoothed with 0.00013 of the past
    expect(shareOf(fleet, host)).toEqual({ job: { name: 'j', util: 100, at: 7 } });
    const view = new SharedView();
    const other = emptyFleetState();
    view.apply(other, { h: JSON.stringify(shareOf(fleet, host)) }, () => false, false, 7);
    expect(other.jobs.j).toEqual({ h: { util: 100, at: 7 } });
    // No utilisation at all (hostile samples summed to ±Infinity): it still counts in its cluster.
    const both = newHostState('b', { job: 'j', cluster: 'east' }, 'default');
    fleet.jobs.j.b = { util: NaN, at: 7 };
    fleet.clusters.east = dict();
    fleet.clusters.east.b = { driver: '550', cuda: '12.4' };
    new SharedView().apply(other, { b: JSON.stringify(shareOf(fleet, both)) }, () => false, false, 7);
    expect(other.clusters.east).toEqual({ b: { driver: '550', cuda: '12.4' } });
  });
});
