/**
 * Per-call deadlines and cancellation, and errors that keep their type, through real actor
 * processes: the caller's deadline or signal rejects the call at once and the actor's method
 * sees its `callSignal()` abort; a caller that dies cancels its calls; errors thrown by methods
 * arrive as ActorError whose cause is the thrown class with its fields and `retryable`.
 */
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CollectiveError } from '../actors/collective/errors.js';
import {
  ActorError,
  CallCancelledError,
  ClawrayError,
  ConfigError,
  DeadlineExceededError,
  errorOfClass,
  isRetryable,
  SchedulingTimeoutError,
  UnavailableError,
} from '../common/errors.js';
import { distEntry } from '../common/package-root.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { eventually, fixture, TestCluster } from './helpers/processes.js';

interface WaiterEvent {
  tag: string;
  event: 'started' | 'aborted' | 'timed out';
  hasSignal?: boolean;
  reasonName?: string | null;
  reasonIsCancelled?: boolean;
  reasonFields?: Record<string, unknown> | null;
}

interface Waiter {
  waitForAbort(tag: string, maxMs?: number): string;
  eventsOf(tag: string): WaiterEvent[];
  throwKind(kind: string): never;
}

const module = fixture('cancellable.mjs');

describe('per-call deadlines and cancellation over a real cluster', () => {
  const tc = new TestCluster();
  let cluster: Cluster;
  let waiter: ActorHandle<Waiter>;

  const finalEvent = (tag: string) =>
    eventually(async () => (await waiter.remote.eventsOf(tag)).find((e) => e.event !== 'started'), 20_000);

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 4, poolSize: 1 });
    cluster = await tc.connect();
    waiter = await cluster.createActor<Waiter>({
      module,
      className: 'Waiter',
      options: { name: 'waiter' },
    });
  });
  afterAll(() => tc.teardown());

  it('rejects a call past its deadline with DeadlineExceededError, and the method sees its signal abort', async () => {
    const err = await waiter
      .options({ deadlineMs: 300 })
      .remote.waitForAbort('deadline')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DeadlineExceededError);
    expect((err as DeadlineExceededError).retryable).toBe(false);
    expect((err as DeadlineExceededError).fields).toMatchObject({
      actorId: waiter.actorId,
      method: 'waitForAbort',
      deadlineMs: 300,
    });
    expect(await finalEvent('deadline')).toMatchObject({
      event: 'aborted',
      reasonName: 'DeadlineExceededError',
      reasonIsCancelled: true,
      reasonFields: { method: 'waitForAbort', reason: 'deadline' },
    });
    const started = await waiter.remote.eventsOf('deadline');
    expect(started[0]).toMatchObject({ event: 'started', hasSignal: true });
  });

  it('rejects a call whose signal aborts with CallCancelledError carrying the reason, and aborts the method', async () => {
    const controller = new AbortController();
    const pending = waiter.options({ signal: controller.signal }).call('waitForAbort', 'signal');
    await eventually(async () => (await waiter.remote.eventsOf('signal')).length > 0);
    const why = new Error('the user pressed stop');
    controller.abort(why);
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CallCancelledError);
    expect((err as CallCancelledError).cause).toBe(why);
    expect(await finalEvent('signal')).toMatchObject({ event: 'aborted', reasonName: 'CallCancelledError' });
  });

  it('does not send a call whose signal has already aborted', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      waiter.options({ signal: controller.signal }).remote.waitForAbort('never'),
    ).rejects.toBeInstanceOf(CallCancelledError);
    expect(await waiter.remote.eventsOf('never')).toEqual([]);
  });

  it('leaves a call that settles before its deadline alone, and keeps the plain call form working', async () => {
    const view = waiter.options({ deadlineMs: 60_000 });
    expect(await view.remote.eventsOf('none')).toEqual([]);
    expect(await view.call('eventsOf', 'none')).toEqual([]);
    expect(await waiter.call('eventsOf', 'none')).toEqual([]);
  });

  it('refuses bad call options at once, naming the field', () => {
    expect(() => waiter.options({ deadlineMs: -1 })).toThrow(/deadlineMs must be/);
    expect(() => waiter.options({ deadlineMs: 'soon' as never })).toThrow(ConfigError);
    expect(() => waiter.options({ signal: {} as never })).toThrow(/signal must be an AbortSignal/);
    expect(() => waiter.options({ timeoutMs: 5 } as never)).toThrow(/unknown call option 'timeoutMs'/);
  });

  it("aborts the method's signal when the calling process is killed mid-call", async () => {
    const script = `
      import { connect } from ${JSON.stringify(distEntry('index'))};
      const cluster = await connect(process.env.ADDRESS, { token: process.env.TOKEN });
      const waiter = await cluster.getActor('waiter');
      console.log('calling');
      await waiter.call('waitForAbort', 'killed');
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ADDRESS: tc.head!.address, TOKEN: tc.token },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await eventually(async () => (await waiter.remote.eventsOf('killed')).length > 0, 20_000);
      child.kill('SIGKILL');
      await exited;
      expect(await finalEvent('killed')).toMatchObject({
        event: 'aborted',
        reasonName: 'CallCancelledError',
        reasonFields: { reason: 'caller-gone' },
      });
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('aborts the signal of calls in flight when the caller closes its client', async () => {
    const other = await tc.connect();
    const handle = await other.getActor<Waiter>('waiter');
    const pending = handle.remote.waitForAbort('closed').catch((e: unknown) => e);
    await eventually(async () => (await waiter.remote.eventsOf('closed')).length > 0);
    await other.close();
    await pending;
    expect(await finalEvent('closed')).toMatchObject({ event: 'aborted', reasonName: 'CallCancelledError' });
  });

  describe('errors keep their type through an actor call', () => {
    const thrown = async (kind: string) => {
      const err = await waiter.remote.throwKind(kind).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ActorError);
      return err as ActorError;
    };

    it('brings back a class of common with its fields and retryable', async () => {
      const err = await thrown('scheduling');
      expect(err.remoteName).toBe('SchedulingTimeoutError');
      const cause = errorOfClass(err, SchedulingTimeoutError);
      expect(cause).toBeInstanceOf(SchedulingTimeoutError);
      expect(cause?.fields).toEqual({ waitedMs: 1500 });
      expect(cause?.retryable).toBe(true);
      expect(isRetryable(err)).toBe(true);
    });

    it('brings back a class registered in its own module (CollectiveError)', async () => {
      const err = await thrown('collective');
      const cause = errorOfClass(err, CollectiveError);
      expect(cause).toBeInstanceOf(CollectiveError);
      expect(cause?.fields).toEqual({ rank: 2, groupName: 'g1' });
      expect(isRetryable(err)).toBe(false);
    });

    it('brings back a class this process never loaded as its nearest known ancestor', async () => {
      const err = await thrown('fixture');
      const cause = errorOfClass(err, UnavailableError);
      expect(cause).toBeInstanceOf(UnavailableError);
      expect(cause?.name).toBe('FixtureQuotaError');
      expect(cause?.fields).toEqual({ quota: 3 });
      expect(cause?.retryable).toBe(true);
      expect(isRetryable(err)).toBe(true);
    });

    it('brings back a typed cause chain', async () => {
      const err = await thrown('chain');
      const outer = err.cause as UnavailableError;
      expect(outer).toBeInstanceOf(UnavailableError);
      const inner = outer.cause as SchedulingTimeoutError;
      expect(inner).toBeInstanceOf(SchedulingTimeoutError);
      expect(inner.fields).toEqual({ depth: 1 });
    });

    it('brings back a plain error as an Error with its name', async () => {
      const err = await thrown('other');
      expect(err.remoteName).toBe('TypeError');
      expect(err.cause).not.toBeInstanceOf(ClawrayError);
      expect((err.cause as Error).name).toBe('TypeError');
      expect(isRetryable(err)).toBe(false);
    });
  });
});
