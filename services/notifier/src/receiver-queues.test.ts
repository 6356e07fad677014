import { describe, expect, it } from 'vitest';
import { ReceiverQueues } from './receiver-queues.ts';

/** Lets `depth` microtasks run, then calls `then`. */
function afterMicrotasks(depth: number, then: () => void): void {
  if (depth === 0) then();
  else queueMicrotask(() => afterMicrotasks(depth - 1, then));
}

const macrotask = () => new Promise((r) => setTimeout(r, 0));

describe('ReceiverQueues', () => {
  it('a page queued while the runner is ending (its queue seen empty, not yet settled) is still sent, at every point of that window', async () => {
    const stranded: number[] = [];
    for (let depth = 0; depth <= 12; depth += 1) {
      const sent: string[] = [];
      let firstSent: () => void = () => {};
      const queues: ReceiverQueues<string> = new ReceiverQueues(
        async (_receiver, queue) => {
          while (queue.length > 0) {
            const page = queue.shift()!;
            sent.push(page);
            // The send answered, then the outbox entry is deleted: the step after which the runner sees its queue empty.
            await Promise.resolve();
            if (page === 'first') firstSent();
          }
        },
        () => {},
        () => false,
      );
      await new Promise<void>((resolve) => {
        firstSent = () => {
          resolve();
          // Another step's page arrives as the runner is on its way out.
          afterMicrotasks(depth, () => queues.push('pager', 'second'));
        };
        queues.push('pager', 'first');
      });
      await macrotask();
      await queues.idle();
      if (!sent.includes('second')) stranded.push(depth);
    }
    expect(stranded).toEqual([]);
  });

  it('one runner per receiver: what is pushed while it works is sent by it, in order, and a duplicate is not queued twice', async () => {
    const sent: string[] = [];
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    let runners = 0;
    const queues = new ReceiverQueues<string>(
      async (_receiver, queue) => {
        runners += 1;
        while (queue.length > 0) {
          const page = queue.shift()!;
          await gate;
          sent.push(page);
        }
      },
      () => {},
      () => false,
    );
    queues.push('pager', 'a');
    queues.push('pager', 'b');
    queues.push('pager', 'b', (q) => q === 'b');
    queues.push('pager', 'c');
    release();
    await queues.idle();
    expect(sent).toEqual(['a', 'b', 'c']);
    expect(runners).toBe(1);
  });

  it('a runner that fails is reported, and the next push starts another; a stopped notifier starts none', async () => {
    const errors: string[] = [];
    let stopped = false;
    let calls = 0;
    const queues = new ReceiverQueues<string>(
      async (_receiver, queue) => {
        calls += 1;
        queue.shift();
        if (calls === 1) throw new Error('channel bug');
      },
      (receiver, error) => errors.push(`${receiver}: ${String(error)}`),
      () => stopped,
    );
    queues.push('chat', 'one');
    await queues.idle();
    expect(errors).toEqual(['chat: Error: channel bug']);
    queues.push('chat', 'two');
    await queues.idle();
    expect(calls).toBe(2);
    stopped = true;
    const left = new ReceiverQueues<string>(
      async () => {},
      () => {},
      () => stopped,
    );
    left.push('chat', 'three'); // its runner takes nothing (stopped): ended with the queue not empty, it starts no other
    await left.idle();
  });
});

describe('ReceiverQueues, a runner that takes nothing', () => {
  it('is started again on the next turn, not at once: timers still fire while it keeps ending with work left', async () => {
    let runs = 0;
    let stop = false;
    const queues = new ReceiverQueues<string>(
      async () => {
        runs += 1; // ends at once, taking nothing
      },
      () => {},
      () => stop,
    );
    queues.push('chat', 'stuck');
    await new Promise((r) => setTimeout(r, 0));
    stop = true;
    await queues.idle();
    // A restart without yielding would have run without end before the timer fired.
    expect(runs).toBeGreaterThan(0);
    expect(runs).toBeLessThan(10_000);
  });
});
