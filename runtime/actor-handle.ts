/**
 * A reference to a remote actor. `call('method', ...args)` returns a promise of the method's
 * result; `remote.method(...args)` is the same with types; `stream('method', ...args)` calls an
 * async-generator method and iterates its items as they come (streamed-call.ts);
 * `options({ deadlineMs, signal })` gives all three with a per-call deadline or cancellation.
 * Handles can be passed to other actors as arguments or results: they arrive as live handles
 * there.
 */
import type { ActorConnection } from './actor-connection.js';
import { type CallOptions, compileCallOptions } from './call-options.js';
import { type HandleDescriptor, registerHandleClass } from './codec.js';
import type { StreamedCall } from './streamed-call.js';

type AnyFunction = (...args: never[]) => unknown;

/** Method names of T (any string when T is not known). */
export type MethodName<T> = unknown extends T
  ? string
  : { [K in keyof T]: T[K] extends AnyFunction ? K : never }[keyof T] & string;

export type MethodArgs<T, K> = unknown extends T
  ? unknown[]
  : K extends keyof T
    ? T[K] extends (...args: infer A) => unknown
      ? A
      : never
    : never;

export type MethodResult<T, K> = unknown extends T
  ? unknown
  : K extends keyof T
    ? T[K] extends (...args: never[]) => infer R
      ? Awaited<R>
      : never
    : never;

/** Methods of T that stream: they return an async iterable (async generators do). */
export type StreamMethodName<T> = unknown extends T
  ? string
  : {
      [K in keyof T]: T[K] extends (...args: never[]) => AsyncIterable<unknown> ? K : never;
    }[keyof T] &
      string;

/** What a streaming method yields. */
export type StreamItem<T, K> = unknown extends T
  ? unknown
  : K extends keyof T
    ? T[K] extends (...args: never[]) => AsyncIterable<infer Y>
      ? Y
      : never
    : never;

/** What a streaming method returns at its end (an async generator's return value). */
export type StreamReturn<T, K> = unknown extends T
  ? unknown
  : K extends keyof T
    ? T[K] extends (...args: never[]) => AsyncGenerator<unknown, infer R, never>
      ? R
      : undefined
    : never;

/** `handle.remote.inc(1)`: every method of T, returning a promise. */
export type RemoteMethods<T> = {
  [K in MethodName<T>]: (...args: MethodArgs<T, K>) => Promise<MethodResult<T, K>>;
};

/** What `handle.options(...)` returns: `call`, `stream` and `remote` with those options on every call. */
export interface ActorCallView<T = unknown> {
  call<K extends MethodName<T>>(method: K, ...args: MethodArgs<T, K>): Promise<MethodResult<T, K>>;
  stream<K extends StreamMethodName<T>>(
    method: K,
    ...args: MethodArgs<T, K>
  ): StreamedCall<StreamItem<T, K>, StreamReturn<T, K>>;
  readonly remote: RemoteMethods<T>;
}

function remoteProxy<T>(call: (method: string, args: unknown[]) => Promise<unknown>): RemoteMethods<T> {
  return new Proxy({} as RemoteMethods<T>, {
    get: (_target, method) =>
      typeof method === 'string' ? (...args: unknown[]) => call(method, args) : undefined,
  });
}

export interface HandleRuntime {
  connectionFor(descriptor: HandleDescriptor): ActorConnection;
}

export class ActorHandle<T = unknown> {
  private connection?: ActorConnection;
  private remoteProxy?: RemoteMethods<T>;

  constructor(
    private readonly runtime: HandleRuntime,
    private readonly descriptor: HandleDescriptor,
  ) {}

  get actorId(): string {
    return this.descriptor.actorId;
  }

  get className(): string {
    return this.descriptor.className;
  }

  /** The actor's name, or '' for an anonymous actor. */
  get name(): string {
    return this.descriptor.name;
  }

  call<K extends MethodName<T>>(method: K, ...args: MethodArgs<T, K>): Promise<MethodResult<T, K>> {
    this.connection ??= this.runtime.connectionFor(this.descriptor);
    return this.connection.call(method, args) as Promise<MethodResult<T, K>>;
  }

  /**
   * Calls an async-generator method and iterates what it yields as it comes (Ray's streaming
   * generators); breaking out of the loop cancels the call. See streamed-call.ts.
   *
   *   for await (const tokens of engine.stream('generateStream', request)) send(tokens);
   */
  stream<K extends StreamMethodName<T>>(
    method: K,
    ...args: MethodArgs<T, K>
  ): StreamedCall<StreamItem<T, K>, StreamReturn<T, K>> {
    this.connection ??= this.runtime.connectionFor(this.descriptor);
    return this.connection.stream(method, args) as StreamedCall<StreamItem<T, K>, StreamReturn<T, K>>;
  }

  get remote(): RemoteMethods<T> {
    this.remoteProxy ??= new Proxy({} as RemoteMethods<T>, {
      get: (_target, method) =>
        typeof method === 'string'
          ? (...args: unknown[]) =>
              this.call(method as MethodName<T>, ...(args as MethodArgs<T, MethodName<T>>))
          : undefined,
    });
    return this.remoteProxy;
  }

  /**
   * This handle with per-call options (Ray's `.options()`): each call made through the view
   * gets `deadlineMs` (from the moment it is made) and `signal`. When either fires the call
   * rejects at once with `DeadlineExceededError` / `CallCancelledError` and the actor's method
   * sees its `callSignal()` abort. Options are checked here, once; reuse the view freely.
   *
   *   await engine.options({ deadlineMs: 30_000, signal }).remote.generate(request);
   */
  options(options: CallOptions): ActorCallView<T> {
    const compiled = compileCallOptions(options);
    const call = (method: string, args: readonly unknown[]): Promise<unknown> => {
      this.connection ??= this.runtime.connectionFor(this.descriptor);
      return this.connection.call(method, args, compiled);
    };
    return {
      call: <K extends MethodName<T>>(method: K, ...args: MethodArgs<T, K>) =>
        call(method, args) as Promise<MethodResult<T, K>>,
      stream: <K extends StreamMethodName<T>>(method: K, ...args: MethodArgs<T, K>) => {
        this.connection ??= this.runtime.connectionFor(this.descriptor);
        return this.connection.stream(method, args, compiled) as StreamedCall<
          StreamItem<T, K>,
          StreamReturn<T, K>
        >;
      },
      remote: remoteProxy<T>(call),
    };
  }

  describe(): HandleDescriptor {
    return { ...this.descriptor };
  }

  toString(): string {
    return `ActorHandle(${this.descriptor.className}, ${this.descriptor.actorId})`;
  }
}

registerHandleClass(ActorHandle);
