import { describe, expect, it } from 'vitest';
import { clipGradNorm, GradAccumulator, globalNorm } from './grad-clip.js';

const f32 = (...xs: number[]) => Float32Array.from(xs);

describe('clipGradNorm', () => {
  it('scales by maxNorm / (norm + 1e-6) over all grads together', () => {
    // ‖(3, 4, 0, 12)‖ = √(9 + 16 + 144) = 13.
    const grads = new Map([
      ['a', f32(3, 4)],
      ['b', f32(0, 12)],
    ]);
    expect(globalNorm(grads)).toBe(13);
    const norm = clipGradNorm(grads, 1);
    expect(norm).toBe(13);
    const coef = 1 / (13 + 1e-6);
    expect([...grads.get('a')!]).toEqual([Math.fround(3 * coef), Math.fround(4 * coef)]);
    expect(grads.get('b')![1]).toBe(Math.fround(12 * coef));
    expect(globalNorm(grads)).toBeCloseTo(1, 5);
  });

  it('leaves grads below the limit untouched', () => {
    const grads = new Map([['a', f32(0.3, 0.4)]]);
    expect(clipGradNorm(grads, 1)).toBeCloseTo(0.5, 6);
    expect([...grads.get('a')!]).toEqual([Math.fround(0.3), Math.fround(0.4)]);
  });

  it('returns a non-finite norm without scaling', () => {
    const grads = new Map([['a', f32(Number.NaN, 1)]]);
    expect(clipGradNorm(grads, 1)).toBeNaN();
    expect(grads.get('a')![1]).toBe(1);
    expect(() => clipGradNorm(grads, 0)).toThrow(/maxNorm/);
  });
});

describe('GradAccumulator', () => {
  it('averages k micro-batches and resets', () => {
    const acc = new GradAccumulator();
    const first = f32(1, 2);
    acc.add(new Map([['w', first]]));
    first[0] = 100; // the accumulator copied it
    acc.add(new Map([['w', f32(3, -2)]]));
    acc.add(new Map([['w', f32(5, 3)]]));
    expect(acc.count).toBe(3);
    expect([...acc.mean().get('w')!]).toEqual([3, 1]);
    acc.reset();
    expect(acc.count).toBe(0);
    expect(() => acc.mean()).toThrow(/before any micro-batch/);
    acc.add(new Map([['w', f32(7, 7)]]));
    expect([...acc.mean().get('w')!]).toEqual([7, 7]);
  });

  it('rejects micro-batches that do not match the first', () => {
    const acc = new GradAccumulator();
    acc.add(new Map([['w', f32(1, 2)]]));
    expect(() => acc.add(new Map([['w', f32(1)]]))).toThrow(/'w' has 1 elements/);
    expect(() => acc.add(new Map([['v', f32(1, 2)]]))).toThrow(/no gradient for 'w'/);
    expect(() => acc.add(new Map())).toThrow(/no gradient for 'w'/);
    expect(acc.count).toBe(1);
  });
});
