import type { GradientReducer } from './policy-trainer.js';

/**
 * An all-reduce among in-process ranks, call by call (one call per gradient bucket): each rank's
 * buffer becomes the sum of all of them once every rank has called.
 */
export function inMemoryAllReduce(ranks: number): GradientReducer[] {
  let buffers: Float32Array[] = [];
  let waiting: Array<() => void> = [];
  return Array.from({ length: ranks }, () => async (flat: Float32Array) => {
    buffers.push(flat);
    if (buffers.length < ranks) {
      await new Promise<void>((resolve) => waiting.push(resolve));
      return;
    }
    const sum = new Float32Array(flat.length);
    for (const b of buffers) for (let i = 0; i < sum.length; i++) sum[i] += b[i];
    for (const b of buffers) b.set(sum);
    const release = waiting;
    buffers = [];
    waiting = [];
    for (const r of release) r();
  });
}
