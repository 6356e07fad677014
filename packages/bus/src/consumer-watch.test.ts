import { describe, expect, it } from 'vitest';
import { ConsumerWatch } from './consumer-watch.ts';

function watched(stallMs = 30_000) {
  const lines: string[] = [];
  const watch = new ConsumerWatch('gpualert-notifier', (level, event, detail) => lines.push(`${level} ${event} ${JSON.stringify(detail)}`), 0, stallMs);
  return { watch, lines };
}

describe('ConsumerWatch', () => {
  it('a fetch loop that stops is told once, and once more when it moves again, with how long', () => {
    const { watch, lines } = watched();
    for (let t = 0; t <= 20_000; t += 25) watch.fetched(t);
    for (let t = 20_000; t <= 80_000; t += 5_000) watch.check(t);
    expect(lines).toEqual(['warn consumer_stalled {"group":"gpualert-notifier","no_fetch_for_ms":30000}']);
    watch.fetched(81_000);
    watch.check(85_000);
    expect(lines.slice(1)).toEqual(['info consumer_resumed {"group":"gpualert-notifier","stalled_ms":61000}']);
  });

  it('a consumer that fetches (even nothing) is never told stalled', () => {
    const { watch, lines } = watched();
    for (let t = 0; t <= 120_000; t += 1_000) {
      watch.fetched(t);
      watch.check(t);
    }
    expect(lines).toEqual([]);
  });

  it('a batch held in its handler is a slow batch, not a stalled fetch loop; its end is told and counts as progress', () => {
    const { watch, lines } = watched();
    watch.fetched(1_000);
    watch.batchStarted('alerts', 3, 1_000);
    for (let t = 1_000; t <= 61_000; t += 5_000) watch.check(t);
    expect(lines).toEqual(['warn batch_slow {"group":"gpualert-notifier","topic":"alerts","partition":3,"in_handler_ms":30000}']);
    watch.batchEnded('alerts', 3, 62_000);
    watch.check(70_000);
    expect(lines.slice(1)).toEqual(['info batch_done {"group":"gpualert-notifier","topic":"alerts","partition":3,"took_ms":61000}']);
  });

  it('a batch within the bound says nothing', () => {
    const { watch, lines } = watched();
    watch.batchStarted('alerts', 0, 0);
    watch.check(29_999);
    watch.batchEnded('alerts', 0, 29_999);
    watch.check(40_000);
    expect(lines).toEqual([]);
  });
});
