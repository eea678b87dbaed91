/**
 * Runs calls on the actor instance. With `maxConcurrency` 1 calls run one at a time in arrival
 * order, which (one stream per caller, FIFO per stream) gives Ray's per-caller ordering for
 * sync actors; above 1, up to that many calls overlap while their methods await.
 *
 * A streamed call (`handle.stream`) runs a method that returns an async iterable (an async
 * generator): the executor pulls its items one at a time into the call's sink, waiting while
 * the sink says so (the caller's flow control), and holds the call's concurrency slot until the
 * iterable ends, as a Ray generator task holds its actor.
 */
import { actorErrorFrom, type ErrorInfoShape, toErrorInfo } from '../common/errors.js';
import { type CallScope, runInScope } from './call-scope.js';

export interface CallTask {
  method: string;
  args: unknown[];
  /** The call's end: its result (a streamed call's: the iterable's return value) or its error. */
  done(result: { value: unknown } | { error: ErrorInfoShape }): void;
  /** The call's cancellation state: what `callSignal()` sees while the method runs. */
  scope?: CallScope;
  /** Set for a streamed call: where its items go. */
  stream?: StreamSink;
}

/** Where a streamed call's items go. */
export interface StreamSink {
  /**
   * Takes one item; a promise it returns is waited for before the next item is pulled (the
   * caller has no credit left). It throws when the item cannot be sent, which ends the call.
   */
  item(value: unknown): void | Promise<void>;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
}

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof (v as { [Symbol.asyncIterator]?: unknown } | null)?.[Symbol.asyncIterator] === 'function';
}

/** An async generator object (what calling an `async *method()` returns). */
function isAsyncGenerator(v: unknown): boolean {
  return (
    isAsyncIterable(v) &&
    typeof (v as { next?: unknown }).next === 'function' &&
    typeof (v as { return?: unknown }).return === 'function'
  );
}

/**
 * A WebAssembly trap (out-of-bounds access, an aborted module) leaves that module's memory in
 * a state nothing can trust: tfjs-wasm, for one, aborts on a failed allocation and every later
 * call fails or computes on garbage. Like a segfault in native code, it ends the process.
 */
export function isProcessFatal(err: unknown): boolean {
  return err instanceof wasmRuntimeError;
}
// The WebAssembly namespace is a Node global that this project's type libraries do not declare.
const wasmRuntimeError = (globalThis as unknown as { WebAssembly: { RuntimeError: typeof Error } })
  .WebAssembly.RuntimeError;

export class CallExecutor {
  private queue: CallTask[] = [];
  private head = 0;
  private running = 0;
  private idleWaiters: Array<() => void> = [];

  /**
   * `onFatal`: called instead of replying when a method fails with an error the process cannot
   * survive (isProcessFatal); the host exits there, so the caller sees the actor die (and the
   * runtime restarts it) rather than an error from an actor that is no longer sound.
   */
  constructor(
    private readonly instance: Record<string, unknown>,
    private readonly className: string,
    private readonly maxConcurrency: number,
    private readonly onFatal?: (err: unknown, method: string) => void,
  ) {}

  submit(task: CallTask): void {
    this.queue.push(task);
    if (this.running < this.maxConcurrency) this.pump();
  }

  get busy(): number {
    return this.running + this.queue.length - this.head;
  }

  /** Resolves when every submitted call has finished. */
  idle(): Promise<void> {
    if (this.busy === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.running < this.maxConcurrency && this.head < this.queue.length) {
      const task = this.queue[this.head++];
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.running++;
      const cancelled = task.scope?.cancelReason;
      if (cancelled) {
        // Cancelled while it waited for its turn: it never runs.
        this.finish(task, { error: toErrorInfo(cancelled) });
        continue;
      }
      let result: unknown;
      try {
        result = task.scope ? runInScope(task.scope, () => this.invoke(task)) : this.invoke(task);
      } catch (err) {
        this.finish(task, { error: this.wrap(task, err) });
        continue;
      }
      if (task.stream) {
        void this.drive(task, task.stream, result);
        continue;
      }
      if (isAsyncGenerator(result)) {
        this.finish(task, {
          error: this.wrap(
            task,
            new TypeError(
              `${this.className}.${task.method} is a streaming method (an async generator): call it with handle.stream('${task.method}', …)`,
            ),
          ),
        });
        continue;
      }
      if (isThenable(result)) {
        result.then(
          (value) => {
            this.finish(task, { value });
            this.pump();
          },
          (err: unknown) => {
            this.finish(task, { error: this.wrap(task, err) });
            this.pump();
          },
        );
      } else {
        this.finish(task, { value: result });
      }
    }
  }

