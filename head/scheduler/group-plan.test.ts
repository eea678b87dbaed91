/**
 * The scheduler's dry run of placement groups: it agrees with placing the groups for real, in
 * order, and leaves every node as it found it.
 */
import { describe, expect, it } from 'vitest';
import { InfeasibleError, ResourcesBusyError } from '../../common/errors.js';
import { Scheduler } from './scheduler.js';

const gpus = (n: number) => ({ numCpus: 0, numGpus: n, memoryMb: 0, custom: {} });

function cluster(...gpuCounts: number[]) {
  const s = new Scheduler();
  for (const [i, n] of gpuCounts.entries()) {
    s.addNode({
      nodeId: `n${i}`,
      address: `10.0.0.${i}:7001`,
      resources: { numCpus: 8, numGpus: n, memoryMb: 1024, custom: {} },
      gpuIds: Array.from({ length: n }, (_, d) => d),
      labels: {},
    });
  }
  return s;
}

const ASKS = [
  { name: 'trainer', strategy: 'STRICT_PACK' as const, bundles: [gpus(1), gpus(1)] },
  { name: 'rollout', strategy: 'SPREAD' as const, bundles: [gpus(0.5), gpus(0.5), gpus(0.5)] },
];

describe('Scheduler.planGroups', () => {
  it('plans what placing the groups in order then does, and reserves nothing', () => {
    const s = cluster(2, 2);
    const views = () => ['n0', 'n1'].map((id) => s.nodeView(id));
    const before = views();
    const plan = s.planGroups(ASKS);
    expect(views()).toEqual(before);
    expect(plan.now.fits).toBe(true);
    expect(plan.ever).toEqual(plan.now);
    const placed = ASKS.map((a, i) => {
      const attempt = s.placeGroup({
        placementGroupId: `pg${i}`,
        what: a.name,
        strategy: a.strategy,
        bundles: a.bundles,
      });
      return attempt.ok ? attempt.placement : undefined;
    });
    expect(placed).toEqual(plan.now.groups.map((g) => g.placement));
  });

  it('tells "not now" (with what is held) from "never"', () => {
    const s = cluster(2, 2);
    s.placeGroup({ placementGroupId: 'held', what: 'held', strategy: 'SPREAD', bundles: [gpus(1), gpus(1)] });
    const plan = s.planGroups(ASKS);
    expect(plan.ever.fits).toBe(true);
    expect(plan.now.fits).toBe(false);
    expect(plan.now.groups[0].error).toBeInstanceOf(ResourcesBusyError);
    expect(plan.now.groups[0].error?.fields).toMatchObject({ limit: 'busy', resource: 'GPU', requested: 2 });
    expect(plan.now.groups[1]).toEqual({ name: 'rollout' });
  });

  it('gives each group that can never fit its own error, and names the groups before one that fits only alone', () => {
    const s = cluster(2, 1);
    const never = s.planGroups([
      { name: 'a', strategy: 'STRICT_PACK', bundles: [gpus(1), gpus(1), gpus(1)] },
      { name: 'b', strategy: 'STRICT_SPREAD', bundles: [gpus(1), gpus(1), gpus(1)] },
    ]);
    expect(never.ever.groups.map((g) => g.error?.fields.limit)).toEqual(['strictPack', 'strictSpread']);
    expect(never.ever.groups.every((g) => g.error instanceof InfeasibleError)).toBe(true);
    const together = s.planGroups([
      { name: 'a', strategy: 'PACK', bundles: [gpus(1), gpus(1)] },
      { name: 'b', strategy: 'PACK', bundles: [gpus(1), gpus(1)] },
    ]);
    expect(together.ever.fits).toBe(false);
    expect(together.ever.groups[1].error?.message).toBe(
      'PACK placement group b needs 2 GPU for its 2 bundles (bundle 1 found no room), but after placement ' +
        'group a the nodes have 1 GPU left, at most 1 GPU for one bundle on n1 (10.0.0.1:7001); each group ' +
        'fits the cluster alone, but they can never all be placed together',
    );
  });
});
