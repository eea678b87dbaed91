import { describe, expect, it } from 'vitest';
import type { ErrorInfoShape } from '../common/errors.js';
import { CallCancelledError } from '../common/errors.js';
import { CallExecutor, type CallTask, publicMethods } from './call-executor.js';
import { CallScope, callSignal } from './call-scope.js';
import { StreamedCall } from './streamed-call.js';

type Result = { value: unknown } | { error: ErrorInfoShape };

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Submits a call and gives a promise of its result. */
function call(executor: CallExecutor, method: string, ...args: unknown[]): Promise<Result> {
  return new Promise((resolve) => {
    const task: CallTask = { method, args, done: resolve };
    executor.submit(task);
  });
}

const tick = (ms = 0) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const fieldsOf = (error: ErrorInfoShape): Record<string, unknown> =>
  error.fieldsJson ? (JSON.parse(error.fieldsJson) as Record<string, unknown>) : {};

class Recorder {
  log: string[] = [];
  active = 0;
  maxActive = 0;

  async work(id: number, ms: number): Promise<number> {
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    this.log.push(`start ${id}`);
    await tick(ms);
    this.log.push(`end ${id}`);
    this.active--;
    return id;
  }

  sync(id: number): number {
    this.log.push(`sync ${id}`);
    return id * 10;
  }
}

class Thrower {
  boom(): never {
    throw new RangeError('out of range');
  }
  async asyncBoom(): Promise<never> {
    await tick();
    const err = new TypeError('bad type');
    throw err;
  }
  throwString(): never {
    throw 'just a string';
  }
  ok(): string {
    return 'fine';
  }
  __secret(): string {
    return 'hidden';
  }
}

