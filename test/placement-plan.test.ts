/**
 * The placement dry run on a real multi-process cluster: `Cluster.planPlacementGroups` asks the
 * head, which answers from its scheduler without reserving anything; creating the groups
 * afterwards in the same order gives exactly the planned placements; with them held, the plan
 * says "not now" but "ever"; a group no node can hold is refused naming the group and resource.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClawrayError, ConfigError, InfeasibleError } from '../common/errors.js';
import type { Cluster, PlacementGroup, PlacementPlanRequest } from '../runtime/index.js';
import { TestCluster } from './helpers/processes.js';

const GROUPS: PlacementPlanRequest[] = [
  { name: 'trainer', strategy: 'STRICT_PACK', bundles: [{ numGpus: 1 }, { numGpus: 1 }] },
  { name: 'rollout', strategy: 'SPREAD', bundles: [{ numGpus: 0.5 }, { numGpus: 0.5 }] },
  { name: 'env', strategy: 'PACK', bundles: [{ numCpus: 2 }] },
];

describe('placement plan (dry run)', () => {
  let tc: TestCluster;
  let cluster: Cluster;
  beforeAll(async () => {
    tc = new TestCluster();
    await tc.startHead();
    await tc.startWorker({ gpus: 2, cpus: 4, poolSize: 0 });
    await tc.startWorker({ gpus: 2, cpus: 4, poolSize: 0 });
    cluster = await tc.connect();
  });
  afterAll(() => tc.teardown());

  it('answers per group and bundle, reserves nothing, and matches what creation then does', async () => {
    const before = await cluster.status();
    const plan = await cluster.planPlacementGroups(GROUPS);
    expect(plan.now.fits).toBe(true);
    expect(plan.ever.fits).toBe(true);
    expect(plan.now.groups.map((g) => [g.name, g.placed, g.bundles.length, g.error])).toEqual([
      ['trainer', true, 2, undefined],
      ['rollout', true, 2, undefined],
      ['env', true, 1, undefined],
    ]);
    const trainer = plan.now.groups[0].bundles;
    expect(trainer[0].nodeId).toBe(trainer[1].nodeId);
    expect(trainer.map((b) => b.gpus)).toEqual([[{ gpuId: 0, fraction: 1 }], [{ gpuId: 1, fraction: 1 }]]);
    expect(plan.now.groups[1].bundles.every((b) => b.gpus[0].fraction === 0.5)).toBe(true);

    // Nothing was reserved.
    const after = await cluster.status();
    expect(after.placementGroups).toEqual([]);
    expect(after.nodes.map((n) => [n.available, n.gpusAvailable])).toEqual(
      before.nodes.map((n) => [n.available, n.gpusAvailable]),
    );

    const created: PlacementGroup[] = [];
    try {
      for (const g of GROUPS) created.push(await cluster.createPlacementGroup({ ...g, name: undefined }));
      expect(created.map((pg) => pg.bundles.map((b) => ({ nodeId: b.nodeId, gpus: b.gpus })))).toEqual(
        plan.now.groups.map((g) => g.bundles.map((b) => ({ nodeId: b.nodeId, gpus: b.gpus }))),
      );

      // With the groups held, the same plan does not fit now, but still could.
      const busy = await cluster.planPlacementGroups(GROUPS);
      expect(busy.ever.fits).toBe(true);
      expect(busy.now.fits).toBe(false);
      const [first] = busy.now.groups;
      expect(first.placed).toBe(false);
      expect(first.error).toBeInstanceOf(ClawrayError);
      expect(first.error?.name).toBe('ResourcesBusyError');
      expect((first.error as ClawrayError).retryable).toBe(true);
      expect(first.error?.message).toMatch(
        /^STRICT_PACK placement group trainer needs 2 GPU for its 2 bundles .* it fits the cluster when idle, so it would wait/,
      );
      // Groups after the first failure are not tried.
      expect(busy.now.groups.slice(1).map((g) => [g.placed, g.error])).toEqual([
        [false, undefined],
        [false, undefined],
      ]);
    } finally {
      for (const pg of created) await cluster.removePlacementGroup(pg);
    }
  });

  it('refuses a group no node can ever hold, naming the group, bundle and resource', async () => {
    const plan = await cluster.planPlacementGroups([
      { name: 'rollout', bundles: [{ numGpus: 0.5 }] },
      { name: 'big-trainer', strategy: 'STRICT_PACK', bundles: [{ numGpus: 2 }, { numGpus: 2 }] },
    ]);
    expect(plan.ever.fits).toBe(false);
    expect(plan.now.fits).toBe(false);
    const err = plan.ever.groups[1].error as ClawrayError;
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /^STRICT_PACK placement group big-trainer needs 4 GPU on one node for its 2 bundles, but the largest node node_\w+ \(127\.0\.0\.1:\d+\) has 2 GPU; it can never be placed$/,
    );
    expect(err.fields).toMatchObject({
      resource: 'GPU',
      requested: 4,
      largestAmount: 2,
      limit: 'strictPack',
    });
    expect(plan.ever.groups[0].error).toBeUndefined();
    // "Now" gives the same reason: it is never, not busy.
    expect(plan.now.groups[1].error).toBeInstanceOf(InfeasibleError);
  });

  it('validates the request as creation does', async () => {
    await expect(
      cluster.planPlacementGroups([{ name: 'x', strategy: 'TIGHT' as never, bundles: [{ numGpus: 1 }] }]),
    ).rejects.toBeInstanceOf(ConfigError);
    await expect(cluster.planPlacementGroups([{ name: 'x', bundles: [{ numGpus: 1.5 }] }])).rejects.toThrow(
      /whole/,
    );
  });
});
