import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { seededRandom } from '../../common/random.js';
import { mergeLora } from '../models/lora-merge.js';
import { LoraMergePool, MergeWorkerError } from './lora-merge-pool.js';

const rand = (n: number, seed: number) => {
  const r = seededRandom(seed);
  return Float32Array.from({ length: n }, () => r() - 0.5);
};

describe('LoraMergePool', () => {
  const pool = new LoraMergePool(2);
  afterAll(() => pool.close());

  it('merges on worker threads bit for bit as mergeLora does, several at once, inputs untouched', async () => {
    const cases = Array.from({ length: 6 }, (_, i) => {
      const dims = { out: 48 + i, in: 32, rank: 1 + (i % 4) };
      return {
        dims,
        base: rand(dims.out * dims.in, i),
        A: rand(dims.rank * dims.in, 100 + i),
        B: rand(dims.out * dims.rank, 200 + i),
      };
    });
    const merged = await Promise.all(cases.map((c) => pool.merge(c.base, c.A, c.B, 0.75, c.dims)));
    cases.forEach((c, i) => {
      expect(merged[i]).toEqual(mergeLora(c.base, c.A, c.B, 0.75, c.dims));
      expect(c.base.length).toBe(c.dims.out * c.dims.in); // copied to the thread, not transferred
    });
  });

  it('reports a shape mergeLora refuses as a ConfigError', async () => {
    const err = await pool
      .merge(new Float32Array(12), new Float32Array(5), new Float32Array(4), 1, { out: 4, in: 3, rank: 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('do not fit');
  });

  it('fails the tasks of a thread that dies with MergeWorkerError, then merges on a new thread', async () => {
    const dims = { out: 1024, in: 1024, rank: 64 };
    const slow = pool.merge(
      rand(dims.out * dims.in, 1),
      rand(dims.rank * dims.in, 2),
      rand(dims.out * dims.rank, 3),
      1,
      dims,
    );
    // The thread holding the task goes away mid-merge (as when it runs out of memory).
    const slots = (
      pool as unknown as { slots: { worker: { terminate(): Promise<number> }; busy: Set<number> }[] }
    ).slots;
    await slots.find((s) => s.busy.size > 0)!.worker.terminate();
    const err = await slow.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MergeWorkerError);
    expect((err as MergeWorkerError).retryable).toBe(true);
    const small = { out: 2, in: 2, rank: 1 };
    const again = await pool.merge(rand(4, 4), rand(2, 5), rand(2, 6), 1, small);
    expect(again).toEqual(mergeLora(rand(4, 4), rand(2, 5), rand(2, 6), 1, small));
  });

  it('refuses a size that is not a whole number ≥ 1, and fails what is queued when closed', async () => {
    expect(() => new LoraMergePool(0)).toThrow(/size must be a whole number/);
    const p = new LoraMergePool(1);
    const dims = { out: 512, in: 512, rank: 32 };
    const first = p
      .merge(rand(512 * 512, 1), rand(32 * 512, 2), rand(512 * 32, 3), 1, dims)
      .catch((e: unknown) => e);
    const queued = p
      .merge(rand(4, 1), rand(2, 2), rand(2, 3), 1, { out: 2, in: 2, rank: 1 })
      .catch((e: unknown) => e);
    await p.close();
    expect(await queued).toBeInstanceOf(MergeWorkerError);
    expect(await first).toBeInstanceOf(MergeWorkerError);
  });
});