  /** Runs a streamed call to its end: items into `sink`, then the return value or the error. */
  private async drive(task: CallTask, sink: StreamSink, result: unknown): Promise<void> {
    let outcome: { value: unknown } | { error: ErrorInfoShape };
    try {
      const source = isThenable(result) ? await result : result;
      if (!isAsyncIterable(source)) {
        throw new TypeError(
          `${this.className}.${task.method} returned ${describeValue(source)}, not an async iterable: ` +
            `call it with handle.call('${task.method}', …), or make it an async generator (async *${task.method}())`,
        );
      }
      outcome = { value: await this.iterate(task, sink, source) };
    } catch (err) {
      outcome = { error: this.wrap(task, err) };
    }
    this.finish(task, outcome);
    this.pump();
  }

  private async iterate(task: CallTask, sink: StreamSink, source: AsyncIterable<unknown>): Promise<unknown> {
    // The generator's body runs inside next(): in the call's scope, so callSignal() works there.
    const inScope = <R>(fn: () => R): R => (task.scope ? runInScope(task.scope, fn) : fn());
    const iterator = inScope(() => source[Symbol.asyncIterator]());
    let ended = false;
    try {
      for (;;) {
        const cancelled = task.scope?.cancelReason;
        if (cancelled) throw cancelled;
        const step = await inScope(() => iterator.next());
        if (step.done) {
          ended = true;
          return step.value;
        }
        await sink.item(step.value);
      }
    } finally {
      // Cancelled, or an item could not be sent: close the generator so its `finally` runs (a
      // generator that threw is closed already, and return() is a no-op on it).
      if (!ended) await inScope(() => iterator.return?.(undefined))?.catch(() => {});
    }
  }

  private invoke(task: CallTask): unknown {
    const fn = this.instance[task.method];
    if (typeof fn !== 'function' || task.method in Object.prototype || task.method.startsWith('__')) {
      throw new TypeError(
        `${this.className} has no method '${task.method}'; its methods are: ${publicMethods(this.instance).join(', ') || '(none)'}`,
      );
    }
    return (fn as (...a: unknown[]) => unknown).apply(this.instance, task.args);
  }

  private wrap(task: CallTask, err: unknown): ErrorInfoShape {
    if (this.onFatal && isProcessFatal(err)) this.onFatal(err, task.method);
    return toErrorInfo(actorErrorFrom(err, `${this.className}.${task.method}`));
  }

  private finish(task: CallTask, result: { value: unknown } | { error: ErrorInfoShape }): void {
    this.running--;
    if (task.scope) task.scope.finished = true;
    task.done(result);
    if (this.busy === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }
}

function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? `an object (${v.constructor?.name ?? 'Object'})` : `a ${typeof v}`;
}

/** Names a caller may call: functions on the instance's prototype chain, minus Object's. */
export function publicMethods(instance: object): string[] {
  const names = new Set<string>();
  for (
    let proto = Object.getPrototypeOf(instance);
    proto && proto !== Object.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      if (
        name !== 'constructor' &&
        !name.startsWith('__') &&
        typeof (instance as Record<string, unknown>)[name] === 'function'
      ) {
        names.add(name);
      }
    }
  }
  for (const [name, value] of Object.entries(instance)) if (typeof value === 'function') names.add(name);
  return [...names].sort();
}