describe('CallExecutor', () => {
  it('with maxConcurrency 1 runs async calls strictly in order, one at a time', async () => {
    const instance = new Recorder();
    const executor = new CallExecutor(instance as unknown as Record<string, unknown>, 'Recorder', 1);
    const results = [
      call(executor, 'work', 1, 15),
      call(executor, 'work', 2, 1),
      call(executor, 'sync', 3),
      call(executor, 'work', 4, 5),
    ];
    expect(await Promise.all(results)).toEqual([{ value: 1 }, { value: 2 }, { value: 30 }, { value: 4 }]);
    expect(instance.log).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'sync 3', 'start 4', 'end 4']);
    expect(instance.maxActive).toBe(1);
  });

  it('with maxConcurrency 1 completes calls in submission order', async () => {
    const instance = new Recorder();
    const executor = new CallExecutor(instance as unknown as Record<string, unknown>, 'Recorder', 1);
    const order: number[] = [];
    const all = [20, 1, 10, 0, 5].map((ms, id) =>
      call(executor, 'work', id, ms).then(() => {
        order.push(id);
      }),
    );
    await Promise.all(all);
    expect(order).toEqual([0, 1, 2, 3, 4]);
  });

  it('with maxConcurrency 3 overlaps at most 3 calls', async () => {
    const instance = new Recorder();
    const executor = new CallExecutor(instance as unknown as Record<string, unknown>, 'Recorder', 3);
    const results = Array.from({ length: 10 }, (_, i) => call(executor, 'work', i, 5 + (i % 3)));
    await tick(1);
    expect(instance.active).toBe(3);
    expect(executor.busy).toBe(10);
    expect(await Promise.all(results)).toEqual(Array.from({ length: 10 }, (_, i) => ({ value: i })));
    expect(instance.maxActive).toBe(3);
    // Calls start in arrival order.
    const starts = instance.log.filter((l) => l.startsWith('start')).map((l) => Number(l.split(' ')[1]));
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
  });

  it('runs sync methods immediately and returns their value', async () => {
    const executor = new CallExecutor(new Recorder() as unknown as Record<string, unknown>, 'Recorder', 1);
    let result: Result | undefined;
    executor.submit({ method: 'sync', args: [4], done: (r) => (result = r) });
    expect(result).toEqual({ value: 40 });
    expect(executor.busy).toBe(0);
  });

  it('a throwing method yields an ActorError carrying the original error name', async () => {
    const executor = new CallExecutor(new Thrower() as unknown as Record<string, unknown>, 'Thrower', 1);
    const r = await call(executor, 'boom');
    expect('error' in r).toBe(true);
    const { error } = r as { error: ErrorInfoShape };
    expect(error.name).toBe('ActorError');
    expect(error.message).toContain('Thrower.boom');
    expect(error.message).toContain('RangeError');
    expect(error.message).toContain('out of range');
    const fields = fieldsOf(error);
    expect(fields.remoteName).toBe('RangeError');
    expect(String(fields.remoteStack)).toContain('out of range');
    expect(error.cause?.name).toBe('RangeError');
    expect(error.cause?.message).toBe('out of range');
  });

  it('a rejecting async method yields an ActorError too', async () => {
    const executor = new CallExecutor(new Thrower() as unknown as Record<string, unknown>, 'Thrower', 2);
    const r = (await call(executor, 'asyncBoom')) as { error: ErrorInfoShape };
    expect(r.error.name).toBe('ActorError');
    expect(r.error.message).toContain('Thrower.asyncBoom');
    expect(fieldsOf(r.error).remoteName).toBe('TypeError');
  });

  it('a thrown non-Error becomes an ActorError with remote name Error', async () => {
    const executor = new CallExecutor(new Thrower() as unknown as Record<string, unknown>, 'Thrower', 1);
    const r = (await call(executor, 'throwString')) as { error: ErrorInfoShape };
    expect(r.error.name).toBe('ActorError');
    expect(r.error.message).toContain('just a string');
    expect(fieldsOf(r.error).remoteName).toBe('Error');
  });

  it('keeps running later calls after one throws', async () => {
    const executor = new CallExecutor(new Thrower() as unknown as Record<string, unknown>, 'Thrower', 1);
    const results = await Promise.all([
      call(executor, 'boom'),
      call(executor, 'asyncBoom'),
      call(executor, 'ok'),
    ]);
    expect('error' in results[0]).toBe(true);
    expect('error' in results[1]).toBe(true);
    expect(results[2]).toEqual({ value: 'fine' });
  });

  it("an unknown method's error lists the public methods", async () => {
    const instance = new Thrower();
    const executor = new CallExecutor(instance as unknown as Record<string, unknown>, 'Thrower', 1);
    const r = (await call(executor, 'nope')) as { error: ErrorInfoShape };
    expect(r.error.name).toBe('ActorError');
    expect(fieldsOf(r.error).remoteName).toBe('TypeError');
    expect(r.error.message).toContain("Thrower has no method 'nope'");
    expect(r.error.message).toContain(publicMethods(instance).join(', '));
    expect(r.error.message).toContain('asyncBoom, boom, ok, throwString');
    expect(r.error.message).not.toContain('__secret');
  });

  it("says '(none)' when the instance has no methods", async () => {
    const executor = new CallExecutor({}, 'Empty', 1);
    const r = (await call(executor, 'x')) as { error: ErrorInfoShape };
    expect(r.error.message).toContain('(none)');
  });

  it('refuses methods starting with __ and constructor', async () => {
    const executor = new CallExecutor(new Thrower() as unknown as Record<string, unknown>, 'Thrower', 1);
    for (const method of ['__secret', 'constructor', '__proto__', '__defineGetter__']) {
      const r = (await call(executor, method)) as { error: ErrorInfoShape };
      expect('error' in r, method).toBe(true);
      expect(r.error.message).toContain(`has no method '${method}'`);
    }
  });

  // Object.prototype's members are not actor methods, even though every instance has them.
  it('refuses Object.prototype methods that publicMethods leaves out (toString, hasOwnProperty, valueOf)', async () => {
    const instance = new Thrower();
    const executor = new CallExecutor(instance as unknown as Record<string, unknown>, 'Thrower', 1);
    for (const method of ['toString', 'hasOwnProperty', 'valueOf']) {
      expect(publicMethods(instance)).not.toContain(method);
      const r = await call(executor, method, 'x');
      expect('error' in r, method).toBe(true);
    }
  });

  it('idle() resolves at once when nothing runs, and after everything finished otherwise', async () => {
    const instance = new Recorder();
    const executor = new CallExecutor(instance as unknown as Record<string, unknown>, 'Recorder', 2);
    await executor.idle();
    const done: number[] = [];
    for (let i = 0; i < 5; i++) call(executor, 'work', i, 3).then(() => done.push(i));
    await executor.idle();
    expect(instance.log.filter((l) => l.startsWith('end'))).toHaveLength(5);
    expect(executor.busy).toBe(0);
    await tick();
    expect(done.sort()).toEqual([0, 1, 2, 3, 4]);
  });

  it('idle() waits for calls blocked on a promise', async () => {
    const gate = deferred<string>();
    const executor = new CallExecutor({ wait: () => gate.promise }, 'Gate', 1);
    const r = call(executor, 'wait');
    let idle = false;
    const idlePromise = executor.idle().then(() => {
      idle = true;
    });
    await tick(5);
    expect(idle).toBe(false);
    expect(executor.busy).toBe(1);
    gate.resolve('open');
    await idlePromise;
    expect(await r).toEqual({ value: 'open' });
  });

  it('passes arguments and this', async () => {
    class Adder {
      base = 100;
      add(a: number, b: number): number {
        return this.base + a + b;
      }
    }
    const executor = new CallExecutor(new Adder() as unknown as Record<string, unknown>, 'Adder', 1);
    expect(await call(executor, 'add', 1, 2)).toEqual({ value: 103 });
  });
});

