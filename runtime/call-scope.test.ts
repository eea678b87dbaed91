import { describe, expect, it } from 'vitest';
import { CallCancelledError, DeadlineExceededError, type ErrorInfoShape } from '../common/errors.js';
import { CallExecutor } from './call-executor.js';
import { CallScope, callSignal, cancelError } from './call-scope.js';

type Result = { value: unknown } | { error: ErrorInfoShape };

const tick = (ms = 0) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Submits a call with a scope; gives the scope and a promise of the result. */
function call(executor: CallExecutor, method: string, ...args: unknown[]) {
  const scope = new CallScope(method, 1);
  const result = new Promise<Result>((resolve) => executor.submit({ method, args, done: resolve, scope }));
  return { scope, result };
}

/** Methods that report what callSignal() shows them. */
class Watcher {
  seen: Array<AbortSignal | undefined> = [];
  runs = 0;
  later?: Promise<AbortSignal | undefined>;

  syncSignal(): boolean {
    this.seen.push(callSignal());
    return callSignal() !== undefined;
  }

  /** Waits until its signal aborts, then reports the reason. */
  async untilAborted(): Promise<string> {
    this.runs++;
    await tick();
    const signal = callSignal()!;
    this.seen.push(signal);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    return (signal.reason as Error).name;
  }

  /** Leaves work behind that looks for a signal after the call replied. */
  leaveWorkBehind(): string {
    this.later = tick(5).then(() => callSignal());
    return 'done';
  }

  async slow(ms: number): Promise<number> {
    this.runs++;
    await tick(ms);
    return ms;
  }
}

describe('callSignal', () => {
  it('is undefined outside an actor call', () => {
    expect(callSignal()).toBeUndefined();
  });

  it('gives a sync method the signal of its call', async () => {
    const watcher = new Watcher();
    const executor = new CallExecutor(watcher as never, 'Watcher', 1);
    const { result } = call(executor, 'syncSignal');
    expect(await result).toEqual({ value: true });
    expect(watcher.seen[0]).toBeInstanceOf(AbortSignal);
  });

  it('follows an async method across awaits and aborts with the cancel reason', async () => {
    const watcher = new Watcher();
    const executor = new CallExecutor(watcher as never, 'Watcher', 10);
    const a = call(executor, 'untilAborted');
    const b = call(executor, 'untilAborted');
    await tick(10);
    expect(watcher.seen).toHaveLength(2);
    expect(watcher.seen[0]).not.toBe(watcher.seen[1]);
    b.scope.cancel(cancelError('deadline', b.scope, 'actor-1'));
    expect(await b.result).toEqual({ value: 'DeadlineExceededError' });
    expect(watcher.seen[0]!.aborted).toBe(false);
    a.scope.cancel(cancelError('caller-gone', a.scope, 'actor-1'));
    expect(await a.result).toEqual({ value: 'CallCancelledError' });
  });

  it('hands out an already aborted signal when the call was cancelled before it asked', async () => {
    const scope = new CallScope('m', 7);
    scope.cancel(cancelError('caller', scope, 'actor-1'));
    expect(scope.signal.aborted).toBe(true);
    expect(scope.signal.reason).toBeInstanceOf(CallCancelledError);
    expect((scope.signal.reason as CallCancelledError).fields).toMatchObject({
      actorId: 'actor-1',
      method: 'm',
      callId: 7,
      reason: 'caller',
    });
  });

  it('is undefined in work a call left behind once it replied', async () => {
    const watcher = new Watcher();
    const executor = new CallExecutor(watcher as never, 'Watcher', 1);
    const { result, scope } = call(executor, 'leaveWorkBehind');
    expect(await result).toEqual({ value: 'done' });
    expect(await watcher.later).toBeUndefined();
    // A cancel arriving after the reply changes nothing.
    scope.cancel(cancelError('caller', scope, 'a'));
    expect(scope.cancelled).toBe(false);
  });

  it('never runs a queued call that was cancelled while it waited', async () => {
    const watcher = new Watcher();
    const executor = new CallExecutor(watcher as never, 'Watcher', 1);
    const first = call(executor, 'slow', 20);
    const second = call(executor, 'slow', 20);
    second.scope.cancel(cancelError('deadline', second.scope, 'a'));
    expect(await first.result).toEqual({ value: 20 });
    const r = await second.result;
    expect('error' in r && r.error.name).toBe(DeadlineExceededError.name);
    expect(watcher.runs).toBe(1);
    await executor.idle();
  });
});
