import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ActorDiedError,
  ActorError,
  AlreadyExistsError,
  ConfigError,
  NotFoundError,
  PendingCallsLimitExceededError,
} from '../common/errors.js';
import { actorContext } from '../index.js';
import type { Cluster } from '../runtime/index.js';
import { eventually, fixture, pidAlive, TestCluster } from './helpers/processes.js';

const module = fixture('counter.mjs');

describe('actors over a real cluster', () => {
  const tc = new TestCluster();
  let cluster: Cluster;

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 8, poolSize: 2 });
    cluster = await tc.connect();
  });
  afterAll(() => tc.teardown());

  it('creates an actor and calls it, with typed sugar', async () => {
    const counter = await cluster.createActor<{ inc(by: number): number; get(): number }>({
      module,
      className: 'Counter',
      args: [10],
    });
    expect(await counter.call('inc', 5)).toBe(15);
    expect(await counter.remote.inc(1)).toBe(16);
    expect(await counter.remote.get()).toBe(16);
    const status = await cluster.status();
    expect(status.actors.find((a) => a.actorId === counter.actorId)?.state).toBe('ALIVE');
  });

  it('runs calls from one caller to a sync actor in submission order, pipelined', async () => {
    const counter = await cluster.createActor({ module, className: 'Counter' });
    const results = await Promise.all(Array.from({ length: 2000 }, () => counter.call('inc', 1)));
    expect(results).toEqual(Array.from({ length: 2000 }, (_, i) => i + 1));
  });

  it('overlaps calls on an actor with async methods, and honours maxConcurrency', async () => {
    const asyncActor = await cluster.createActor({ module, className: 'Worker' });
    const maxSeen = await Promise.all(Array.from({ length: 5 }, () => asyncActor.call('track', 300)));
    expect(Math.max(...(maxSeen as number[]))).toBe(5);
    const serial = await cluster.createActor({ module, className: 'Worker', options: { maxConcurrency: 1 } });
    const serialSeen = await Promise.all(Array.from({ length: 3 }, () => serial.call('track', 50)));
    expect(Math.max(...(serialSeen as number[]))).toBe(1);
  });

  it('rejects with ActorError carrying the remote name, message, stack and cause', async () => {
    const counter = await cluster.createActor({ module, className: 'Counter' });
    const err = await counter.call('boom', 'no luck').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ActorError);
    const actorError = err as ActorError;
    expect(actorError.remoteName).toBe('TypeError');
    expect(actorError.message).toContain('Counter.boom threw TypeError: no luck');
    expect(actorError.remoteStack).toContain('counter.mjs');
    expect((actorError.cause as Error).name).toBe('TypeError');
    expect((actorError.cause as Error).message).toBe('no luck');
    // The actor survives its method's error.
    expect(await counter.call('inc', 1)).toBe(1);
  });

  it('names the missing method and lists the ones that exist', async () => {
    const counter = await cluster.createActor({ module, className: 'Counter' });
    const err = (await counter.call('nope').catch((e: unknown) => e)) as ActorError;
    expect(err).toBeInstanceOf(ActorError);
    expect(err.message).toContain("Counter has no method 'nope'");
    expect(err.message).toContain('inc');
  });

  it('fails fast and clearly for a module or class that does not exist', async () => {
    const missing = await cluster
      .createActor({ module: fixture('does-not-exist.mjs'), className: 'X' })
      .catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(ConfigError);
    expect((missing as Error).message).toMatch(/cannot start.*does-not-exist\.mjs/s);
    const noClass = await cluster.createActor({ module, className: 'Nope' }).catch((e: unknown) => e);
    expect(noClass).toBeInstanceOf(ConfigError);
    expect((noClass as Error).message).toContain("no exported class 'Nope'");
    expect((noClass as Error).message).toContain('Counter');
  });

  it('reports a constructor that throws as an ActorError and leaves the actor dead', async () => {
    const err = (await cluster
      .createActor({ module, className: 'Broken', args: ['on purpose'] })
      .catch((e: unknown) => e)) as ActorError;
    expect(err).toBeInstanceOf(ActorError);
    expect(err.message).toContain('constructor threw RangeError: cannot build: on purpose');
    expect(err.remoteName).toBe('RangeError');
    const dead = await cluster.listActors({ state: 'DEAD' });
    expect(dead.some((a) => a.className === 'Broken')).toBe(true);
  });

  it('finds named actors, refuses duplicates, and honours getIfExists', async () => {
    const first = await cluster.createActor({
      module,
      className: 'Counter',
      options: { name: 'shared-counter' },
    });
    await first.call('inc', 7);
    const found = await cluster.getActor('shared-counter');
    expect(found.actorId).toBe(first.actorId);
    expect(await found.call('get')).toBe(7);
    await expect(
      cluster.createActor({ module, className: 'Counter', options: { name: 'shared-counter' } }),
    ).rejects.toBeInstanceOf(AlreadyExistsError);
    const again = await cluster.createActor({
      module,
      className: 'Counter',
      options: { name: 'shared-counter', getIfExists: true },
    });
    expect(again.actorId).toBe(first.actorId);
    await expect(cluster.getActor('shared-counter', { namespace: 'elsewhere' })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await cluster.killActor(first);
    await expect(cluster.getActor('shared-counter')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('kills an actor: its process and children are gone and calls fail with ActorDiedError', async () => {
    const actor = await cluster.createActor({ module, className: 'Worker' });
    const pid = (await actor.call('pid')) as number;
    const sleeper = Number(await actor.call('spawnSleeper'));
    expect(pidAlive(sleeper)).toBe(true);
    const inFlight = actor.call('slow', 10_000).catch((e: unknown) => e);
    await cluster.killActor(actor);
    expect(await inFlight).toBeInstanceOf(ActorDiedError);
    await expect(actor.call('pid')).rejects.toThrow(/Worker \(actor_\w+\) was killed/);
    await eventually(() => !pidAlive(pid) && !pidAlive(sleeper));
  });

  it('passes handles to other actors, in constructor arguments, call arguments and results', async () => {
    const counter = await cluster.createActor({ module, className: 'Counter' });
    const caller = await cluster.createActor({ module, className: 'Caller', args: [counter] });
    expect(await caller.call('viaConstructorHandle', 2)).toBe(2);
    expect(await caller.call('via', counter, 3)).toBe(5);
    const returned = (await caller.call('returnHandle')) as typeof counter;
    expect(returned.actorId).toBe(counter.actorId);
    expect(await returned.call('get')).toBe(5);
  });

  it('passes typed arrays of hundreds of MiB as arguments and results', async () => {
    const counter = await cluster.createActor({ module, className: 'Counter' });
    const big = new Float32Array(50 * 1024 * 1024); // 200 MiB
    big[0] = 1.5;
    big[big.length - 1] = -2.25;
    const back = (await counter.call('echo', big)) as Float32Array;
    expect(back).toBeInstanceOf(Float32Array);
    expect(back.length).toBe(big.length);
    expect(back[0]).toBe(1.5);
    expect(back[back.length - 1]).toBe(-2.25);
  }, 120_000);

  it('enforces maxPendingCalls on the caller side', async () => {
    const actor = await cluster.createActor({ module, className: 'Worker', options: { maxPendingCalls: 2 } });
    const a = actor.call('slow', 200);
    const b = actor.call('slow', 200);
    await expect(actor.call('slow', 1)).rejects.toBeInstanceOf(PendingCallsLimitExceededError);
    await Promise.all([a, b]);
    expect(((await actor.call('slow', 1)) as { ms: number }).ms).toBe(1);
  });

  it('validates options at the edge with the field named', async () => {
    const err = await cluster
      .createActor({ module, className: 'Counter', options: { numGpus: 1.5 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('numGpus');
    const retries = await cluster
      .createActor({ module, className: 'Counter', options: { maxTaskRetries: 2 } })
      .catch((e: unknown) => e);
    expect((retries as Error).message).toContain('maxTaskRetries: needs maxRestarts');
  });

  it('captures actor stdout and stderr in the worker log, tagged with the actor id', async () => {
    const counter = await cluster.createActor({
      module,
      className: 'Counter',
      options: { env: { GREETING: 'hej' } },
    });
    expect(await counter.call('env', 'GREETING')).toBe('hej');
    // The cluster token never reaches actor code through the environment.
    expect(await counter.call('env', 'CLAWRAY_TOKEN')).toBeUndefined();
    await counter.call('say', 'hello-from-actor');
    const tagged = await eventually(() => {
      const lines = tc.workers[0].output
        .filter((line) => line.includes('hello-from-actor') && !line.includes('err:'))
        .map((line) => JSON.parse(line) as { actorId: string; stream: string; msg: string });
      return lines.length > 0 ? lines : undefined;
    });
    expect(tagged.find((l) => l.stream === 'stdout')).toMatchObject({
      actorId: counter.actorId,
      msg: 'hello-from-actor',
    });
    await eventually(() =>
      tc.workers[0].output.some((line) => line.includes('err:hello-from-actor') && line.includes('"stderr"')),
    );
  });

  it('refuses actorContext() outside an actor', () => {
    expect(() => actorContext()).toThrow(ConfigError);
  });
});