describe('publicMethods', () => {
  it('lists prototype-chain and own function properties, sorted, without Object, constructor or __*', () => {
    class Base {
      inherited(): void {}
      __hidden(): void {}
    }
    class Child extends Base {
      own = () => 1;
      data = 5;
      zeta(): void {}
      alpha(): void {}
      get accessor(): number {
        return 1;
      }
    }
    expect(publicMethods(new Child())).toEqual(['alpha', 'inherited', 'own', 'zeta']);
  });

  it('is empty for a plain object with no functions', () => {
    expect(publicMethods({ a: 1 })).toEqual([]);
  });
});

/** A streamed call on the executor: the items its sink took, and its end. */
function streamCall(
  executor: CallExecutor,
  method: string,
  args: unknown[],
  o: { scope?: CallScope; item?: (value: unknown) => void | Promise<void> } = {},
) {
  const items: unknown[] = [];
  const ended = new Promise<Result>((resolve) => {
    executor.submit({
      method,
      args,
      done: resolve,
      ...(o.scope ? { scope: o.scope } : {}),
      stream: {
        item: (value) => {
          items.push(value);
          return o.item?.(value);
        },
      },
    });
  });
  return { items, ended };
}

class Generators {
  closed: string[] = [];
  signals: (AbortSignal | undefined)[] = [];

  async *numbers(n: number): AsyncGenerator<number, string> {
    for (let i = 0; i < n; i++) yield i;
    return `sent ${n}`;
  }

  async *watched(tag: string): AsyncGenerator<number, void> {
    this.signals.push(callSignal());
    try {
      for (let i = 0; ; i++) {
        yield i;
        await tick(1);
      }
    } finally {
      this.closed.push(tag);
    }
  }

  async *breaks(): AsyncGenerator<number, void> {
    yield 1;
    throw new RangeError('item 2 is out of range');
  }

  async iterableLater(): Promise<AsyncIterable<number>> {
    await tick();
    return this.numbers(2);
  }

  plain(): number {
    return 1;
  }
}

