/**
 * Runs calls on the actor instance. With `maxConcurrency` 1 calls run one at a time in arrival
 * order, which (one stream per caller, FIFO per stream) gives Ray's per-caller ordering for
 * sync actors; above 1, up to that many calls overlap while their methods await.
 */
import { actorErrorFrom, type ErrorInfoShape, toErrorInfo } from '../../common/errors.js';
import { type CallScope, runInScope } from './call-scope.js';

export interface CallTask {
  method: string;
  args: unknown[];
  done(result: { value: unknown } | { error: ErrorInfoShape }): void;
  /** The call's cancellation state: what `callSignal()` sees while the method runs. */
  scope?: CallScope;
}

function isThenable(v: unknown): v is PromiseLike<unknown> {
  return typeof (v as { then?: unknown } | null)?.then === 'function';
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
