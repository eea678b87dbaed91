/**
 * The partition's shape (groups built from `spec.resources`) as unit tests, and whether it
 * fits as the head answers it: a real head with real node agents in this process, whose
 * scheduler plans the groups (nothing here decides placement).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, InfeasibleError, SchedulingTimeoutError } from '../../common/errors.js';
import { seededRandom } from '../../common/random.js';
import { type PlanCluster, startPlanCluster } from '../../test/helpers/plan-cluster.js';
import { parseManifest } from './load.js';
import { type PartitionPlan, partitionGroups, planPartition } from './partition.js';
import { type RLJobManifestInput, resolveManifest, rljobSchema } from './schema.js';

type Resources = NonNullable<RLJobManifestInput['spec']['resources']>;

/** A manifest built in code, so it has no source positions. */
function manifest(resources: Resources, track: 'toolcall' | 'personal' = 'toolcall') {
  return resolveManifest(
    rljobSchema.parse({
      apiVersion: 'clawray.dev/v1',
      kind: 'RLJob',
      metadata: { name: 'job' },
      spec: { track, model: { path: './m' }, resources },
    }),
  );
}

async function thrown(p: Promise<unknown>): Promise<ConfigError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ConfigError);
  return err as ConfigError;
}

const DESIGN_RESOURCES: Resources = {
  rollout: { replicas: 2, gpus: 0.5 },
  judge: { replicas: 3, gpus: 0.25 },
  trainer: { shards: 2, gpus: 1, strategy: 'STRICT_PACK' },
  env: { replicas: 1, cpus: 2 },
};

/** Every rule a placement must keep, checked on the plan's assignments. */
function checkAssignments(plan: PartitionPlan, gpusOf: (nodeId: string) => number): void {
  const byBundle = new Map(plan.assignments.map((a) => [`${a.role}/${a.bundleIndex}`, a]));
  const used = new Map<string, number>();
  const whole = new Set<string>();
  for (const group of plan.groups) {
    const nodesOfGroup = new Set<string>();
    group.bundles.forEach((b, i) => {
      const a = byBundle.get(`${group.role}/${i}`);
      expect(a, `${group.role} bundle ${i} is placed`).toBeDefined();
      expect(a!.gpus.reduce((s, g) => s + g.fraction, 0)).toBeCloseTo(b.numGpus, 6);
      for (const g of a!.gpus) {
        const key = `${a!.nodeId}/${g.gpuId}`;
        expect(g.gpuId).toBeLessThan(gpusOf(a!.nodeId));
        used.set(key, (used.get(key) ?? 0) + g.fraction);
        if (g.fraction === 1) whole.add(key);
      }
      if (group.strategy === 'STRICT_SPREAD') expect(nodesOfGroup.has(a!.nodeId)).toBe(false);
      nodesOfGroup.add(a!.nodeId);
    });
    if (group.strategy === 'STRICT_PACK') expect(nodesOfGroup.size).toBe(1);
  }
  for (const [key, total] of used) {
    expect(total).toBeLessThanOrEqual(1 + 1e-9);
    if (whole.has(key)) expect(total).toBe(1);
  }
}

describe('partitionGroups (the shape)', () => {
  it('turns the DESIGN.md resources into one placement group per role, largest bundles first', () => {
    expect(partitionGroups(manifest(DESIGN_RESOURCES))).toEqual([
      {
        role: 'trainer',
        name: 'job-trainer',
        strategy: 'STRICT_PACK',
        bundles: Array(2).fill({ numCpus: 0, numGpus: 1, memoryMb: 0 }),
      },
      {
        role: 'rollout',
        name: 'job-rollout',
        strategy: 'PACK',
        bundles: Array(2).fill({ numCpus: 0, numGpus: 0.5, memoryMb: 0 }),
      },
      {
        role: 'judge',
        name: 'job-judge',
        strategy: 'PACK',
        bundles: Array(3).fill({ numCpus: 0, numGpus: 0.25, memoryMb: 0 }),
      },
      { role: 'env', name: 'job-env', strategy: 'PACK', bundles: [{ numCpus: 2, numGpus: 0, memoryMb: 0 }] },
    ]);
  });

  it('places no env pool for the personal track, and orders equal bundles strict first, then by role', () => {
    const groups = partitionGroups(
      manifest(
        { rollout: { gpus: 1 }, judge: { gpus: 1 }, trainer: { gpus: 1, strategy: 'STRICT_PACK' } },
        'personal',
      ),
    );
    expect(groups.map((g) => g.role)).toEqual(['trainer', 'rollout', 'judge']);
  });
});

