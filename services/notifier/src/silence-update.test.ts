import { MemoryStore } from '@gpualert/state';
import { describe, expect, it } from 'vitest';
import { postSilence } from './alertmanager-api.ts';
import { addSilence, loadSilences } from './silences.ts';

const NOW = Date.parse('2026-06-01T12:00:00Z');
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();
const gpu = [{ name: 'host', value: 'gpu-node-7', isRegex: false, isEqual: true }];
const post = (store: MemoryStore, body: Record<string, unknown>, now = NOW) =>
  postSilence(store, { matchers: gpu, createdBy: 'bo', comment: 'swap', ...body }, now) as Promise<{ status: number; body: { silenceID: string } }>;

/** Alertmanager's silence/silence.go canUpdate, through POST /api/v2/silences with an id (what `amtool silence update` sends). */
describe('updating a silence keeps its id where Alertmanager does, and replaces it where Alertmanager does', () => {
  it('active: a new end or comment is changed in place; a moved start or other matchers make a new silence and expire the old', async () => {
    const store = new MemoryStore();
    const {
      body: { silenceID: id },
    } = await post(store, { startsAt: iso(NOW - HOUR), endsAt: iso(NOW + HOUR) }, NOW - HOUR);
    const longer = await post(store, { id, startsAt: iso(NOW - HOUR), endsAt: iso(NOW + 2 * HOUR), comment: 'takes longer' });
    expect(longer.body.silenceID).toBe(id);
    expect((await loadSilences(store))[id]).toMatchObject({ endsAt: NOW + 2 * HOUR, comment: 'takes longer', startsAt: NOW - HOUR });
    const moved = await post(store, { id, startsAt: iso(NOW - HOUR + 1_000), endsAt: iso(NOW + 2 * HOUR) });
    expect(moved.body.silenceID).not.toBe(id);
    expect((await loadSilences(store))[id]!.expiredAt).toBe(NOW);
    const other = await post(store, {
      id: moved.body.silenceID,
      startsAt: iso(NOW - HOUR),
      endsAt: iso(NOW + HOUR),
      matchers: [{ ...gpu[0]!, value: 'gpu-node-8' }],
    });
    expect(other.body.silenceID).not.toBe(moved.body.silenceID);
  });

  it('the same matchers however written: host=gpu-node-7 from the CLI is host="gpu-node-7" from amtool', async () => {
    const store = new MemoryStore();
    const made = await addSilence(
      store,
      { matchers: ['host=gpu-node-7'], durationMs: 2 * HOUR, startsAt: NOW - HOUR, createdBy: 'bo', comment: 'swap' },
      NOW - HOUR,
    );
    const updated = await post(store, { id: made.id, startsAt: iso(NOW - HOUR), endsAt: iso(NOW + 2 * HOUR), comment: 'takes longer' });
    expect(updated.body.silenceID).toBe(made.id);
  });

  it('pending: changed in place while it does not start in the past; expired: never', async () => {
    const store = new MemoryStore();
    const {
      body: { silenceID: id },
    } = await post(store, { startsAt: iso(NOW + HOUR), endsAt: iso(NOW + 2 * HOUR) });
    expect((await post(store, { id, startsAt: iso(NOW + 30 * 60_000), endsAt: iso(NOW + 2 * HOUR) })).body.silenceID).toBe(id);
    expect((await loadSilences(store))[id]!.startsAt).toBe(NOW + 30 * 60_000);
    const started = await post(store, { id, startsAt: iso(NOW - 60_000), endsAt: iso(NOW + 2 * HOUR) });
    expect(started.body.silenceID).not.toBe(id);
    const after = NOW + 3 * HOUR;
    const again = await post(store, { id: started.body.silenceID, startsAt: iso(NOW), endsAt: iso(after + HOUR) }, after);
    expect(again.body.silenceID).not.toBe(started.body.silenceID);
  });
});
