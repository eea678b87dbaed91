/**
 * The caller's end of a streamed actor call (Ray's `num_returns="streaming"` generators):
 * `handle.stream('method', ...args)` returns one of these. The actor's method is an async
 * generator (or returns an async iterable); its items arrive here as they are yielded, and
 * iterating takes them in order:
 *
 *   for await (const tokens of engine.options({ signal }).stream('generateStream', request)) …
 *
 * Breaking out of the loop (or `return()`), the call's signal or its deadline cancel the call:
 * the actor's method sees its `callSignal()` abort and its generator is closed (its `finally`
 * runs). An error the method throws ends the iteration with that error, its type kept as for
 * `call`. `next()` after the last item resolves `{ done: true, value }` with the generator's
 * return value.
 *
 * Flow control: the actor sends at most `STREAM_WINDOW_ITEMS` items ahead of what the caller has
 * taken, and stops pulling from its generator until the caller takes more. A stream nobody
 * iterates nor closes therefore holds its call open on the actor (as an unconsumed generator
 * does in Ray): iterate it to the end, break out of it, or give the call a signal.
 */

/** Items an actor may send ahead of what the caller has taken. */
export const STREAM_WINDOW_ITEMS = 32;
/** The caller grants credit back in batches of this many items taken. */
export const STREAM_CREDIT_BATCH = 8;

export interface StreamedCallHooks {
  /** The consumer took `count` more items (the connection turns them into credit). */
  consumed(count: number): void;
  /** The consumer closed the stream before its end: cancel the call. */
  cancel(): void;
}

type End<R> = { value: R } | { error: Error };

export class StreamedCall<Y, R = unknown> implements AsyncIterator<Y, R> {
  private items: Y[] = [];
  private head = 0;
  private end?: End<R>;
  /** The consumer saw the end (or closed the stream): later `next()` calls are done. */
  private over = false;
  private waiters: Array<() => void> = [];

  constructor(private readonly hooks: StreamedCallHooks) {}

  /** The connection delivers an item. */
  push(item: Y): void {
    if (this.over || this.end) return;
    this.items.push(item);
    this.wake();
  }

  /** The connection delivers the call's last reply: the return value. */
  finish(value: R): void {
    if (this.end) return;
    this.end = { value };
    this.wake();
  }

  /** The call failed (the method threw, the actor died, the call was cancelled). */
  fail(error: Error): void {
    if (this.end) return;
    this.end = { error };
    this.wake();
  }

  /** Items received and not yet taken. */
  get buffered(): number {
    return this.items.length - this.head;
  }

  async next(): Promise<IteratorResult<Y, R>> {
    for (;;) {
      if (this.head < this.items.length) {
        const item = this.items[this.head];
        this.items[this.head++] = undefined as Y;
        if (this.head === this.items.length) {
          this.items = [];
          this.head = 0;
        }
        this.hooks.consumed(1);
        return { value: item, done: false };
      }
      if (this.over) return { value: undefined as R, done: true };
      if (this.end) {
        this.over = true;
        if ('error' in this.end) throw this.end.error;
        return { value: this.end.value, done: true };
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Closes the stream: a call still running is cancelled and what it sent is dropped. */
  async return(value?: R): Promise<IteratorResult<Y, R>> {
    if (!this.over) {
      this.over = true;
      this.items = [];
      this.head = 0;
      if (!this.end) this.hooks.cancel();
      this.wake();
    }
    return { value: value as R, done: true };
  }

  async throw(err?: unknown): Promise<IteratorResult<Y, R>> {
    await this.return();
    throw err;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
