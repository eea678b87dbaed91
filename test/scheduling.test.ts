import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InfeasibleError, NotFoundError, SchedulingTimeoutError } from '../common/errors.js';
import type { ActorHandle, Cluster } from '../runtime/index.js';
import { eventually, fixture, TestCluster } from './helpers/processes.js';

const module = fixture('counter.mjs');

interface Where {
  nodeId: string;
  gpuIds: number[];
  cudaVisibleDevices: string;
  childSees: string;
}

const where = (h: ActorHandle) => h.call('context') as Promise<Where>;

describe('GPU-partitioned scheduling on a two-node cluster', () => {
  const tc = new TestCluster();
  let cluster: Cluster;
  let big: string; // node with 4 GPUs, label zone=a
  let small: string; // node with 2 GPUs, label zone=b, custom resource

  beforeAll(async () => {
    await tc.startHead();
    big = (await tc.startWorker({ gpus: 4, cpus: 8, labels: { zone: 'a' }, poolSize: 3 })).nodeId;
    small = (
      await tc.startWorker({ gpus: 2, cpus: 4, labels: { zone: 'b' }, resources: { tpu: 2 }, poolSize: 3 })
    ).nodeId;
    cluster = await tc.connect();
  });
  afterAll(() => tc.teardown());

  async function killAll(handles: ActorHandle[]) {
    await Promise.all(handles.map((h) => cluster.killActor(h)));
  }

  it('packs fractions onto one GPU before the next, never sharing a whole GPU, and sets CUDA_VISIBLE_DEVICES', async () => {
    const opts = { labelSelector: { zone: 'a' } };
    const halfA = await cluster.createActor({
      module,
      className: 'Counter',
      options: { ...opts, numGpus: 0.5 },
    });
    const halfB = await cluster.createActor({
      module,
      className: 'Counter',
      options: { ...opts, numGpus: 0.5 },
    });
    const whole = await cluster.createActor({
      module,
      className: 'Counter',
      options: { ...opts, numGpus: 1 },
    });
    const quarter = await cluster.createActor({
      module,
      className: 'Counter',
      options: { ...opts, numGpus: 0.25 },
    });
    const [a, b, w, q] = await Promise.all([halfA, halfB, whole, quarter].map(where));
    expect(a.gpuIds).toEqual(b.gpuIds);
    expect(a.gpuIds).toHaveLength(1);
    expect(w.gpuIds).toHaveLength(1);
    expect(w.gpuIds[0]).not.toBe(a.gpuIds[0]);
    expect(q.gpuIds).toHaveLength(1);
    expect([a.gpuIds[0], w.gpuIds[0]]).not.toContain(q.gpuIds[0]);
    for (const x of [a, b, w, q]) {
      expect(x.nodeId).toBe(big);
      expect(x.cudaVisibleDevices).toBe(x.gpuIds.join(','));
      // A child process of the actor sees the same devices: it is the real environment.
      expect(x.childSees).toBe(x.gpuIds.join(','));
    }
    await killAll([halfA, halfB, whole, quarter]);
  });

  it('gives multi-GPU actors whole, distinct GPUs', async () => {
    const two = await cluster.createActor({
      module,
      className: 'Counter',
      options: { numGpus: 2, labelSelector: { zone: 'b' } },
    });
    const w = await where(two);
    expect(w.nodeId).toBe(small);
    expect(w.gpuIds).toEqual([0, 1]);
    expect(w.cudaVisibleDevices).toBe('0,1');
    const none = await cluster.createActor({ module, className: 'Counter' });
    expect((await where(none)).cudaVisibleDevices).toBe('');
    await killAll([two, none]);
  });

  it('places by label selector and custom resources', async () => {
    const notA = await cluster.createActor({
      module,
      className: 'Counter',
      options: { labelSelector: { zone: '!a' } },
    });
    const tpu = await cluster.createActor({
      module,
      className: 'Counter',
      options: { resources: { tpu: 1 } },
    });
    expect((await where(notA)).nodeId).toBe(small);
    expect((await where(tpu)).nodeId).toBe(small);
    await killAll([notA, tpu]);
  });

  it('fails an infeasible request at once, naming the resource and the largest node', async () => {
    const gpus = (await cluster
      .createActor({ module, className: 'Counter', options: { numGpus: 8 } })
      .catch((e: unknown) => e)) as InfeasibleError;
    expect(gpus).toBeInstanceOf(InfeasibleError);
    expect(gpus.message).toContain('8 GPU');
    expect(gpus.message).toContain(big);
    expect(gpus.message).toContain('4 GPU');
    const custom = (await cluster
      .createActor({ module, className: 'Counter', options: { resources: { tpu: 3 } } })
      .catch((e: unknown) => e)) as InfeasibleError;
    expect(custom).toBeInstanceOf(InfeasibleError);
    expect(custom.message).toContain('tpu');
    const label = await cluster
      .createActor({ module, className: 'Counter', options: { labelSelector: { zone: 'c' } } })
      .catch((e: unknown) => e);
    expect(label).toBeInstanceOf(InfeasibleError);
    expect((label as Error).message).toContain('zone');
  });

  it('makes a feasible but busy request wait, with an optional timeout', async () => {
    const holders = await Promise.all(
      [0, 1].map(() =>
        cluster.createActor({
          module,
          className: 'Counter',
          options: { numGpus: 1, labelSelector: { zone: 'b' } },
        }),
      ),
    );
    const timedOut = await cluster
      .createActor({
        module,
        className: 'Counter',
        options: { numGpus: 1, labelSelector: { zone: 'b' }, scheduleTimeoutMs: 300 },
      })
      .catch((e: unknown) => e);
    expect(timedOut).toBeInstanceOf(SchedulingTimeoutError);
    const waiting = cluster.createActor({
      module,
      className: 'Counter',
      options: { numGpus: 1, labelSelector: { zone: 'b' } },
    });
    await eventually(async () => (await cluster.listActors({ state: 'PENDING_CREATION' })).length === 1);
    await cluster.killActor(holders[0]);
    const placed = await waiting;
    expect((await where(placed)).gpuIds).toHaveLength(1);
    await killAll([holders[1], placed]);
  });

  it('reserves PACK and STRICT_PACK groups on one node with GPU ids in rank order', async () => {
    for (const strategy of ['PACK', 'STRICT_PACK'] as const) {
      const pg = await cluster.createPlacementGroup({
        bundles: [{ numGpus: 1 }, { numGpus: 1 }, { numGpus: 1 }],
        strategy,
      });
      expect(new Set(pg.bundles.map((b) => b.nodeId)).size).toBe(1);
      const ids = pg.bundles.map((b) => b.gpus[0].gpuId);
      expect(ids).toEqual([...ids].sort((x, y) => x - y));
      const ranks = await Promise.all(
        [0, 1, 2].map((bundleIndex) =>
          cluster.createActor({
            module,
            className: 'Counter',
            options: { numGpus: 1, placementGroup: pg, bundleIndex },
          }),
        ),
      );
      const seen = await Promise.all(ranks.map(where));
      expect(seen.map((s) => s.gpuIds[0])).toEqual(ids);
      expect(seen.map((s) => s.cudaVisibleDevices)).toEqual(ids.map(String));
      await cluster.removePlacementGroup(pg);
      // Removing the group kills its actors.
      await eventually(async () => {
        const actors = await cluster.listActors();
        return ranks.every((r) => actors.find((a) => a.actorId === r.actorId)?.state === 'DEAD');
      });
    }
  });

  it('shares a fractional bundle GPU between actors placed in it', async () => {
    const pg = await cluster.createPlacementGroup({
      bundles: [{ numGpus: 1, numCpus: 1 }],
      strategy: 'PACK',
    });
    const a = await cluster.createActor({
      module,
      className: 'Counter',
      options: { numGpus: 0.5, placementGroup: pg },
    });
    const b = await cluster.createActor({
      module,
      className: 'Counter',
      options: { numGpus: 0.5, placementGroup: pg },
    });
    const [wa, wb] = await Promise.all([where(a), where(b)]);
    expect(wa.gpuIds).toEqual([pg.bundles[0].gpus[0].gpuId]);
    expect(wb.gpuIds).toEqual(wa.gpuIds);
    const third = await cluster
      .createActor({
        module,
        className: 'Counter',
        options: { numGpus: 0.5, placementGroup: pg, scheduleTimeoutMs: 200 },
      })
      .catch((e: unknown) => e);
    expect(third).toBeInstanceOf(SchedulingTimeoutError);
    await cluster.removePlacementGroup(pg);
  });

  it('spreads SPREAD and STRICT_SPREAD groups across nodes', async () => {
    const spread = await cluster.createPlacementGroup({
      bundles: [{ numCpus: 1 }, { numCpus: 1 }],
      strategy: 'SPREAD',
    });
    expect(new Set(spread.bundles.map((b) => b.nodeId))).toEqual(new Set([big, small]));
    const strict = await cluster.createPlacementGroup({
      bundles: [{ numGpus: 1 }, { numGpus: 1 }],
      strategy: 'STRICT_SPREAD',
    });
    expect(new Set(strict.bundles.map((b) => b.nodeId)).size).toBe(2);
    await cluster.removePlacementGroup(spread);
    await cluster.removePlacementGroup(strict);
  });

  it('rejects groups that can never fit, and waits for busy ones', async () => {
    await expect(
      cluster.createPlacementGroup({
        bundles: [{ numCpus: 1 }, { numCpus: 1 }, { numCpus: 1 }],
        strategy: 'STRICT_SPREAD',
      }),
    ).rejects.toBeInstanceOf(InfeasibleError);
    await expect(
      cluster.createPlacementGroup({ bundles: [{ numGpus: 4 }, { numGpus: 2 }], strategy: 'STRICT_PACK' }),
    ).rejects.toBeInstanceOf(InfeasibleError);
    const all = await cluster.createPlacementGroup({ bundles: [{ numGpus: 4 }], strategy: 'PACK' });
    await expect(
      cluster.createPlacementGroup({ bundles: [{ numGpus: 3 }], strategy: 'PACK', timeoutMs: 200 }),
    ).rejects.toBeInstanceOf(SchedulingTimeoutError);
    const waiting = cluster.createPlacementGroup({ bundles: [{ numGpus: 3 }], strategy: 'PACK' });
    await cluster.removePlacementGroup(all);
    const placed = await waiting;
    expect(placed.bundles[0].nodeId).toBe(big);
    await cluster.removePlacementGroup(placed);
    await expect(
      cluster.createActor({ module, className: 'Counter', options: { placementGroup: 'pg_missing' } }),
    ).rejects.toBeInstanceOf(NotFoundError);
  });

  it('shows nodes with total and available resources in status', async () => {
    const status = await cluster.status();
    const bigNode = status.nodes.find((n) => n.nodeId === big)!;
    expect(bigNode.total.GPU).toBe(4);
    expect(bigNode.labels.zone).toBe('a');
    expect(bigNode.state).toBe('ALIVE');
    expect(status.nodes.find((n) => n.nodeId === small)!.total.tpu).toBe(2);
  });
});
