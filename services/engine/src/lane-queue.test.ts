import { describe, expect, it } from 'vitest';
import { laneQueue } from './lane-queue.ts';

describe('laneQueue', () => {
  it('runs fault work before bulk work that is still waiting, one piece at a time, each lane in order', async () => {
    const queue = laneQueue();
    const order: string[] = [];
    let running = 0;
    const job = (name: string) => async () => {
      running += 1;
      expect(running).toBe(1);
      await new Promise((r) => setTimeout(r, 5));
      order.push(name);
      running -= 1;
    };
    const all = [
      queue.run('bulk', job('samples-1')), // starts at once
      queue.run('bulk', job('samples-2')),
      queue.run('bulk', job('samples-3')),
      queue.run('fault', job('xid-1')),
      queue.run('fault', job('xid-2')),
    ];
    await Promise.all(all);
    expect(order).toEqual(['samples-1', 'xid-1', 'xid-2', 'samples-2', 'samples-3']);
  });

  it('settles each piece with its own outcome and goes on after a failure; idle waits for the last', async () => {
    const queue = laneQueue();
    const failed = queue.run('bulk', async () => {
      throw new Error('redis away');
    });
    const done = queue.run('fault', async () => 'judged');
    await expect(failed).rejects.toThrow('redis away');
    await expect(done).resolves.toBe('judged');
    let late = false;
    void queue.run('bulk', async () => {
      await new Promise((r) => setTimeout(r, 10));
      late = true;
    });
    await queue.idle();
    expect(late).toBe(true);
  });
});
