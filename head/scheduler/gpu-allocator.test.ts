import { describe, expect, it } from 'vitest';
import type { GpuShare } from '../../common/resources.js';
import {
  canEverFit,
  chooseGpus,
  debitGpus,
  freeShares,
  type GpuPool,
  newGpuPool,
  poolFromShares,
  returnGpus,
  takeGpus,
} from './gpu-allocator.js';
import { toUnits } from './units.js';

/** Takes `amount` GPU from the pool, or returns undefined when it does not fit now. */
function take(pool: GpuPool, amount: number): GpuShare[] | undefined {
  const need = toUnits(amount);
  const picks = chooseGpus(pool, need);
  return picks === undefined ? undefined : takeGpus(pool, picks, need);
}

const ids = (shares: GpuShare[] | undefined) => shares?.map((s) => s.gpuId);

describe('gpu allocator', () => {
  it('fills GPU 0 with two halves before touching GPU 1', () => {
    const pool = newGpuPool([0, 1]);
    expect(take(pool, 0.5)).toEqual([{ gpuId: 0, fraction: 0.5 }]);
    expect(take(pool, 0.5)).toEqual([{ gpuId: 0, fraction: 0.5 }]);
    expect(take(pool, 0.5)).toEqual([{ gpuId: 1, fraction: 0.5 }]);
  });

  it('puts four quarters on one GPU', () => {
    const pool = newGpuPool([0, 1, 2]);
    for (let i = 0; i < 4; i++) expect(ids(take(pool, 0.25))).toEqual([0]);
    expect(freeShares(pool)).toEqual([
      { gpuId: 0, fraction: 0 },
      { gpuId: 1, fraction: 1 },
      { gpuId: 2, fraction: 1 },
    ]);
  });

  it('never gives a whole GPU that holds a fraction (Ray #52915)', () => {
    const pool = newGpuPool([0, 1]);
    expect(ids(take(pool, 0.25))).toEqual([0]);
    expect(ids(take(pool, 1))).toEqual([1]);
    expect(take(pool, 1)).toBeUndefined();
    // ... while a fraction may still share GPU 0.
    expect(ids(take(pool, 0.75))).toEqual([0]);
  });

  it('sends 0.5 after 0.7 to another GPU: a fraction never spans devices', () => {
    const pool = newGpuPool([0, 1]);
    expect(ids(take(pool, 0.7))).toEqual([0]);
    expect(ids(take(pool, 0.5))).toEqual([1]);
    expect(ids(take(pool, 0.3))).toEqual([0]);
    expect(take(pool, 0.6)).toBeUndefined();
  });

  it('packs onto the most used GPU that still fits, ties to the lowest id', () => {
    const pool = newGpuPool([0, 1, 2]);
    debitGpus(pool, [
      { gpuId: 0, fraction: 0.25 },
      { gpuId: 1, fraction: 0.5 },
    ]);
    expect(ids(take(pool, 0.25))).toEqual([1]);
    expect(ids(take(pool, 0.5))).toEqual([0]);
    const even = newGpuPool([3, 5]);
    expect(ids(take(even, 0.1))).toEqual([3]);
  });

  it('hands out whole GPUs lowest id first', () => {
    const pool = newGpuPool([0, 1, 2, 3]);
    expect(ids(take(pool, 1))).toEqual([0]);
    expect(ids(take(pool, 2))).toEqual([1, 2]);
    expect(take(pool, 2)).toBeUndefined();
    expect(ids(take(pool, 1))).toEqual([3]);
  });

  it('takes the lowest fully free ids around a shared GPU: 2 GPUs after GPU 1 got a fraction → [0, 2]', () => {
    const pool = newGpuPool([0, 1, 2, 3]);
    debitGpus(pool, [{ gpuId: 1, fraction: 0.5 }]);
    expect(take(pool, 2)).toEqual([
      { gpuId: 0, fraction: 1 },
      { gpuId: 2, fraction: 1 },
    ]);
  });

  it('returns shares, capped at capacity, and ignores unknown ids', () => {
    const pool = newGpuPool([0, 1]);
    const shares = take(pool, 0.5)!;
    returnGpus(pool, shares);
    returnGpus(pool, shares);
    returnGpus(pool, [{ gpuId: 9, fraction: 1 }]);
    expect(freeShares(pool)).toEqual([
      { gpuId: 0, fraction: 1 },
      { gpuId: 1, fraction: 1 },
    ]);
  });

  it('records an over-committed restore and keeps the device out of use until it is paid back', () => {
    const pool = newGpuPool([0]);
    debitGpus(pool, [{ gpuId: 0, fraction: 1 }]);
    debitGpus(pool, [{ gpuId: 0, fraction: 0.5 }]);
    expect(freeShares(pool)).toEqual([{ gpuId: 0, fraction: 0 }]);
    expect(take(pool, 0.1)).toBeUndefined();
    returnGpus(pool, [{ gpuId: 0, fraction: 1 }]);
    expect(ids(take(pool, 0.5))).toEqual([0]);
  });

  it('serves a bundle pool in rank order with share-sized devices', () => {
    const whole = poolFromShares([
      { gpuId: 6, fraction: 1 },
      { gpuId: 2, fraction: 1 },
    ]);
    expect(ids(take(whole, 1))).toEqual([6]);
    expect(ids(take(whole, 0.5))).toEqual([2]);
    const half = poolFromShares([{ gpuId: 3, fraction: 0.5 }]);
    expect(canEverFit(half, toUnits(0.5))).toBe(true);
    expect(canEverFit(half, toUnits(0.6))).toBe(false);
    expect(canEverFit(half, toUnits(1))).toBe(false);
    expect(ids(take(half, 0.25))).toEqual([3]);
    expect(ids(take(half, 0.25))).toEqual([3]);
    expect(take(half, 0.25)).toBeUndefined();
  });

  it('answers "could it ever fit" from capacities', () => {
    const pool = newGpuPool([0, 1]);
    take(pool, 1);
    take(pool, 1);
    expect(canEverFit(pool, toUnits(2))).toBe(true);
    expect(canEverFit(pool, toUnits(3))).toBe(false);
    expect(canEverFit(newGpuPool([]), toUnits(0.1))).toBe(false);
    expect(canEverFit(newGpuPool([]), 0)).toBe(true);
  });
});
