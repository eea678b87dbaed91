import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCollectiveGroup } from '../actors/collective/driver.js';
import { CollectiveError } from '../actors/collective/errors.js';
import { ActorError } from '../common/errors.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { createGroups } from './helpers/collective-groups.js';
import { fixture, TestCluster, within } from './helpers/processes.js';

const module = fixture('collective-rank.mjs');

const intValue = (rank: number, i: number): number => (rank + 1) * ((i % 251) + 1);

/** What every rank must hold after all-reducing the 'int' fill (exact in fp32). */
function expected(size: number, n: number, op: 'sum' | 'mean'): Float32Array {
  const out = new Float32Array(size);
  for (let i = 0; i < size; i++) {
    let sum = 0;
    for (let r = 0; r < n; r++) sum += intValue(r, i);
    out[i] = op === 'mean' ? sum / n : sum;
  }
  return out;
}

const checksum = (buf: Float32Array): string =>
  createHash('sha256')
    .update(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength))
    .digest('hex');

interface Summary {
  checksum: string;
  length: number;
  samples: Array<[number, number]>;
}

describe('collective groups in one process', () => {
  it('all-reduces with many pipelined sub-chunks and odd sizes, bit-identical', async () => {
    const gs = await createGroups(3, () => ({ subChunkBytes: 64, timeoutMs: 3000 }));
    await Promise.all(gs.map((g) => g.connect(gs.map((x) => x.address))));
    for (const size of [1, 2, 3, 7, 1001, 4099]) {
      for (const op of ['sum', 'mean'] as const) {
        const bufs = gs.map((_, r) =>
          Float32Array.from({ length: size }, (_, i) => Math.fround(Math.sin(i + r))),
        );
        await Promise.all(gs.map((g, r) => g.allReduce(bufs[r]!, op)));
        const sums = bufs.map(checksum);
        expect(new Set(sums).size).toBe(1);
        for (let i = 0; i < size; i++) {
          const want = (Math.sin(i) + Math.sin(i + 1) + Math.sin(i + 2)) / (op === 'mean' ? 3 : 1);
          expect(bufs[0]![i]).toBeCloseTo(want, 5);
        }
      }
    }
    // Back-to-back operations without waiting in between, and a broadcast.
    const a = gs.map(() => new Float32Array(500).fill(1));
    const b = gs.map((_, r) => new Float32Array(300).fill(r));
    await Promise.all(gs.flatMap((g, r) => [g.allReduce(a[r]!), g.broadcast(b[r]!, 2)]));
    for (const r of [0, 1, 2]) {
      expect(a[r]!.every((x) => x === 3)).toBe(true);
      expect(b[r]!.every((x) => x === 2)).toBe(true);
    }
    // Different lengths on different ranks: a clear protocol error, not a hang.
    const bad = await Promise.allSettled(gs.map((g, r) => g.allReduce(new Float32Array(r === 1 ? 10 : 12))));
    expect(bad.some((x) => x.status === 'rejected' && /protocol mismatch/.test(String(x.reason)))).toBe(true);
    expect(bad.every((x) => x.status === 'rejected' && x.reason instanceof CollectiveError)).toBe(true);
    await Promise.all(gs.map((g) => g.close()));
  });

  it('refuses a peer with the wrong token', async () => {
    const gs = await createGroups(2, (r) => ({ token: r === 0 ? 'right' : 'wrong', timeoutMs: 3000 }));
    const results = await Promise.allSettled(gs.map((g) => g.connect(gs.map((x) => x.address))));
    for (const r of results) {
      expect(r.status).toBe('rejected');
      expect(String((r as PromiseRejectedResult).reason)).toMatch(/wrong cluster token/);
    }
    await Promise.all(gs.map((g) => g.close()));
  });
});

