import { describe, expect, it } from 'vitest';
import { priorityQueue } from './serial.ts';

describe('priorityQueue', () => {
  it('runs one at a time, urgent work waiting before the rest waiting, each in its order, and survives a failure', async () => {
    const queue = priorityQueue();
    const order: string[] = [];
    let active = 0;
    const job =
      (name: string, fail = false) =>
      async () => {
        active += 1;
        expect(active).toBe(1);
        await new Promise((r) => setTimeout(r, 5));
        order.push(name);
        active -= 1;
        if (fail) throw new Error(name);
      };
    const runs = [
      queue.run(job('first')),
      queue.run(job('sample-1', true)),
      queue.run(job('sample-2')),
      queue.run(job('xid-1'), true),
      queue.run(job('xid-2'), true),
    ];
    const settled = await Promise.allSettled(runs);
    await queue.idle();
    expect(order).toEqual(['first', 'xid-1', 'xid-2', 'sample-1', 'sample-2']);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
  });
});
