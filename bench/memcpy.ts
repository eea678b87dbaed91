/**
 * This process's memory-copy bandwidth, the physical reference of the benches that move bytes
 * in memory (the rollout engine's weight reads, the shared-memory all-reduce): one
 * `Buffer.copy` of 1 GiB, best of 3.
 */
export function memcpyBytesPerSecond(size = 2 ** 30): number {
  const from = Buffer.alloc(size, 1);
  const to = Buffer.alloc(size);
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i < 3; i++) {
    const t = performance.now();
    from.copy(to);
    best = Math.min(best, performance.now() - t);
  }
  return size / (best / 1000);
}
