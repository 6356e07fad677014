import { describe, expect, it } from 'vitest';
import { newHostState, parseFleetState, parseHostState } from './engine-state.ts';

describe('engine state read back from a hostile store', () => {
  it('a fleet state whose job map holds "__proto__": null starts empty, with a note, instead of loading a null the judges read', () => {
    const notes: string[] = [];
    const fleet = parseFleetState('{"version":1,"jobs":{"J":{"__proto__":null}},"clusters":{}}', (n) => notes.push(n));
    expect(Object.keys(fleet.jobs)).toEqual([]);
    expect(notes.join('\n')).toMatch(/__proto__/);
    // The same key with a value of the right shape is only data.
    const ok = parseFleetState('{"version":1,"jobs":{"J":{"__proto__":{"util":50,"at":1}}},"clusters":{}}');
    expect(Object.keys(ok.jobs.J!)).toEqual(['__proto__']);
  });

  it('a host whose buses or offsets map holds "__proto__" of the wrong type starts afresh', () => {
    const saved = JSON.stringify({ ...newHostState('gpu-node-1', {}, 'default'), offsets: {} });
    expect(parseHostState(saved)).toBeDefined(); // the state is good but for the key below
    const notes: string[] = [];
    expect(parseHostState(saved.replace('"offsets":{}', '"offsets":{"__proto__":"x"}'), (n) => notes.push(n))).toBeUndefined();
    expect(notes.join('\n')).toMatch(/offsets\.__proto__/);
  });
});
