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
    new SharedView().apply(fleet, Object.assign(Object.create(null) as Record<string, string>, {
      bad: '{not json',
      long: share({ job: { name: 'x'.repeat(2_000), util: 1, at: 1 } }),
      nan: '{"job":{"name":"j","util":"NaN","at":1}}',
      ['__proto__']: share({ cluster: { name: 'east', driver: '550', cuda: '12.4' } }),
    }), () => false);
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
});
