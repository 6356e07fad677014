/**
 * One piece of work shared by every request that asks for it: while it is under way (a slow
 * engine, a long read of a topic) every request waits for the same one; once done, it serves for
 * `reuseMs`; a failure is not kept, so the next request tries again. Keyed by object (a source, a
 * bus), held weakly.
 */
export class SharedAnswer<K extends object, T> {
  private readonly entries = new WeakMap<K, { at: number; answer: Promise<T>; settled: boolean }>();

  constructor(private readonly reuseMs: number) {}

  get(key: K, now: number, make: () => Promise<T>): Promise<T> {
    const last = this.entries.get(key);
    if (last && (!last.settled || (now - last.at < this.reuseMs && now >= last.at))) return last.answer;
    const entry = { at: now, answer: make(), settled: false };
    this.entries.set(key, entry);
    entry.answer.then(
      () => {
        entry.settled = true;
      },
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return entry.answer;
  }

  /** The next request does the work again (what it answered has changed). */
  forget(key: K): void {
    this.entries.delete(key);
  }
}