describe('CallExecutor: streamed calls', () => {
  it('passes every item to the sink in order and ends with the return value', async () => {
    const executor = new CallExecutor(new Generators() as never, 'Generators', 10);
    const { items, ended } = streamCall(executor, 'numbers', [5]);
    expect(await ended).toEqual({ value: 'sent 5' });
    expect(items).toEqual([0, 1, 2, 3, 4]);
    // A method that returns a promise of an iterable streams too.
    const later = streamCall(executor, 'iterableLater', []);
    expect(await later.ended).toEqual({ value: 'sent 2' });
    expect(later.items).toEqual([0, 1]);
  });

  it("waits for the sink's promise before pulling the next item (flow control)", async () => {
    const executor = new CallExecutor(new Generators() as never, 'Generators', 10);
    const credit = deferred();
    const { items, ended } = streamCall(executor, 'numbers', [3], {
      item: (v) => (v === 0 ? credit.promise : undefined),
    });
    await tick(5);
    expect(items).toEqual([0]);
    credit.resolve();
    expect(await ended).toEqual({ value: 'sent 3' });
    expect(items).toEqual([0, 1, 2]);
  });

  it('holds its concurrency slot until the stream ends', async () => {
    const executor = new CallExecutor(new Generators() as never, 'Generators', 1);
    const credit = deferred();
    const stream = streamCall(executor, 'numbers', [2], { item: () => credit.promise });
    const after = call(executor, 'plain');
    await tick(5);
    expect(executor.busy).toBe(2);
    credit.resolve();
    await stream.ended;
    expect(await after).toEqual({ value: 1 });
  });

  it('a cancelled stream sees callSignal() abort and its generator is closed', async () => {
    const instance = new Generators();
    const executor = new CallExecutor(instance as never, 'Generators', 10);
    const scope = new CallScope('watched', 1);
    const { items, ended } = streamCall(executor, 'watched', ['w'], { scope });
    await tick(10);
    expect(items.length).toBeGreaterThan(0);
    scope.cancel(new CallCancelledError('the caller cancelled watched'));
    const result = await ended;
    expect('error' in result && result.error.name).toBe('ActorError');
    expect(instance.closed).toEqual(['w']);
    expect(instance.signals[0]?.aborted).toBe(true);
  });

  it('a sink that cannot send an item ends the call with that error and closes the generator', async () => {
    const instance = new Generators();
    const executor = new CallExecutor(instance as never, 'Generators', 10);
    const { ended } = streamCall(executor, 'watched', ['s'], {
      item: () => {
        throw new TypeError('an item of watched cannot be sent back');
      },
    });
    const result = await ended;
    expect('error' in result && result.error.message).toMatch(/cannot be sent back/);
    expect(instance.closed).toEqual(['s']);
  });

  it("ends with the generator's error after the items before it", async () => {
    const executor = new CallExecutor(new Generators() as never, 'Generators', 10);
    const { items, ended } = streamCall(executor, 'breaks', []);
    const result = await ended;
    expect(items).toEqual([1]);
    expect('error' in result && result.error.message).toMatch(/item 2 is out of range/);
  });

  it('refuses a plain call of a generator method and a streamed call of a plain one, naming the other', async () => {
    const executor = new CallExecutor(new Generators() as never, 'Generators', 10);
    const plain = await call(executor, 'numbers', 2);
    expect('error' in plain && plain.error.message).toMatch(/streaming method.*handle\.stream\('numbers'/);
    const streamed = await streamCall(executor, 'plain', []).ended;
    expect('error' in streamed && streamed.error.message).toMatch(
      /Generators\.plain returned a number, not an async iterable/,
    );
  });
});

describe('StreamedCall', () => {
  it('hands out items in order, reports what was taken, and ends with the value or the error once', async () => {
    const taken: number[] = [];
    const s = new StreamedCall<string, number>({ consumed: (n) => taken.push(n), cancel: () => {} });
    const pending = s.next();
    s.push('a');
    s.push('b');
    expect(await pending).toEqual({ value: 'a', done: false });
    s.finish(7);
    expect(await s.next()).toEqual({ value: 'b', done: false });
    expect(await s.next()).toEqual({ value: 7, done: true });
    expect(await s.next()).toEqual({ value: undefined, done: true });
    expect(taken).toEqual([1, 1]);
    const failing = new StreamedCall<string>({ consumed: () => {}, cancel: () => {} });
    failing.fail(new RangeError('gone'));
    await expect(failing.next()).rejects.toThrow(RangeError);
    expect((await failing.next()).done).toBe(true);
  });

  it('cancels the call when closed before its end, not after', async () => {
    let cancelled = 0;
    const open = new StreamedCall<number>({ consumed: () => {}, cancel: () => cancelled++ });
    open.push(1);
    for await (const _ of open) break;
    expect(cancelled).toBe(1);
    const ended = new StreamedCall<number>({ consumed: () => {}, cancel: () => cancelled++ });
    ended.finish(undefined);
    await ended.return();
    expect(cancelled).toBe(1);
  });
});
