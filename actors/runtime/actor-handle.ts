/**
 * A reference to a remote actor. `call('method', ...args)` returns a promise of the method's
 * result; `remote.method(...args)` is the same with types. Handles can be passed to other
 * actors as arguments or results: they arrive as live handles there.
 */
import type { ActorConnection } from './actor-connection.js';
import { type HandleDescriptor, registerHandleClass } from './codec.js';

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

/** `handle.remote.inc(1)`: every method of T, returning a promise. */
export type RemoteMethods<T> = {
  [K in MethodName<T>]: (...args: MethodArgs<T, K>) => Promise<MethodResult<T, K>>;
};

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

  describe(): HandleDescriptor {
    return { ...this.descriptor };
  }

  toString(): string {
    return `ActorHandle(${this.descriptor.className}, ${this.descriptor.actorId})`;
  }
}

registerHandleClass(ActorHandle);
