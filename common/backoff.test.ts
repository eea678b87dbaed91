import { afterEach, describe, expect, it, vi } from 'vitest';
import { Backoff, sleep } from './backoff.js';

afterEach(() => {
  vi.restoreAllMocks();
});

const ceilings = (initialMs: number, maxMs: number, factor: number, n: number): number[] =>
  Array.from({ length: n }, (_, i) => Math.min(maxMs, initialMs * factor ** i));

describe('Backoff', () => {
  it('stays within [ceiling/2, ceiling] and never above maxMs (defaults)', () => {
    for (let round = 0; round < 50; round++) {
      const b = new Backoff();
      for (const ceiling of ceilings(50, 2000, 2, 20)) {
        const d = b.next();
        expect(d).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(d).toBeLessThanOrEqual(ceiling);
        expect(d).toBeLessThanOrEqual(2000);
      }
    }
  });

  it('grows: the lowest possible delay follows the ceiling up to maxMs', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const b = new Backoff({ initialMs: 100, maxMs: 1000, factor: 2 });
    expect(Array.from({ length: 6 }, () => b.next())).toEqual([50, 100, 200, 400, 500, 500]);
  });

  it('the highest possible delay is the ceiling', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0.999999);
    const b = new Backoff({ initialMs: 100, maxMs: 1000, factor: 3 });
    expect(Array.from({ length: 5 }, () => b.next())).toEqual([100, 300, 900, 1000, 1000]);
  });

  it('is jittered', () => {
    const b = new Backoff({ initialMs: 1000, maxMs: 1000 });
    const seen = new Set(Array.from({ length: 50 }, () => b.next()));
    expect(seen.size).toBeGreaterThan(1);
  });

  it('never gives less than 1 ms', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    expect(new Backoff({ initialMs: 0.5 }).next()).toBe(1);
    expect(new Backoff({ initialMs: 0 }).next()).toBe(1);
  });

  it('stays at maxMs after very many attempts (no overflow to NaN)', () => {
    const b = new Backoff({ initialMs: 10, maxMs: 300 });
    let d = 0;
    for (let i = 0; i < 5000; i++) d = b.next();
    expect(Number.isFinite(d)).toBe(true);
    expect(d).toBeGreaterThanOrEqual(150);
    expect(d).toBeLessThanOrEqual(300);
  });

  it('reset() starts again from the first delay', () => {
    vi.spyOn(Math, 'random').mockReturnValue(0);
    const b = new Backoff({ initialMs: 100, maxMs: 10_000 });
    b.next();
    b.next();
    expect(b.next()).toBe(200);
    b.reset();
    expect(b.next()).toBe(50);
    expect(b.next()).toBe(100);
  });
});

describe('sleep', () => {
  it('resolves after the delay', async () => {
    const start = Date.now();
    await sleep(20);
    expect(Date.now() - start).toBeGreaterThanOrEqual(15);
  });

  it('resolves early when the signal aborts', async () => {
    const controller = new AbortController();
    const start = Date.now();
    const p = sleep(60_000, controller.signal);
    setTimeout(() => controller.abort(), 5);
    await p;
    expect(Date.now() - start).toBeLessThan(5_000);
  });

  it('resolves at once for an already aborted signal', async () => {
    const start = Date.now();
    await sleep(60_000, AbortSignal.abort());
    expect(Date.now() - start).toBeLessThan(1_000);
  });

  it('removes its abort listener after the timer fires', async () => {
    const controller = new AbortController();
    const remove = vi.spyOn(controller.signal, 'removeEventListener');
    await sleep(1, controller.signal);
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
  });

  it('works with fake timers', async () => {
    vi.useFakeTimers();
    try {
      let done = false;
      const p = sleep(1000).then(() => {
        done = true;
      });
      await vi.advanceTimersByTimeAsync(999);
      expect(done).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      await p;
      expect(done).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });
});
