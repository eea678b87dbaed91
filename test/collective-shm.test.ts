/**
 * The same-host shared-memory all-reduce: its window schedule driven in-process with the ranks'
 * work interleaved at random between barriers (a slot rewritten while another rank still needs
 * it shows up as a wrong sum), the reduce kernel's rank-order sum, and groups over real mapped
 * memory: the choice under 'auto' and 'shm', the fallback when a rank cannot map the region,
 * and the mapping gone after close. Separate rank processes (and a rank killed mid-operation)
 * are in collective-transport.test.ts.
 */
import { readFileSync } from 'node:fs';
import { register } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CollectiveError } from '../actors/collective/errors.js';
import { CollectiveGroup } from '../actors/collective/group.js';
import { reduceKernel } from '../actors/collective/reduce-kernel.js';
import { type SharedMemory, sharedMemory } from '../actors/collective/shared-memory.js';
import { planShmAllReduce, shmRegionFloats } from '../actors/collective/shm-allreduce.js';
import { ConfigError } from '../common/errors.js';
import { createGroups } from './helpers/collective-groups.js';

/** Values whose float32 sum depends on the order of addition. */
const value = (rank: number, i: number): number =>
  Math.fround(Math.sin(i * 0.37 + rank * 1.3) * (rank + 1) * 1e-3 + 1 / (i + rank + 3));

const fill = (rank: number, size: number): Float32Array =>
  Float32Array.from({ length: size }, (_, i) => value(rank, i));

/** Rank 0's value plus rank 1's, plus rank 2's…, rounded to float32 at each add, then divided. */
function rankOrderSum(n: number, size: number, divideBy: number): Float32Array {
  const out = new Float32Array(size);
  for (let i = 0; i < size; i++) {
    let sum = value(0, i);
    for (let r = 1; r < n; r++) sum = Math.fround(sum + value(r, i));
    out[i] = sum / divideBy;
  }
  return out;
}

/** Same bits (toEqual walks large arrays element by element, slowly). */
function expectSameBits(got: Float32Array, want: Float32Array): void {
  expect(got.length).toBe(want.length);
  const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  expect(bytes(got).equals(bytes(want))).toBe(true);
}

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('shared-memory all-reduce schedule', () => {
  it('gives every rank the rank-order sum whatever order the ranks work in between barriers', () => {
    const random = seeded(7);
    for (const n of [2, 3, 5]) {
      for (const [size, windowFloats] of [
        [0, 8],
        [1, 8],
        [7, 8],
        [8, 8],
        [1001, 16],
        [4099, 64],
        [30, 1000],
      ] as const) {
        for (const divideBy of [1, n]) {
          const region = new Float32Array(shmRegionFloats(n, windowFloats)).fill(Number.NaN);
          const buffers = Array.from({ length: n }, (_, r) => fill(r, size));
          const plans = buffers.map((buffer, rank) =>
            planShmAllReduce({
              region,
              rank,
              worldSize: n,
              windowFloats,
              buffer,
              kernel: reduceKernel(64),
              divideBy,
            }),
          );
          const barriers = plans[0]!.barriers;
          expect(barriers).toBe(Math.ceil(size / windowFloats) + 1);
          // Between two barriers the ranks' work may run in any order; each rank's work is one step.
          for (let b = 0; b <= barriers; b++) {
            const order = Array.from({ length: n }, (_, r) => r).sort(() => random() - 0.5);
            for (const r of order) plans[r]!.work(b);
          }
          const want = rankOrderSum(n, size, divideBy);
          for (const buffer of buffers) expectSameBits(buffer, want);
        }
      }
    }
  });

  it('the reduce kernel sums slices in rank order, the SIMD kernel and the JS loop bit for bit', () => {
    for (const forceJs of [false, true]) {
      for (const n of [1, 2, 4]) {
        for (const count of [0, 3, 4, 17, 70_001]) {
          const kernel = reduceKernel(4096, { forceJs });
          const inputs = Array.from({ length: n }, (_, r) => fill(r, count));
          for (const divideBy of [1, n]) {
            const out = new Float32Array(count).fill(Number.NaN);
            kernel.sumInto(out, inputs, count, divideBy);
            expectSameBits(out, rankOrderSum(n, count, divideBy));
          }
        }
      }
    }
  });
});

