/**
 * The all-reduce of a group whose ranks all share one host: through a shared region
 * (shared-memory.ts) instead of around the ring, as Gloo's and NCCL's shared-memory transports
 * do. The sockets carry only barriers.
 *
 * The buffer goes through in windows of W floats. The region holds, for each window parity
 * (0/1), one input slot of W floats per rank and one output slot of W floats: 2(N+1)·W floats.
 * For window w each rank copies its slice into its input slot (parity w mod 2); after a barrier,
 * rank r sums its 1/N share of the window over every rank's slot, in rank order, into the output
 * slot; after the next barrier every rank copies the whole output slot out. Between two barriers
 * a rank works on three windows (copies one out, sums its share of the next, copies in the one
 * after); the parities keep a slot from being rewritten while another rank may still read it. A window's share is summed by one
 * rank only and copied by all, so every rank ends with the same bits.
 *
 * Per rank and byte of the buffer: one copy in, one read of N shares (through the reduce
 * kernel's memory), one copy out, and no system call; the ring moves 2(N−1)/N of the bytes
 * through the kernel each way.
 */
import type { ReduceKernel } from './reduce-kernel.js';

/** Floats of the shared region for `worldSize` ranks and windows of `windowFloats`. */
export function shmRegionFloats(worldSize: number, windowFloats: number): number {
  return 2 * (worldSize + 1) * windowFloats;
}

/** [start, end) of part `c` when `len` elements are cut into `n` parts. */
export function partBounds(len: number, n: number, c: number): [number, number] {
  return [Math.floor((c * len) / n), Math.floor(((c + 1) * len) / n)];
}

export interface ShmAllReduceInput {
  region: Float32Array;
  rank: number;
  worldSize: number;
  windowFloats: number;
  buffer: Float32Array;
  kernel: ReduceKernel;
  /** 1 for a sum, the world size for a mean. */
  divideBy: number;
}

export interface ShmAllReducePlan {
  /** Barriers the operation takes: one per window, and one more (at least one in all). */
  readonly barriers: number;
  /** The local work before barrier `b` is entered (b = 0 … barriers − 1) and after the last (b = barriers). */
  work(b: number): void;
}

export function planShmAllReduce(input: ShmAllReduceInput): ShmAllReducePlan {
  const { region, rank, worldSize: n, windowFloats: size, buffer, kernel, divideBy } = input;
  const windows = Math.ceil(buffer.length / size);
  const length = (w: number): number => Math.min(size, buffer.length - w * size);
  const inputAt = (w: number, r: number): number => ((w % 2) * n + r) * size;
  const outputAt = (w: number): number => (2 * n + (w % 2)) * size;
  const copyIn = (w: number): void => {
    region.set(buffer.subarray(w * size, w * size + length(w)), inputAt(w, rank));
  };
  const sum = (w: number): void => {
    const [s, e] = partBounds(length(w), n, rank);
    const inputs = Array.from({ length: n }, (_, r) => region.subarray(inputAt(w, r) + s, inputAt(w, r) + e));
    kernel.sumInto(region.subarray(outputAt(w) + s, outputAt(w) + e), inputs, e - s, divideBy);
  };
  const copyOut = (w: number): void => {
    buffer.set(region.subarray(outputAt(w), outputAt(w) + length(w)), w * size);
  };
  return {
    barriers: windows + 1,
    work(b) {
      // Entering barrier b: window b−1's share is summed and window b is in.
      if (b >= 2) copyOut(b - 2);
      if (b >= 1 && b - 1 < windows) sum(b - 1);
      if (b < windows) copyIn(b);
    },
  };
}