describe('planPartition (asks the head)', () => {
  let two: PlanCluster;
  beforeAll(async () => {
    two = await startPlanCluster([
      { name: 'node-a', gpus: 2, cpus: 8, memoryMb: 65536 },
      { name: 'node-b', gpus: 2, cpus: 8, memoryMb: 65536 },
    ]);
  });
  afterAll(() => two?.stop());
  const gpusOf = () => 2;

  it('fits the DESIGN.md resources: the shards take one node, the fractions share GPUs', async () => {
    const plan = await planPartition(manifest(DESIGN_RESOURCES), two.cluster);
    expect(plan.groups.map((g) => g.role)).toEqual(['trainer', 'rollout', 'judge', 'env']);
    expect(plan.need).toEqual({ GPU: 3.75, CPU: 2, memoryMb: 0 });
    expect(plan.cluster).toEqual({ GPU: 4, CPU: 16, memoryMb: 131072 });
    checkAssignments(plan, gpusOf);
    const trainer = plan.assignments.filter((a) => a.role === 'trainer');
    expect(new Set(trainer.map((a) => a.nodeId)).size).toBe(1);
    // Shard ranks get GPU ids in rank order.
    expect(trainer.map((a) => a.gpus.map((g) => g.gpuId))).toEqual([[0], [1]]);
  });

  it('names the role field, the group and the resource when a role is larger than the cluster', async () => {
    const e = await thrown(planPartition(manifest({ trainer: { shards: 5, gpus: 1 } }), two.cluster));
    expect(two.named(e.message)).toBe(
      'job job does not fit the cluster:\n  spec.resources.trainer: PACK placement group job-trainer: bundle 4 ' +
        'needs 1 GPU, but the cluster cannot hold all 5 bundles at once (the largest node node-a has 2 GPU); ' +
        'it can never be placed',
    );
    expect(e.fields).toEqual({ job: 'job', field: 'spec.resources.trainer', problems: 1 });
  });

  it('prefixes file:line:col when the manifest came from a file, or the --set that sized it', async () => {
    const text =
      'apiVersion: clawray.dev/v1\nkind: RLJob\nmetadata: { name: j }\nspec:\n  track: swe\n  model: { path: ./m }\n  resources:\n    rollout: { replicas: 2, gpus: 3 }\n';
    expect((await thrown(planPartition(parseManifest(text, 'j.yaml'), two.cluster))).message).toContain(
      '\n  j.yaml:8:35: spec.resources.rollout.gpus: PACK placement group j-rollout: bundle 0 needs 3 GPU, but the largest node',
    );
    const overridden = parseManifest(text, 'j.yaml', {
      set: [
        'spec.resources.rollout.gpus=0.5',
        'spec.resources.trainer={ shards: 3, gpus: 1, strategy: STRICT_PACK }',
      ],
    });
    expect((await thrown(planPartition(overridden, two.cluster))).message).toContain(
      '\n  --set spec.resources.trainer={ shards: 3, gpus: 1, strategy: STRICT_PACK }: spec.resources.trainer.strategy: ' +
        'STRICT_PACK placement group j-trainer needs 3 GPU on one node for its 3 bundles',
    );
  });

  it('reports every role that can never fit, each at its own field', async () => {
    const e = await thrown(
      planPartition(
        manifest({
          rollout: { replicas: 3, gpus: 1, strategy: 'STRICT_SPREAD' },
          judge: { replicas: 1, gpus: 4 },
          env: { cpus: 64 },
        }),
        two.cluster,
      ),
    );
    const lines = e.message.split('\n').slice(1);
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^ {2}spec\.resources\.judge\.gpus: PACK placement group job-judge: bundle 0 needs 4 GPU/,
    );
    expect(lines[1]).toMatch(
      /^ {2}spec\.resources\.rollout\.strategy: STRICT_SPREAD placement group job-rollout needs 3 distinct nodes/,
    );
    expect(lines[2]).toMatch(
      /^ {2}spec\.resources\.env\.cpus: PACK placement group job-env: bundle 0 needs 64 CPU/,
    );
    expect(two.named(e.message)).toContain('bundle 0 needs 64 CPU, but the largest node node-a has 8 CPU');
  });

  it('blames spec.resources when each role fits alone but not all of them together', async () => {
    const m = manifest({ rollout: { replicas: 3, gpus: 1 }, trainer: { shards: 2, gpus: 1 } });
    const e = await thrown(planPartition(m, two.cluster));
    expect(two.named(e.message)).toBe(
      'job job does not fit the cluster:\n  spec.resources: PACK placement group job-trainer needs 2 GPU for its ' +
        '2 bundles (bundle 1 found no room), but after placement group job-rollout the nodes have 1 GPU left, at ' +
        'most 1 GPU for one bundle on node-b; each group fits the cluster alone, but they can never all be placed together',
    );
  });

  it('checks what is free now when asked to, and reserves nothing', async () => {
    const m = manifest({
      rollout: { replicas: 2, gpus: 0.5 },
      judge: { replicas: 1, gpus: 0.5 },
      trainer: { gpus: 1 },
    });
    // Another job holds 0.6 of each GPU.
    const held = await two.cluster.createPlacementGroup({
      bundles: Array(4).fill({ numGpus: 0.6 }),
      strategy: 'SPREAD',
    });
    try {
      const before = await two.cluster.status();
      expect((await planPartition(m, two.cluster)).groups).toHaveLength(4);
      const e = await thrown(planPartition(m, two.cluster, { against: 'available' }));
      expect(two.named(e.message)).toBe(
        'job job does not fit the cluster as it is now:\n  spec.resources.trainer: PACK placement group job-trainer ' +
          'needs 1 GPU, but the nodes have 1.6 GPU free now, at most 0 GPU for one bundle on node-a; it fits ' +
          'the cluster when idle, so it would wait for resources to be freed',
      );
      const after = await two.cluster.status();
      expect(after.nodes.map((n) => n.available)).toEqual(before.nodes.map((n) => n.available));
      expect(after.placementGroups).toHaveLength(1);
    } finally {
      await two.cluster.removePlacementGroup(held);
    }
  });
});

