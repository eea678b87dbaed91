import { describe, expect, it } from 'vitest';
import {
  type BatchSink,
  BatchWriter,
  type FlushScheduler,
  immediateScheduler,
  MAX_FRAME_BYTES,
  microtaskScheduler,
} from './batch-writer.js';

interface Item {
  id: number;
  bytes: number;
}

/** Records every frame; `accept` decides what `write` answers; drains are released by hand. */
class FakeSink implements BatchSink<Item> {
  frames: Item[][] = [];
  accept: (frame: Item[]) => boolean = () => true;
  private drainCallbacks: Array<() => void> = [];

  write(items: Item[]): boolean {
    this.frames.push([...items]);
    return this.accept(items);
  }

  onceDrain(callback: () => void): void {
    this.drainCallbacks.push(callback);
  }

  get waitingDrains(): number {
    return this.drainCallbacks.length;
  }

  drain(): void {
    const callbacks = this.drainCallbacks;
    this.drainCallbacks = [];
    for (const cb of callbacks) cb();
  }

  get ids(): number[][] {
    return this.frames.map((f) => f.map((i) => i.id));
  }
}

const item = (id: number, bytes = 10): Item => ({ id, bytes });
const sizeOf = (i: Item): number => i.bytes;
const nextMicrotasks = () => new Promise<void>((resolve) => setTimeout(resolve, 0));
const nextImmediate = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A scheduler whose flushes run only when the test says so. */
function manualScheduler(): { schedule: FlushScheduler; run(): void; pending(): number } {
  let queued: Array<() => void> = [];
  return {
    schedule: (flush) => {
      queued.push(flush);
    },
    run: () => {
      const q = queued;
      queued = [];
      for (const f of q) f();
    },
    pending: () => queued.length,
  };
}