/** Mappings of collective regions in this process (/proc/self/maps). */
const mappedRegions = (): number =>
  readFileSync('/proc/self/maps', 'utf8')
    .split('\n')
    .filter((line) => line.includes('memfd:clawray-collective')).length;

/** The host's shared memory, with `open` replaced (a rank that cannot map the region). */
async function hostWithOpen(open: SharedMemory['open']): Promise<SharedMemory> {
  const host = await sharedMemory();
  if (typeof host === 'string') throw new Error(host);
  return { create: (bytes, name) => host.create(bytes, name), open };
}

const connectAll = (gs: CollectiveGroup[]) =>
  Promise.allSettled(gs.map((g) => g.connect(gs.map((x) => x.address))));

describe('shared-memory groups', () => {
  it("'auto' on one host all-reduces through mapped memory: exact, many windows, then unmapped", async () => {
    const before = mappedRegions();
    const gs = await createGroups(3, () => ({ shmWindowBytes: 256 }));
    for (const r of await connectAll(gs)) expect(r.status).toBe('fulfilled');
    expect(gs.map((g) => g.transport)).toEqual(['shm', 'shm', 'shm']);
    expect(gs[0]!.sharedMemoryUnavailable).toBeUndefined();
    expect(mappedRegions()).toBe(before + 3);
    for (const size of [0, 1, 63, 64, 65, 10_007]) {
      for (const op of ['sum', 'mean'] as const) {
        const bufs = gs.map((_, r) => fill(r, size));
        await Promise.all(gs.map((g, r) => g.allReduce(bufs[r]!, op)));
        const want = rankOrderSum(3, size, op === 'mean' ? 3 : 1);
        for (const buf of bufs) expectSameBits(buf, want);
      }
    }
    // Operations queued back to back, a broadcast among them (over the ring's sockets).
    const a = gs.map(() => new Float32Array(500).fill(1));
    const b = gs.map((_, r) => new Float32Array(300).fill(r));
    const c = gs.map(() => new Float32Array(70).fill(2));
    await Promise.all(
      gs.flatMap((g, r) => [g.allReduce(a[r]!), g.broadcast(b[r]!, 2), g.allReduce(c[r]!, 'mean')]),
    );
    for (const r of [0, 1, 2]) {
      expect(a[r]!.every((x) => x === 3)).toBe(true);
      expect(b[r]!.every((x) => x === 2)).toBe(true);
      expect(c[r]!.every((x) => x === 2)).toBe(true);
    }
    const metrics = await register.metrics();
    expect(metrics).toMatch(/clawray_allreduce_bytes_total\{transport="shm"\} [1-9]/);
    expect(metrics).toMatch(/clawray_broadcast_bytes_total\{transport="unix"\} [1-9]/);
    // Different lengths on different ranks: the barrier frames carry the length.
    const bad = await Promise.allSettled(gs.map((g, r) => g.allReduce(new Float32Array(r === 1 ? 10 : 12))));
    expect(bad.some((x) => x.status === 'rejected' && /protocol mismatch/.test(String(x.reason)))).toBe(true);
    expect(bad.every((x) => x.status === 'rejected' && x.reason instanceof CollectiveError)).toBe(true);
    await Promise.all(gs.map((g) => g.close()));
    expect(mappedRegions()).toBe(before);
  });

  it("'auto' keeps its sockets when one rank cannot map the region, and says why; 'shm' fails connect", async () => {
    const before = mappedRegions();
    const cannotOpen = await hostWithOpen(() => {
      throw new Error('no such file');
    });
    const fallback = await createGroups(3, (rank) => (rank === 2 ? { sharedMemory: cannotOpen } : {}));
    for (const r of await connectAll(fallback)) expect(r.status).toBe('fulfilled');
    expect(fallback.map((g) => g.transport)).toEqual(['unix', 'unix', 'unix']);
    expect(fallback[2]!.sharedMemoryUnavailable).toMatch(
      /rank 2 cannot map rank 0's shared memory: no such file/,
    );
    expect(fallback[0]!.sharedMemoryUnavailable).toMatch(/1 rank\(s\) could not map/);
    expect(mappedRegions()).toBe(before);
    const bufs = fallback.map((_, r) => fill(r, 5000));
    await Promise.all(fallback.map((g, r) => g.allReduce(bufs[r]!)));
    for (const buf of bufs) expectSameBits(buf, bufs[0]!);
    await Promise.all(fallback.map((g) => g.close()));

    // Rank 0 without shared memory at all (what a host without koffi reports).
    const forced = await createGroups(2, (rank) => ({
      transport: 'shm',
      ...(rank === 0 ? { sharedMemory: 'the optional dependency koffi is not installed' } : {}),
    }));
    const outcomes = await connectAll(forced);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const err = (outcome as PromiseRejectedResult).reason;
      expect(err).toBeInstanceOf(CollectiveError);
      expect(String(err.message)).toMatch(/transport 'shm': rank 0 cannot create .* koffi is not installed/);
    }
    await Promise.all(forced.map((g) => g.close()));
    expect(mappedRegions()).toBe(before);
  });

  it('a group closed while its all-reduce is between windows fails the others and touches no unmapped page', async () => {
    const before = mappedRegions();
    // 64-byte windows: a 200,000-float buffer takes 12,501 barriers, so the close lands mid-operation.
    const gs = await createGroups(3, () => ({ shmWindowBytes: 64 }));
    for (const r of await connectAll(gs)) expect(r.status).toBe('fulfilled');
    const ops = gs.map((g, r) => g.allReduce(fill(r, 200_000)));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await gs[1]!.close();
    const outcomes = await Promise.allSettled(ops);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(CollectiveError);
    }
    expect(String((outcomes[2] as PromiseRejectedResult).reason)).toMatch(/rank 1 /);
    await Promise.all(gs.map((g) => g.close()));
    expect(mappedRegions()).toBe(before);
  });

  it('a rank lost while the region is being set up fails connect on the others and frees the region', async () => {
    const before = mappedRegions();
    let gs: CollectiveGroup[] = [];
    // Rank 2 goes away at the moment it would map rank 0's region.
    const dies = await hostWithOpen(() => {
      void gs[2]!.close();
      throw new Error('gone');
    });
    gs = await createGroups(3, (rank) => (rank === 2 ? { sharedMemory: dies } : {}));
    const outcomes = await connectAll(gs);
    for (const rank of [0, 1]) {
      expect(outcomes[rank]!.status).toBe('rejected');
      expect((outcomes[rank] as PromiseRejectedResult).reason).toBeInstanceOf(CollectiveError);
    }
    await Promise.all(gs.map((g) => g.close()));
    expect(mappedRegions()).toBe(before);
  });

  it("'shm' refuses ranks that are not all on this host, and bad windows, naming the field", async () => {
    const gs = await createGroups(2, (rank) => ({ transport: rank === 0 ? 'tcp' : 'shm', timeoutMs: 500 }));
    const outcomes = await connectAll(gs);
    const err = (outcomes[1] as PromiseRejectedResult).reason;
    expect(err).toBeInstanceOf(ConfigError);
    expect(String(err.message)).toMatch(/transport 'shm' needs every rank on one host/);
    await Promise.all(gs.map((g) => g.close()));
    await expect(
      CollectiveGroup.create({ rank: 0, worldSize: 2, groupName: 'x', token: 't', shmWindowBytes: 10 }),
    ).rejects.toThrow(/shmWindowBytes must be a multiple of 4 ≥ 16, got 10/);
    // A window under a transport that never maps memory would be ignored: refused instead.
    await expect(
      CollectiveGroup.create({
        rank: 0,
        worldSize: 2,
        groupName: 'x',
        token: 't',
        transport: 'tcp',
        shmWindowBytes: 64,
      }),
    ).rejects.toThrow(/shmWindowBytes applies to transport 'auto' or 'shm'; transport 'tcp' never uses/);
  });
});
