/**
 * Per-device GPU bookkeeping. A node's pool holds each physical GPU at capacity 1.0; a
 * placement-group bundle's pool holds the shares the bundle reserved (in rank order), so the
 * same rules serve both.
 *
 * Rules (Ray's, minus Ray bug #52915, where a 1.0 and a 0.25 request landed on one GPU):
 * - a fraction (< 1) sits on ONE device and goes to the most-used device it still fits on, so
 *   one GPU fills before the next is broken into (ties: earliest in pool order);
 * - 1 or more whole GPUs take devices that are entirely free, earliest in pool order first. A
 *   device holding any fraction is never handed out as a whole GPU.
 */
import type { GpuShare } from '../../common/resources.js';
import { fromUnits, toUnits, UNIT } from './units.js';

export interface GpuPool {
  /** Device ids in preference order: ascending for a node, rank order for a bundle. */
  ids: number[];
  /** Units each device holds in this pool (UNIT for a node's GPU, the share for a bundle's). */
  capacity: number[];
  /** Free units per device; negative only after an over-committed restore. */
  free: number[];
}

export function newGpuPool(ids: readonly number[], capacity?: readonly number[]): GpuPool {
  const caps = capacity ? [...capacity] : ids.map(() => UNIT);
  return { ids: [...ids], capacity: caps, free: [...caps] };
}

export function poolFromShares(shares: readonly GpuShare[]): GpuPool {
  return newGpuPool(
    shares.map((s) => s.gpuId),
    shares.map((s) => toUnits(s.fraction)),
  );
}

export function emptyClone(pool: GpuPool): GpuPool {
  return newGpuPool(pool.ids, pool.capacity);
}

const NO_PICKS: readonly number[] = Object.freeze([]);

/**
 * The device a fraction of `need` units goes to: the most used one it still fits on, the
 * earliest on ties; -1 when none has room. Allocation-free for the scheduler's hot loop.
 */
export function fractionDevice(pool: GpuPool, need: number): number {
  const { capacity, free } = pool;
  let best = -1;
  let bestUsed = -1;
  for (let i = 0; i < free.length; i++) {
    if (free[i] < need) continue;
    const used = capacity[i] - free[i];
    if (used > bestUsed) {
      best = i;
      bestUsed = used;
    }
  }
  return best;
}

/** Whether at least `count` devices of the pool are entirely free whole GPUs. */
export function hasWholeFree(pool: GpuPool, count: number): boolean {
  const { capacity, free } = pool;
  let n = 0;
  for (let i = 0; i < free.length; i++) {
    if (capacity[i] >= UNIT && free[i] === capacity[i] && ++n >= count) return true;
  }
  return false;
}

/**
 * The pool positions a request of `need` units would take, or undefined when it does not fit
 * now. Whole requests must be multiples of UNIT (validated by `toUnitVector`).
 */
export function chooseGpus(pool: GpuPool, need: number): readonly number[] | undefined {
  if (need <= 0) return NO_PICKS;
  if (need < UNIT) {
    const device = fractionDevice(pool, need);
    return device < 0 ? undefined : [device];
  }
  const count = need / UNIT;
  const picks: number[] = [];
  const { capacity, free } = pool;
  for (let i = 0; i < free.length && picks.length < count; i++) {
    if (capacity[i] >= UNIT && free[i] === capacity[i]) picks.push(i);
  }
  return picks.length === count ? picks : undefined;
}

/** Whether `need` could fit an entirely free pool (the "ever" test, on capacities). */
export function canEverFit(pool: GpuPool, need: number): boolean {
  if (need <= 0) return true;
  if (need < UNIT) return pool.capacity.some((c) => c >= need);
  return pool.capacity.filter((c) => c >= UNIT).length >= need / UNIT;
}

/** Takes the picked devices and returns the shares in pick (rank) order. */
export function takeGpus(pool: GpuPool, picks: readonly number[], need: number): GpuShare[] {
  const each = Math.min(need, UNIT);
  return picks.map((i) => {
    pool.free[i] -= each;
    return { gpuId: pool.ids[i], fraction: fromUnits(each) };
  });
}

/** Returns shares; capped at capacity so a double release cannot mint GPU. Unknown ids are ignored. */
export function returnGpus(pool: GpuPool, shares: readonly GpuShare[]): void {
  for (const share of shares) {
    const i = pool.ids.indexOf(share.gpuId);
    if (i >= 0) pool.free[i] = Math.min(pool.capacity[i], pool.free[i] + toUnits(share.fraction));
  }
}

/** Re-applies known shares without checks; a device may go negative (over-commit is recorded). */
export function debitGpus(pool: GpuPool, shares: readonly GpuShare[]): void {
  for (const share of shares) {
    const i = pool.ids.indexOf(share.gpuId);
    if (i >= 0) pool.free[i] -= toUnits(share.fraction);
  }
}

/** Free share of each device in pool order, negatives read as 0. */
export function freeShares(pool: GpuPool): GpuShare[] {
  return pool.ids.map((gpuId, i) => ({ gpuId, fraction: fromUnits(Math.max(0, pool.free[i])) }));
}