describe('BatchWriter', () => {
  it('sends items pushed in one turn as ONE write (microtask scheduler)', async () => {
    const sink = new FakeSink();
    const writer = new BatchWriter(sink, sizeOf, microtaskScheduler);
    for (let i = 0; i < 100; i++) writer.push(item(i));
    expect(sink.frames).toHaveLength(0);
    await Promise.resolve();
    expect(sink.ids).toEqual([Array.from({ length: 100 }, (_, i) => i)]);
  });

  it('sends items pushed in one turn as ONE write (immediate scheduler), later turns in later writes', async () => {
    const sink = new FakeSink();
    const writer = new BatchWriter(sink, sizeOf, immediateScheduler);
    writer.push(item(1));
    writer.push(item(2));
    await nextImmediate();
    writer.push(item(3));
    await nextImmediate();
    expect(sink.ids).toEqual([[1, 2], [3]]);
  });

  it('schedules one flush per turn, not one per push', () => {
    const sink = new FakeSink();
    const sched = manualScheduler();
    const writer = new BatchWriter(sink, sizeOf, sched.schedule);
    writer.push(item(1));
    writer.push(item(2));
    writer.push(item(3));
    expect(sched.pending()).toBe(1);
    sched.run();
    expect(sink.ids).toEqual([[1, 2, 3]]);
    writer.push(item(4));
    expect(sched.pending()).toBe(1);
  });

  it('caps frames at MAX_FRAME_BYTES, splitting large items across writes', () => {
    const sink = new FakeSink();
    const sched = manualScheduler();
    const writer = new BatchWriter(sink, sizeOf, sched.schedule);
    const third = Math.floor(MAX_FRAME_BYTES / 3);
    for (let i = 0; i < 7; i++) writer.push(item(i, third));
    sched.run();
    expect(sink.ids).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    for (const frame of sink.frames) {
      expect(frame.reduce((n, i) => n + i.bytes, 0)).toBeLessThanOrEqual(MAX_FRAME_BYTES);
    }
  });

  it('fills a frame up to exactly MAX_FRAME_BYTES', () => {
    const sink = new FakeSink();
    const sched = manualScheduler();
    const writer = new BatchWriter(sink, sizeOf, sched.schedule);
    writer.push(item(1, MAX_FRAME_BYTES / 2));
    writer.push(item(2, MAX_FRAME_BYTES / 2));
    writer.push(item(3, 1));
    sched.run();
    expect(sink.ids).toEqual([[1, 2], [3]]);
  });

  it('sends an item bigger than the cap alone', () => {
    const sink = new FakeSink();
    const sched = manualScheduler();
    const writer = new BatchWriter(sink, sizeOf, sched.schedule);
    writer.push(item(1, 10));
    writer.push(item(2, MAX_FRAME_BYTES * 3));
    writer.push(item(3, 10));
    writer.push(item(4, 10));
    sched.run();
    expect(sink.ids).toEqual([[1], [2], [3, 4]]);
  });

  it('waits for drain when write returns false, then continues in order', () => {
    const sink = new FakeSink();
    sink.accept = () => false;
    const sched = manualScheduler();
    const writer = new BatchWriter(sink, sizeOf, sched.schedule);
    const big = MAX_FRAME_BYTES - 100; // two never share a frame; one plus a small item does
    writer.push(item(1, big));
    writer.push(item(2, big));
    writer.push(item(3, big));
    sched.run();
    expect(sink.ids).toEqual([[1]]);
    expect(sink.waitingDrains).toBe(1);

    // Pushes while waiting for drain neither schedule a flush nor write.
    writer.push(item(4, 10));
    expect(sched.pending()).toBe(0);
    expect(sink.ids).toEqual([[1]]);

    sink.drain();
    expect(sink.ids).toEqual([[1], [2]]);
    sink.accept = () => true;
    sink.drain();
    expect(sink.ids).toEqual([[1], [2], [3, 4]]);
    expect(sink.waitingDrains).toBe(0);

    // Back to normal: the next push schedules a flush again.
    writer.push(item(5));
    expect(sched.pending()).toBe(1);
    sched.run();
    expect(sink.ids).toEqual([[1], [2], [3, 4], [5]]);
  });

  it('preserves order across many backpressured writes (real microtasks)', async () => {
    const sink = new FakeSink();
    let writes = 0;
    sink.accept = () => ++writes % 2 === 0; // every other write asks to wait
    const writer = new BatchWriter(sink, sizeOf, microtaskScheduler);
    const size = MAX_FRAME_BYTES / 4;
    for (let i = 0; i < 20; i++) writer.push(item(i, size));
    await nextMicrotasks();
    while (sink.waitingDrains > 0) {
      sink.drain();
      await nextMicrotasks();
    }
    for (let i = 20; i < 25; i++) writer.push(item(i, size));
    await nextMicrotasks();
    while (sink.waitingDrains > 0) {
      sink.drain();
      await nextMicrotasks();
    }
    expect(sink.frames.flat().map((i) => i.id)).toEqual(Array.from({ length: 25 }, (_, i) => i));
    for (const frame of sink.frames) expect(frame.length).toBeLessThanOrEqual(4);
  });

  it('close() drops queued items and ignores later pushes', () => {
    const sink = new FakeSink();
    const sched = manualScheduler();
    const writer = new BatchWriter(sink, sizeOf, sched.schedule);
    writer.push(item(1));
    writer.push(item(2));
    writer.close();
    sched.run();
    writer.push(item(3));
    sched.run();
    expect(sink.frames).toEqual([]);
  });

  it('close() while waiting for drain drops the rest', () => {
    const sink = new FakeSink();
    sink.accept = () => false;
    const sched = manualScheduler();
    const writer = new BatchWriter(sink, sizeOf, sched.schedule);
    writer.push(item(1, MAX_FRAME_BYTES));
    writer.push(item(2, MAX_FRAME_BYTES));
    sched.run();
    expect(sink.ids).toEqual([[1]]);
    writer.close();
    sink.accept = () => true;
    sink.drain();
    expect(sink.ids).toEqual([[1]]);
  });

  it('calls sizeOf once per item', () => {
    const sink = new FakeSink();
    const sched = manualScheduler();
    let calls = 0;
    const writer = new BatchWriter(
      sink,
      (i: Item) => {
        calls++;
        return i.bytes;
      },
      sched.schedule,
    );
    for (let i = 0; i < 5; i++) writer.push(item(i, MAX_FRAME_BYTES / 2));
    sched.run();
    expect(calls).toBe(5);
  });
});