describe('planPartition agrees with the head creating the groups', () => {
  let three: PlanCluster;
  beforeAll(async () => {
    three = await startPlanCluster([
      { name: 'n0', gpus: 2, cpus: 4, memoryMb: 16384 },
      { name: 'n1', gpus: 1, cpus: 2, memoryMb: 8192 },
      { name: 'n2', gpus: 0, cpus: 3, memoryMb: 8192 },
    ]);
  });
  afterAll(() => three?.stop());

  it('on random partitions: a plan that fits is the placement creation gives; one that does not, creation refuses', async () => {
    // SEED and TRIALS widen the search when the scheduler changes.
    const trials = Number(process.env.TRIALS ?? 60);
    const random = seededRandom(Number(process.env.SEED ?? 7));
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(random() * xs.length)];
    const fractions = [0, 0.25, 0.4, 0.5, 0.6, 1, 2];
    const strategies = ['PACK', 'SPREAD', 'STRICT_PACK', 'STRICT_SPREAD'] as const;
    let fits = 0;
    for (let trial = 0; trial < trials; trial++) {
      const m = manifest({
        rollout: {
          replicas: 1 + Math.floor(random() * 3),
          gpus: pick(fractions),
          strategy: pick(strategies),
        },
        judge: { replicas: 1 + Math.floor(random() * 2), gpus: pick(fractions), strategy: pick(strategies) },
        trainer: {
          shards: 1 + Math.floor(random() * 2),
          gpus: pick(fractions),
          cpus: pick([0, 1]),
          strategy: pick(strategies),
        },
        env: { replicas: 1, cpus: pick([0, 1, 2]) },
      });
      const label = `trial ${trial}: ${JSON.stringify(m.spec.resources)}`;
      const plan = await planPartition(m, three.cluster).catch((err: unknown) => err as Error);
      const created = [];
      try {
        for (const g of plan instanceof Error ? partitionGroups(m) : plan.groups) {
          const pg = await three.cluster
            .createPlacementGroup({ bundles: g.bundles, strategy: g.strategy, timeoutMs: 1 })
            .catch((err: unknown) => err as Error);
          if (pg instanceof Error) {
            expect(plan, `${label}: creation refused ${g.role}: ${pg.message}`).toBeInstanceOf(ConfigError);
            expect(
              [InfeasibleError, SchedulingTimeoutError].some((c) => pg instanceof c),
              pg.message,
            ).toBe(true);
            break;
          }
          created.push(pg);
          if (plan instanceof Error) continue;
          const planned = plan.assignments.filter((a) => a.role === g.role);
          expect(
            pg.bundles.map((b) => ({ nodeId: b.nodeId, gpus: b.gpus })),
            label,
          ).toEqual(planned.map((a) => ({ nodeId: a.nodeId, gpus: a.gpus })));
        }
        if (!(plan instanceof Error)) fits++;
        else
          expect(created.length, `${label}: every group was created, yet the plan said no`).toBeLessThan(
            partitionGroups(m).length,
          );
      } finally {
        for (const pg of created) await three.cluster.removePlacementGroup(pg);
      }
    }
    // Both outcomes are exercised.
    expect(fits).toBeGreaterThan(trials * 0.1);
    expect(fits).toBeLessThan(trials * 0.9);
  });
});