describe('collectives between actors on a real cluster', () => {
  const tc = new TestCluster();
  let cluster: Cluster;

  beforeAll(async () => {
    await tc.startHead();
    await tc.startWorker({ cpus: 32, poolSize: 4 });
    cluster = await tc.connect();
  });
  afterAll(() => tc.teardown());

  const spawn = (n: number): Promise<ActorHandle[]> =>
    Promise.all(
      Array.from({ length: n }, () => cluster.createActor({ module, className: 'CollectiveRank' })),
    );

  async function group(n: number, name: string, timeoutMs = 20_000): Promise<ActorHandle[]> {
    const ranks = await spawn(n);
    await createCollectiveGroup(cluster, ranks, name, { timeoutMs });
    return ranks;
  }

  async function allReduce(ranks: ActorHandle[], size: number, op: 'sum' | 'mean'): Promise<Summary[]> {
    await Promise.all(ranks.map((h) => h.call('fill', size, 'int')));
    return (await Promise.all(ranks.map((h) => h.call('runAllReduce', op)))) as Summary[];
  }

  for (const n of [2, 4]) {
    it(`all-reduces sum and mean over ${n} ranks, bit-identical, for any size`, async () => {
      const ranks = await group(n, `g${n}`);
      for (const size of [100_003, n - 1, 1, 4 * n + 1, 3_000_001]) {
        for (const op of ['sum', 'mean'] as const) {
          const results = await allReduce(ranks, size, op);
          const want = checksum(expected(size, n, op));
          for (const r of results) {
            expect(r.length).toBe(size);
            expect(r.checksum).toBe(want);
          }
        }
      }
      // Order-dependent values: whatever the rounding, every rank holds the same bytes.
      await Promise.all(ranks.map((h) => h.call('fill', 1_000_003, 'frac')));
      const frac = (await Promise.all(ranks.map((h) => h.call('runAllReduce', 'sum')))) as Summary[];
      expect(new Set(frac.map((r) => r.checksum)).size).toBe(1);
    });
  }

  it('all-reduces a 64 MiB buffer over 4 ranks', async () => {
    const ranks = await group(4, 'big');
    const size = 16 * 1024 * 1024;
    const results = await allReduce(ranks, size, 'sum');
    const want = checksum(expected(size, 4, 'sum'));
    for (const r of results) expect(r.checksum).toBe(want);
  });

  it('broadcasts from a non-zero root', async () => {
    const ranks = await group(4, 'bcast');
    for (const [size, root] of [
      [2_500_001, 2],
      [3, 3],
    ] as const) {
      const results = (await Promise.all(ranks.map((h) => h.call('runBroadcast', size, root)))) as Summary[];
      const fromRoot = results[root]!;
      for (const r of results) expect(r.checksum).toBe(fromRoot.checksum);
      expect(results[0]!.samples).toEqual(fromRoot.samples);
    }
  });

  it('fails every rank with CollectiveError naming a rank that dies mid-operation, then rebuilds', async () => {
    const ranks = await group(4, 'crash', 10_000);
    await Promise.all(ranks.map((h) => h.call('fill', 16 * 1024 * 1024, 'int')));
    const outcomes = await within(
      30_000,
      'the all-reduce with a dead rank',
      Promise.allSettled(
        ranks.map((h, r) =>
          r === 2
            ? h.call('crash', 20).then(() => h.call('runAllReduce', 'sum'))
            : h.call('runAllReduce', 'sum'),
        ),
      ),
    );
    for (const r of [0, 1, 3]) {
      const outcome = outcomes[r]!;
      expect(outcome.status).toBe('rejected');
      const err = (outcome as PromiseRejectedResult).reason as ActorError;
      expect(err).toBeInstanceOf(ActorError);
      expect(err.remoteName).toBe('CollectiveError');
      expect(err.message).toMatch(/rank 2 /);
    }
    // A new actor for rank 2 and a re-init of the survivors: a working group again.
    const [fresh] = await spawn(1);
    const rebuilt = [ranks[0]!, ranks[1]!, fresh!, ranks[3]!];
    await createCollectiveGroup(cluster, rebuilt, 'crash', { timeoutMs: 10_000 });
    const results = await allReduce(rebuilt, 10_007, 'mean');
    const want = checksum(expected(10_007, 4, 'mean'));
    for (const r of results) expect(r.checksum).toBe(want);
  });

  it('times out instead of hanging when a rank never joins the operation', async () => {
    const ranks = await group(2, 'late', 800);
    await Promise.all(ranks.map((h) => h.call('fill', 1000, 'int')));
    const err = (await within(10_000, 'the lone all-reduce', ranks[0]!.call('runAllReduce', 'sum')).catch(
      (e: unknown) => e,
    )) as ActorError;
    expect(err).toBeInstanceOf(ActorError);
    expect(err.remoteName).toBe('CollectiveError');
    expect(err.message).toMatch(/no progress for 800 ms waiting on rank 1/);
  });

  it('refuses a rank presenting the wrong token', async () => {
    const [a, b] = await spawn(2);
    const addresses = await Promise.all([
      a!.call('collectiveInit', 0, 2, 'tok', { timeoutMs: 5000 }),
      b!.call('collectiveInit', 1, 2, 'tok', { timeoutMs: 5000, token: 'not-the-cluster-token' }),
    ]);
    const results = await Promise.allSettled([a!, b!].map((h) => h.call('collectiveConnect', addresses)));
    for (const r of results) {
      expect(r.status).toBe('rejected');
      const err = (r as PromiseRejectedResult).reason as ActorError;
      expect(err.remoteName).toBe('CollectiveError');
      expect(err.message).toMatch(/wrong cluster token/);
    }
  });
});
