/**
 * Streamed actor calls (Ray's streaming generators) through real actor processes: an
 * async-generator method's items reach the caller as they are yielded, its return value ends
 * the stream, breaking out of the loop or the caller's signal cancels the call (the method's
 * signal aborts and its generator's `finally` runs), errors keep their type, the caller's flow
 * control holds a fast generator back, items larger than a wire chunk arrive whole, and an
 * actor that dies mid-stream ends it with ActorDiedError.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ActorDiedError,
  ActorError,
  CallCancelledError,
  ConfigError,
  errorOfClass,
} from '../common/errors.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { STREAM_WINDOW_ITEMS } from '../runtime/index.js';
import { eventually, fixture, TestCluster } from './helpers/processes.js';

interface StreamEvent {
  tag: string;
  event: 'started' | 'aborted' | 'closed';
  reason?: string | null;
  hasSignal?: boolean;
}

interface Streamer {
  count(n: number): AsyncGenerator<number, { total: number }, undefined>;
  flood(tag: string, count: number): AsyncGenerator<number, void, undefined>;
  producedOf(tag: string): number;
  gated(tag: string): AsyncGenerator<string, string, undefined>;
  open(tag: string): boolean;
  endless(tag: string): AsyncGenerator<number, void, undefined>;
  eventsOf(tag: string): StreamEvent[];
  failing(): AsyncGenerator<number, void, undefined>;
  big(bytes: number): AsyncGenerator<Uint8Array, number, undefined>;
  plain(): number;
  hang(): AsyncGenerator<string, void, undefined>;
}

const module = fixture('streams.mjs');

describe('streamed actor calls over a real cluster', () => {
  const tc = new TestCluster();
  let cluster: Cluster;
  let streamer: ActorHandle<Streamer>;

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 4, poolSize: 2 });
    cluster = await tc.connect();
    streamer = await cluster.createActor<Streamer>({ module, className: 'Streamer' });
  });
  afterAll(() => tc.teardown());

  it('delivers every item in order, then the return value', async () => {
    const stream = streamer.stream('count', 100);
    const items: number[] = [];
    let step = await stream.next();
    while (!step.done) {
      items.push(step.value);
      step = await stream.next();
    }
    expect(items).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(step.value).toEqual({ total: 100 });
    // for await reads the same stream shape.
    let sum = 0;
    for await (const n of streamer.stream('count', 10)) sum += n;
    expect(sum).toBe(45);
  });

  it('hands over an item as soon as it is yielded, before the generator goes on', async () => {
    const stream = streamer.stream('gated', 'g1');
    // The generator waits for open() after its first item: that item must arrive first.
    expect(await stream.next()).toEqual({ value: 'first', done: false });
    expect(await streamer.remote.open('g1')).toBe(true);
    expect(await stream.next()).toEqual({ value: 'second', done: false });
    expect(await stream.next()).toEqual({ value: 'done', done: true });
  });

  it('cancels the call when the caller breaks out: the signal aborts and the generator closes', async () => {
    let taken = 0;
    for await (const _ of streamer.stream('endless', 'brk')) {
      if (++taken === 3) break;
    }
    const events = await eventually(async () => {
      const e = await streamer.remote.eventsOf('brk');
      return e.some((x) => x.event === 'closed') ? e : undefined;
    });
    expect(events[0]).toMatchObject({ event: 'started', hasSignal: true });
    expect(events).toContainEqual({ tag: 'brk', event: 'aborted', reason: 'CallCancelledError' });
  });

  it("cancels the call on the caller's signal, which ends the iteration with CallCancelledError", async () => {
    const controller = new AbortController();
    const stream = streamer.options({ signal: controller.signal }).stream('endless', 'sig');
    expect((await stream.next()).done).toBe(false);
    controller.abort();
    let err: unknown;
    try {
      for await (const _ of stream) {
        // drains what had arrived, then fails
      }
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CallCancelledError);
    await eventually(async () => (await streamer.remote.eventsOf('sig')).some((e) => e.event === 'closed'));
  });

  it('ends with the error the generator threw, its class and fields kept, after the items before it', async () => {
    const got: number[] = [];
    let err: unknown;
    try {
      for await (const n of streamer.stream('failing')) got.push(n);
    } catch (e) {
      err = e;
    }
    expect(got).toEqual([1, 2]);
    expect(err).toBeInstanceOf(ActorError);
    expect(errorOfClass(err, ConfigError)?.fields).toMatchObject({ index: 2 });
  });

  it('holds a fast generator back to what the caller has taken (flow control)', async () => {
    const stream = streamer.stream('flood', 'fc', 10_000);
    expect((await stream.next()).value).toBe(0);
    // The caller takes nothing more for a while: the actor stops within its window.
    await new Promise((r) => setTimeout(r, 300));
    const produced = await streamer.remote.producedOf('fc');
    expect(produced).toBeLessThanOrEqual(STREAM_WINDOW_ITEMS + 2);
    let rest = 0;
    for await (const _ of stream) rest++;
    expect(rest).toBe(9_999);
    expect(await streamer.remote.producedOf('fc')).toBe(10_000);
  });

  it('sends an item larger than a wire chunk whole', async () => {
    const bytes = 9 * 1024 * 1024 + 5;
    const stream = streamer.stream('big', bytes);
    const first = await stream.next();
    expect(first.done).toBe(false);
    const item = first.value as Uint8Array;
    expect(item.length).toBe(bytes);
    expect(item[bytes - 1]).toBe(7);
    expect(await stream.next()).toEqual({ value: bytes, done: true });
  });

  it('refuses to stream a plain method and to call a streaming one, saying which to use', async () => {
    const untyped = streamer as unknown as ActorHandle;
    const streamed = untyped.stream('plain');
    await expect(streamed.next()).rejects.toThrow(/returned a number, not an async iterable.*handle\.call/);
    await expect(untyped.call('count', 3)).rejects.toThrow(/streaming method.*handle\.stream\('count'/);
  });

  it('ends the stream with ActorDiedError when the actor dies mid-stream', async () => {
    const victim = await cluster.createActor<Streamer>({ module, className: 'Streamer' });
    const stream = victim.stream('hang');
    expect(await stream.next()).toEqual({ value: 'alive', done: false });
    await cluster.killActor(victim, { noRestart: true });
    await expect(stream.next()).rejects.toBeInstanceOf(ActorDiedError);
  });
});
