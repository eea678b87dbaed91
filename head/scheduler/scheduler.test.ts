import { describe, expect, it } from 'vitest';
import { type ClawrayError, ConfigError, InfeasibleError } from '../../common/errors.js';
import type { PlacementStrategy, ResourceRequest } from '../../common/resources.js';
import { benchScheduling } from './bench.js';
import { Scheduler } from './scheduler.js';
import type { ActorDemand, ActorPlacement, Attempt, BundlePlacement, NodeCapacity } from './types.js';

function res(r: Partial<ResourceRequest> = {}): ResourceRequest {
  return { numCpus: 0, numGpus: 0, memoryMb: 0, custom: {}, ...r };
}

let port = 7000;

interface NodeSpec {
  cpus?: number;
  gpus?: number;
  gpuIds?: number[];
  memoryMb?: number;
  custom?: Record<string, number>;
  labels?: Record<string, string>;
  address?: string;
}

function node(nodeId: string, spec: NodeSpec = {}): NodeCapacity {
  const gpuIds = spec.gpuIds ?? Array.from({ length: spec.gpus ?? 0 }, (_, i) => i);
  return {
    nodeId,
    address: spec.address ?? `127.0.0.1:${++port}`,
    resources: res({
      numCpus: spec.cpus ?? 8,
      numGpus: gpuIds.length,
      memoryMb: spec.memoryMb ?? 16_384,
      custom: spec.custom ?? {},
    }),
    gpuIds,
    labels: spec.labels ?? {},
  };
}

function cluster(...nodes: NodeCapacity[]): Scheduler {
  const s = new Scheduler();
  for (const n of nodes) s.addNode(n);
  return s;
}

function actor(r: Partial<ResourceRequest>, extra: Partial<ActorDemand> = {}): ActorDemand {
  return { what: 'actor A (actor_1)', resources: res(r), labelSelector: {}, ...extra };
}

function ok<T>(attempt: Attempt<T>): T {
  if (!attempt.ok) throw new Error('expected a placement, got busy');
  return attempt.placement;
}

function caught(fn: () => unknown): ClawrayError {
  try {
    fn();
  } catch (err) {
    return err as ClawrayError;
  }
  throw new Error('expected an error');
}

const gpuIds = (p: { gpus: { gpuId: number }[] }) => p.gpus.map((g) => g.gpuId);

function group(s: Scheduler, strategy: PlacementStrategy, bundles: Partial<ResourceRequest>[], id = 'pg1') {
  return s.placeGroup({
    placementGroupId: id,
    what: `placement group ${id}`,
    strategy,
    bundles: bundles.map(res),
  });
}

describe('scheduler: GPUs of actors', () => {
  it('packs 0.5 + 0.5 on GPU 0 before GPU 1', () => {
    const s = cluster(node('n1', { gpus: 2 }));
    expect(ok(s.placeActor(actor({ numGpus: 0.5 }))).gpus).toEqual([{ gpuId: 0, fraction: 0.5 }]);
    expect(ok(s.placeActor(actor({ numGpus: 0.5 }))).gpus).toEqual([{ gpuId: 0, fraction: 0.5 }]);
    expect(ok(s.placeActor(actor({ numGpus: 0.5 }))).gpus).toEqual([{ gpuId: 1, fraction: 0.5 }]);
  });

  it('puts four quarters on one GPU and the fifth on the next', () => {
    const s = cluster(node('n1', { gpus: 2 }));
    for (let i = 0; i < 4; i++) expect(gpuIds(ok(s.placeActor(actor({ numGpus: 0.25 }))))).toEqual([0]);
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 0.25 }))))).toEqual([1]);
  });

  it('never puts a 1.0 on a GPU holding a fraction (Ray #52915)', () => {
    const s = cluster(node('n1', { gpus: 2 }));
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 0.25 }))))).toEqual([0]);
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 1 }))))).toEqual([1]);
    expect(s.placeActor(actor({ numGpus: 1 }))).toEqual({ ok: false, reason: 'busy' });
  });

  it('sends 0.5 after 0.7 to another GPU', () => {
    const s = cluster(node('n1', { gpus: 2 }));
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 0.7 }))))).toEqual([0]);
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 0.5 }))))).toEqual([1]);
  });

  it('gives whole GPUs lowest id first; 2 GPUs after GPU 1 got a fraction are [0, 2]', () => {
    const s = cluster(node('n1', { gpus: 4 }));
    const whole = ok(s.placeActor(actor({ numGpus: 1 })));
    expect(gpuIds(whole)).toEqual([0]);
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 0.5 }))))).toEqual([1]);
    s.releaseActor(whole, res({ numGpus: 1 }));
    expect(ok(s.placeActor(actor({ numGpus: 2 }))).gpus).toEqual([
      { gpuId: 0, fraction: 1 },
      { gpuId: 2, fraction: 1 },
    ]);
  });

  it('uses the physical ids the worker reported', () => {
    const s = cluster(node('n1', { gpuIds: [5, 2] }));
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 1 }))))).toEqual([2]);
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 1 }))))).toEqual([5]);
  });

  it('sends a fraction to a node where it shares an already used GPU, over an emptier node', () => {
    const s = cluster(node('small', { gpus: 1 }), node('big', { gpus: 8 }));
    s.restoreActor({ nodeId: 'small', gpus: [{ gpuId: 0, fraction: 0.25 }] }, res({ numGpus: 0.25 }));
    expect(ok(s.placeActor(actor({ numGpus: 0.5 }))).nodeId).toBe('small');
    // GPU 0 of "small" has 0.25 left: the next half breaks into a GPU of "big".
    expect(ok(s.placeActor(actor({ numGpus: 0.5 }))).nodeId).toBe('big');
  });
});

describe('scheduler: choosing a node', () => {
  it('fills a node below half its CPUs before the next, then spreads to the least loaded', () => {
    const s = cluster(node('n1', { cpus: 10 }), node('n2', { cpus: 10 }), node('n3', { cpus: 10 }));
    const nodes = Array.from({ length: 15 }, () => ok(s.placeActor(actor({ numCpus: 1 }))).nodeId);
    expect(nodes).toEqual([...'111122223333123'].map((d) => `n${d}`));
  });

  it('keeps CPU-only actors off GPU nodes while a GPU-less node has room', () => {
    const s = cluster(node('gpu', { cpus: 8, gpus: 4 }), node('cpu', { cpus: 2 }));
    const nodes = Array.from({ length: 3 }, () => ok(s.placeActor(actor({ numCpus: 1 }))).nodeId);
    expect(nodes).toEqual(['cpu', 'cpu', 'gpu']);
    const plain = new Scheduler({ avoidGpuNodes: false });
    plain.addNode(node('gpu', { cpus: 8, gpus: 4 }));
    plain.addNode(node('cpu', { cpus: 2 }));
    expect(ok(plain.placeActor(actor({ numCpus: 1 }))).nodeId).toBe('gpu');
  });

  it('rotates actors that ask for nothing through the matching nodes', () => {
    const s = cluster(
      node('n1', { labels: { zone: 'a' } }),
      node('n2', { labels: { zone: 'b' } }),
      node('n3', { labels: { zone: 'a' } }),
    );
    const nodes = Array.from({ length: 4 }, () => ok(s.placeActor(actor({}))).nodeId);
    expect(nodes).toEqual(['n1', 'n2', 'n3', 'n1']);
    const inA = Array.from(
      { length: 3 },
      () => ok(s.placeActor(actor({}, { labelSelector: { zone: 'a' } }))).nodeId,
    );
    expect(inA).toEqual(['n3', 'n1', 'n3']);
    expect(s.nodeView('n1')?.available).toEqual(s.nodeView('n1')?.total);
  });

  it('routes by label selector', () => {
    const s = cluster(node('n1', { labels: { zone: 'a' } }), node('n2', { labels: { zone: 'b' } }));
    const on = (labelSelector: Record<string, string>) =>
      ok(s.placeActor(actor({ numCpus: 1 }, { labelSelector }))).nodeId;
    expect(on({ zone: 'b' })).toBe('n2');
    expect(on({ zone: '!a' })).toBe('n2');
    expect(on({ zone: 'in(a,b)' })).toBe('n1');
    expect(on({ zone: '!in(a)' })).toBe('n2');
    expect(() => on({ zone: 'in(a' })).toThrow(/labelSelector key "zone"/);
  });

  it('reports node views and cluster totals', () => {
    const s = cluster(node('n1', { cpus: 4, gpus: 2, custom: { tpu: 2 } }), node('n2', { cpus: 4 }));
    ok(s.placeActor(actor({ numCpus: 1, numGpus: 0.5, custom: { tpu: 1 } })));
    expect(s.hasNode('n1')).toBe(true);
    expect(s.nodeView('nope')).toBeUndefined();
    expect(s.nodeView('n1')).toEqual({
      nodeId: 'n1',
      total: res({ numCpus: 4, numGpus: 2, memoryMb: 16_384, custom: { tpu: 2 } }),
      available: res({ numCpus: 3, numGpus: 1.5, memoryMb: 16_384, custom: { tpu: 1 } }),
      gpusAvailable: [
        { gpuId: 0, fraction: 0.5 },
        { gpuId: 1, fraction: 1 },
      ],
    });
    expect(s.totals()).toEqual({
      total: { CPU: 8, GPU: 2, memory_mb: 32_768, tpu: 2 },
      used: { CPU: 1, GPU: 0.5, memory_mb: 0, tpu: 1 },
    });
  });
});

describe('scheduler: infeasible and busy actors', () => {
  it('names the resource and the largest node when no node has enough GPUs', () => {
    const s = cluster(node('node_s', { gpus: 1 }), node('node_x', { gpus: 2, address: '127.0.0.1:7001' }));
    const err = caught(() => s.placeActor(actor({ numGpus: 4 }, { what: 'actor Trainer (actor_1)' })));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toBe(
      'actor Trainer (actor_1) needs 4 GPU, but the largest node node_x (127.0.0.1:7001) has 2 GPU; ' +
        'no node in the cluster can ever run it',
    );
    expect(err.fields).toEqual({ resource: 'GPU', requested: 4, largestNodeId: 'node_x', largestAmount: 2 });
  });

  it.each([
    [{ numCpus: 16 }, /needs 16 CPU, but the largest node n2 \(.*\) has 12 CPU/, 'CPU'],
    [
      { memoryMb: 65_536 },
      /needs 65536 MB of memory, but the largest node n1 \(.*\) has 16384 MB of memory/,
      'memory_mb',
    ],
    [
      { custom: { tpu: 1 } },
      /needs 1 of custom resource "tpu", but the largest node n1 .* has 0 of custom/,
      'tpu',
    ],
  ])('is infeasible at once for %j', (request, message, resource) => {
    const s = cluster(node('n1', { cpus: 4 }), node('n2', { cpus: 12 }));
    const err = caught(() => s.placeActor(actor(request)));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(message);
    expect(err.message).toMatch(/no node in the cluster can ever run it$/);
    expect(err.fields.resource).toBe(resource);
  });

  it('says how to get GPUs, in its one line, when the cluster has none', () => {
    const s = cluster(node('n1', { cpus: 4 }), node('n2', { cpus: 12 }));
    const err = caught(() => s.placeActor(actor({ numGpus: 0.5 })));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /needs 0.5 GPU, but the largest node n1 \(.*\) has 0 GPU; no node in the cluster can ever run it\. /,
    );
    expect(err.message).toContain('`clawray start --local --gpus-per-worker 1`');
    expect(err.message).toMatch(/or remove numGpus$/);
    expect(err.message).not.toContain('\n');
    expect(err.fields.resource).toBe('GPU');
  });

  it('says so when each resource exists but never together on one node', () => {
    const s = cluster(node('cpus', { cpus: 8 }), node('gpus', { cpus: 1, gpus: 2 }));
    const err = caught(() => s.placeActor(actor({ numCpus: 4, numGpus: 1 })));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /needs 4 CPU, 1 GPU on one node, but no node has all of it: the closest, cpus /,
    );
  });

  it('names the label selector when no node matches it', () => {
    const s = cluster(node('n1', { labels: { zone: 'a' }, gpus: 1 }));
    const none = caught(() => s.placeActor(actor({ numCpus: 1 }, { labelSelector: { zone: 'b' } })));
    expect(none).toBeInstanceOf(InfeasibleError);
    expect(none.message).toMatch(
      /needs a node matching labelSelector \{"zone":"b"\}, but none of the 1 node has such labels/,
    );
    expect(none.fields.resource).toBe('labelSelector');
    const zero = caught(() => s.placeActor(actor({}, { labelSelector: { zone: 'b' } })));
    expect(zero).toBeInstanceOf(InfeasibleError);
    const small = caught(() => s.placeActor(actor({ numGpus: 2 }, { labelSelector: { zone: 'a' } })));
    expect(small.message).toMatch(
      /the largest node matching labelSelector \{"zone":"a"\}, n1 \(.*\), has 1 GPU/,
    );
  });

  it('is busy while feasible but full, and places after a release', () => {
    const s = cluster(node('n1', { cpus: 2, gpus: 1 }));
    const a = ok(s.placeActor(actor({ numCpus: 2, numGpus: 1 })));
    expect(s.placeActor(actor({ numCpus: 1 }))).toEqual({ ok: false, reason: 'busy' });
    expect(s.placeActor(actor({ numGpus: 0.5 }))).toEqual({ ok: false, reason: 'busy' });
    s.releaseActor(a, res({ numCpus: 2, numGpus: 1 }));
    s.releaseActor(a, res({ numCpus: 2, numGpus: 1 }));
    expect(s.nodeView('n1')?.available).toEqual(s.nodeView('n1')?.total);
    expect(ok(s.placeActor(actor({ numCpus: 1, numGpus: 0.5 }))).nodeId).toBe('n1');
  });

  it('is busy, not infeasible, with no nodes yet', () => {
    const s = new Scheduler();
    expect(s.placeActor(actor({ numGpus: 8 }))).toEqual({ ok: false, reason: 'busy' });
    expect(group(s, 'PACK', [{ numCpus: 1 }])).toEqual({ ok: false, reason: 'busy' });
  });

  it('rejects malformed requests with ConfigError', () => {
    const s = cluster(node('n1', { gpus: 4 }));
    expect(() => s.placeActor(actor({ numGpus: 1.5 }))).toThrow(ConfigError);
    expect(() => s.placeActor(actor({ numCpus: -1 }))).toThrow(ConfigError);
    expect(() => s.addNode(node('n1'))).toThrow(/already registered/);
  });

  it('ignores releases for nodes it does not know', () => {
    const s = cluster(node('n1'));
    expect(() => s.releaseActor({ nodeId: 'gone', gpus: [] }, res({ numCpus: 1 }))).not.toThrow();
  });
});

describe('scheduler: placement groups', () => {
  const placements = (a: Attempt<BundlePlacement[]>) => ok(a).map((b) => [b.nodeId, gpuIds(b)]);

  it('PACK puts every bundle on one node, GPU ids in rank order', () => {
    const s = cluster(node('n1', { gpus: 4 }), node('n2', { gpus: 4 }));
    expect(placements(group(s, 'PACK', [{ numGpus: 1 }, { numGpus: 1 }, { numGpus: 1 }]))).toEqual([
      ['n1', [0]],
      ['n1', [1]],
      ['n1', [2]],
    ]);
  });

  it('PACK spills over to more nodes when one cannot hold the group', () => {
    const s = cluster(node('n1', { gpus: 4 }), node('n2', { gpus: 4 }));
    expect(placements(group(s, 'PACK', [{ numGpus: 3 }, { numGpus: 1 }, { numGpus: 3 }]))).toEqual([
      ['n1', [0, 1, 2]],
      ['n1', [3]],
      ['n2', [0, 1, 2]],
    ]);
  });

  it('PACK is infeasible when the bundles can never fit together, busy when they could', () => {
    const s = cluster(node('n1', { gpus: 4 }), node('n2', { gpus: 2 }));
    const err = caught(() => group(s, 'PACK', [{ numGpus: 4 }, { numGpus: 4 }]));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /PACK placement group pg1: bundle 1 needs 4 GPU, but the cluster cannot hold all 2 bundles at once/,
    );
    expect(err.fields).toMatchObject({
      bundleIndex: 1,
      resource: 'GPU',
      largestNodeId: 'n1',
      largestAmount: 4,
    });
    const a = ok(s.placeActor(actor({ numGpus: 1 })));
    expect(group(s, 'PACK', [{ numGpus: 4 }])).toEqual({ ok: false, reason: 'busy' });
    s.releaseActor(a, res({ numGpus: 1 }));
    expect(placements(group(s, 'PACK', [{ numGpus: 4 }]))).toEqual([['n1', [0, 1, 2, 3]]]);
  });

  it('SPREAD uses distinct nodes, then doubles up when it must', () => {
    const s = cluster(node('n1'), node('n2'));
    expect(placements(group(s, 'SPREAD', [{ numCpus: 1 }, { numCpus: 1 }, { numCpus: 1 }]))).toEqual([
      ['n1', []],
      ['n2', []],
      ['n1', []],
    ]);
  });

  it('SPREAD and STRICT_SPREAD pick the least loaded nodes, ties to the earliest', () => {
    const loads = [3, 1, 2, 0, 1];
    const s = cluster(...loads.map((_, i) => node(`n${i}`)));
    loads.forEach((cpus, i) => {
      s.restoreActor({ nodeId: `n${i}`, gpus: [] }, res({ numCpus: cpus }));
    });
    const nodesOf = (a: Attempt<BundlePlacement[]>) => ok(a).map((b) => b.nodeId);
    expect(nodesOf(group(s, 'SPREAD', [{ numCpus: 1 }, { numCpus: 1 }, { numCpus: 1 }]))).toEqual([
      'n3',
      'n1',
      'n4',
    ]);
    s.releaseGroup('pg1');
    expect(nodesOf(group(s, 'STRICT_SPREAD', [{ numCpus: 1 }, { numCpus: 1 }]))).toEqual(['n3', 'n1']);
    s.releaseGroup('pg1');
    // Unequal bundles take the per-bundle path and land the same way.
    expect(nodesOf(group(s, 'SPREAD', [{ numCpus: 1 }, { numCpus: 1, memoryMb: 1 }]))).toEqual(['n3', 'n1']);
  });

  it('SPREAD is infeasible when a bundle is larger than every node', () => {
    const s = cluster(node('n1', { cpus: 4 }), node('n2', { cpus: 6 }));
    const err = caught(() => group(s, 'SPREAD', [{ numCpus: 1 }, { numCpus: 7 }]));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /SPREAD placement group pg1: bundle 1 needs 7 CPU, but the largest node n2 \(.*\) has 6 CPU; it can never be placed/,
    );
    expect(err.fields).toMatchObject({ bundleIndex: 1, resource: 'CPU', requested: 7, largestAmount: 6 });
  });

  it('STRICT_PACK needs one node for everything', () => {
    const s = cluster(node('n1', { gpus: 4 }), node('n2', { gpus: 4 }));
    expect(placements(group(s, 'STRICT_PACK', [{ numGpus: 2 }, { numGpus: 2 }]))).toEqual([
      ['n1', [0, 1]],
      ['n1', [2, 3]],
    ]);
    const err = caught(() => group(s, 'STRICT_PACK', [{ numGpus: 3 }, { numGpus: 3 }], 'pg2'));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /STRICT_PACK placement group pg2 needs 6 GPU on one node for its 2 bundles, but the largest node n1 .* has 4 GPU/,
    );
    ok(s.placeActor(actor({ numGpus: 0.5 })));
    expect(group(s, 'STRICT_PACK', [{ numGpus: 2 }, { numGpus: 2 }], 'pg3')).toEqual({
      ok: false,
      reason: 'busy',
    });
  });

  it('STRICT_SPREAD needs a distinct node per bundle', () => {
    const s = cluster(node('n1'), node('n2'));
    expect(placements(group(s, 'STRICT_SPREAD', [{ numCpus: 1 }, { numCpus: 1 }]))).toEqual([
      ['n1', []],
      ['n2', []],
    ]);
    const err = caught(() => group(s, 'STRICT_SPREAD', [{}, {}, {}], 'pg2'));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /STRICT_SPREAD placement group pg2 needs 3 distinct nodes, one per bundle, but only 2 of the 2 such nodes can hold one of its bundles and bundle 2 is left without a node/,
    );
    expect(err.fields).toMatchObject({ resource: 'nodes', requested: 3, bundleIndex: 2 });
    ok(s.placeActor(actor({ numCpus: 7 })));
    expect(group(s, 'STRICT_SPREAD', [{ numCpus: 1 }, { numCpus: 1 }], 'pg3')).toEqual({
      ok: false,
      reason: 'busy',
    });
  });

  it('STRICT_SPREAD finds the assignment a greedy pass misses', () => {
    const s = cluster(node('big', { cpus: 8, gpus: 1 }), node('cpu', { cpus: 8 }));
    expect(placements(group(s, 'STRICT_SPREAD', [{ numCpus: 1 }, { numGpus: 1 }]))).toEqual([
      ['cpu', []],
      ['big', [0]],
    ]);
  });

  it('reserves nothing when any bundle does not fit', () => {
    const s = cluster(node('n1', { gpus: 2 }), node('n2', { gpus: 2 }));
    ok(s.placeActor(actor({ numGpus: 2 })));
    const before = [s.nodeView('n1'), s.nodeView('n2')];
    expect(group(s, 'STRICT_SPREAD', [{ numGpus: 1 }, { numGpus: 1 }])).toEqual({
      ok: false,
      reason: 'busy',
    });
    expect(group(s, 'PACK', [{ numGpus: 1 }, { numGpus: 1 }, { numGpus: 1 }])).toEqual({
      ok: false,
      reason: 'busy',
    });
    expect([s.nodeView('n1'), s.nodeView('n2')]).toEqual(before);
    expect(s.groupBundles('pg1')).toBeUndefined();
  });

  it('gives bundles on one node ascending GPU ids around a shared GPU', () => {
    const s = cluster(node('n1', { gpus: 8 }));
    expect(gpuIds(ok(s.placeActor(actor({ numGpus: 0.5 }))))).toEqual([0]);
    expect(placements(group(s, 'STRICT_PACK', [{ numGpus: 2 }, { numGpus: 2 }, { numGpus: 2 }]))).toEqual([
      ['n1', [1, 2]],
      ['n1', [3, 4]],
      ['n1', [5, 6]],
    ]);
  });

  it('packs fractional bundles onto shared GPUs in bundle order', () => {
    const s = cluster(node('n1', { gpus: 2 }));
    expect(ok(group(s, 'PACK', [{ numGpus: 0.5 }, { numGpus: 0.5 }, { numGpus: 0.5 }]))).toEqual([
      { nodeId: 'n1', gpus: [{ gpuId: 0, fraction: 0.5 }] },
      { nodeId: 'n1', gpus: [{ gpuId: 0, fraction: 0.5 }] },
      { nodeId: 'n1', gpus: [{ gpuId: 1, fraction: 0.5 }] },
    ]);
  });

  it('validates the demand', () => {
    const s = cluster(node('n1'));
    expect(() => group(s, 'PACK', [])).toThrow(/at least one bundle/);
    expect(() => group(s, 'NEAR' as PlacementStrategy, [{}])).toThrow(/unknown placement strategy "NEAR"/);
    expect(placements(group(s, 'STRICT_PACK', [{}, {}]))).toEqual([
      ['n1', []],
      ['n1', []],
    ]);
    expect(() => group(s, 'PACK', [{}])).toThrow(/already placed/);
  });

  it('releaseGroup frees every reservation', () => {
    const s = cluster(node('n1', { cpus: 4, gpus: 2 }));
    const before = s.nodeView('n1');
    ok(group(s, 'PACK', [{ numCpus: 2, numGpus: 1 }, { numGpus: 0.5 }]));
    ok(s.placeActor(actor({ numGpus: 0.5 }, { placementGroupId: 'pg1', bundleIndex: 1 })));
    expect(s.nodeView('n1')?.available).toEqual(res({ numCpus: 2, numGpus: 0.5, memoryMb: 16_384 }));
    expect(s.releaseGroup('pg1')).toBe(true);
    expect(s.releaseGroup('pg1')).toBe(false);
    expect(s.nodeView('n1')).toEqual(before);
    expect(() => s.placeActor(actor({}, { placementGroupId: 'pg1' }))).toThrow(ConfigError);
  });
});

describe('scheduler: actors inside placement groups', () => {
  const inGroup = (r: Partial<ResourceRequest>, bundleIndex?: number) =>
    actor(r, { placementGroupId: 'pg1', bundleIndex });

  it('draws from the bundle, not the node, and packs fractions within the bundle GPU', () => {
    const s = cluster(node('n1', { cpus: 8, gpus: 2 }));
    ok(s.placeActor(actor({ numGpus: 0.5 })));
    ok(group(s, 'PACK', [{ numCpus: 2, numGpus: 1 }]));
    const afterGroup = s.nodeView('n1');
    const a = ok(s.placeActor(inGroup({ numCpus: 1, numGpus: 0.5 }, 0)));
    const b = ok(s.placeActor(inGroup({ numCpus: 1, numGpus: 0.5 }, 0)));
    expect(a).toEqual({
      nodeId: 'n1',
      gpus: [{ gpuId: 1, fraction: 0.5 }],
      placementGroupId: 'pg1',
      bundleIndex: 0,
    });
    expect(gpuIds(b)).toEqual([1]);
    expect(s.nodeView('n1')).toEqual(afterGroup);
    expect(s.placeActor(inGroup({ numGpus: 0.1 }, 0))).toEqual({ ok: false, reason: 'busy' });
    s.releaseActor(a, res({ numCpus: 1, numGpus: 0.5 }));
    expect(gpuIds(ok(s.placeActor(inGroup({ numGpus: 0.5 }, 0))))).toEqual([1]);
    expect(s.groupBundles('pg1')).toEqual([
      {
        bundleIndex: 0,
        placement: { nodeId: 'n1', gpus: [{ gpuId: 1, fraction: 1 }] },
        total: res({ numCpus: 2, numGpus: 1 }),
        available: res({ numCpus: 1 }),
      },
    ]);
  });

  it('gives whole GPUs of a bundle in its rank order', () => {
    const s = cluster(node('n1', { gpus: 4 }));
    ok(group(s, 'STRICT_PACK', [{ numGpus: 2 }, { numGpus: 2 }]));
    expect(gpuIds(ok(s.placeActor(inGroup({ numGpus: 1 }, 1))))).toEqual([2]);
    expect(gpuIds(ok(s.placeActor(inGroup({ numGpus: 1 }, 1))))).toEqual([3]);
    expect(gpuIds(ok(s.placeActor(inGroup({ numGpus: 2 }, 0))))).toEqual([0, 1]);
  });

  it('takes the lowest bundle with room when no index is given', () => {
    const s = cluster(node('n1'), node('n2'));
    ok(group(s, 'STRICT_SPREAD', [{ numCpus: 1 }, { numCpus: 1 }]));
    const first = ok(s.placeActor(inGroup({ numCpus: 1 })));
    expect([first.nodeId, first.bundleIndex]).toEqual(['n1', 0]);
    const second = ok(s.placeActor(inGroup({ numCpus: 1 }, -1)));
    expect([second.nodeId, second.bundleIndex]).toEqual(['n2', 1]);
    expect(s.placeActor(inGroup({ numCpus: 1 }))).toEqual({ ok: false, reason: 'busy' });
    s.releaseActor(second, res({ numCpus: 1 }));
    expect(ok(s.placeActor(inGroup({ numCpus: 1 }))).bundleIndex).toBe(1);
  });

  it('is infeasible beyond the bundle, a config error for a bad index, group or selector', () => {
    const s = cluster(node('n1', { gpus: 4 }));
    ok(group(s, 'PACK', [{ numGpus: 1 }, { numGpus: 2 }]));
    const one = caught(() => s.placeActor(inGroup({ numGpus: 2 }, 0)));
    expect(one).toBeInstanceOf(InfeasibleError);
    expect(one.message).toBe(
      'actor A (actor_1) needs 2 GPU, but bundle 0 of placement group pg1 reserves 1 GPU; it can never run there',
    );
    expect(one.fields).toEqual({
      resource: 'GPU',
      requested: 2,
      placementGroupId: 'pg1',
      bundleIndex: 0,
      bundleAmount: 1,
    });
    const any = caught(() => s.placeActor(inGroup({ numGpus: 3 })));
    expect(any.message).toMatch(
      /needs 3 GPU, but the largest bundle of placement group pg1, bundle 1, reserves 2 GPU/,
    );
    expect(() => s.placeActor(inGroup({ numCpus: 1 }, 0))).toThrow(InfeasibleError);
    expect(() => s.placeActor(inGroup({}, 2))).toThrow(
      /asks for bundle 2 of placement group pg1, which has 2 bundles/,
    );
    expect(() => s.placeActor(actor({}, { placementGroupId: 'pg9' }))).toThrow(/pg9 does not exist/);
    expect(() => s.placeActor(inGroup({}, 0))).not.toThrow();
    expect(() => s.placeActor({ ...inGroup({}, 0), labelSelector: { zone: 'a' } })).toThrow(ConfigError);
  });
});

describe('scheduler: node loss', () => {
  it('forgets a removed node and what ran on it', () => {
    const s = cluster(node('n1', { cpus: 4 }), node('n2', { cpus: 4 }));
    const a = ok(s.placeActor(actor({ numCpus: 1 })));
    expect(s.removeNode(a.nodeId)).toEqual([]);
    expect(s.hasNode(a.nodeId)).toBe(false);
    expect(s.totals().total.CPU).toBe(4);
    expect(s.totals().used.CPU).toBe(0);
    s.releaseActor(a, res({ numCpus: 1 }));
    expect(s.removeNode('n1')).toEqual([]);
  });

  it('re-places only lost bundles, away from the survivors for STRICT_SPREAD', () => {
    const s = cluster(node('n1', { gpus: 2 }), node('n2', { gpus: 2 }), node('n3', { gpus: 2 }));
    ok(group(s, 'STRICT_SPREAD', [{ numGpus: 1 }, { numGpus: 1 }]));
    const inBundle = ok(s.placeActor(actor({ numGpus: 1 }, { placementGroupId: 'pg1', bundleIndex: 0 })));
    expect(s.removeNode('n1')).toEqual(['pg1']);
    expect(s.groupBundles('pg1')?.map((b) => b.placement?.nodeId ?? null)).toEqual([null, 'n2']);
    expect(s.placeActor(actor({ numGpus: 1 }, { placementGroupId: 'pg1', bundleIndex: 0 }))).toEqual({
      ok: false,
      reason: 'busy',
    });
    expect(ok(s.rescheduleLostBundles('pg1'))).toEqual([
      { bundleIndex: 0, placement: { nodeId: 'n3', gpus: [{ gpuId: 0, fraction: 1 }] } },
    ]);
    // The dead actor's release must not free the re-placed bundle.
    s.releaseActor(inBundle, res({ numGpus: 1 }));
    ok(s.placeActor(actor({ numGpus: 1 }, { placementGroupId: 'pg1', bundleIndex: 0 })));
    expect(s.placeActor(actor({ numGpus: 1 }, { placementGroupId: 'pg1', bundleIndex: 0 }))).toEqual({
      ok: false,
      reason: 'busy',
    });
    expect(ok(s.rescheduleLostBundles('pg1'))).toEqual([]);
  });

  it('is infeasible for STRICT_SPREAD without a spare node, busy when one is merely full', () => {
    const s = cluster(node('n1'), node('n2'), node('n3'));
    ok(group(s, 'STRICT_SPREAD', [{ numCpus: 1 }, { numCpus: 1 }]));
    const filler = ok(s.placeActor(actor({ numCpus: 8 }, { labelSelector: {} })));
    expect(filler.nodeId).toBe('n3');
    s.removeNode('n1');
    expect(s.rescheduleLostBundles('pg1')).toEqual({ ok: false, reason: 'busy' });
    s.removeNode('n3');
    const err = caught(() => s.rescheduleLostBundles('pg1'));
    expect(err).toBeInstanceOf(InfeasibleError);
    expect(err.message).toMatch(
      /needs 1 distinct node other than the 1 node its other bundles hold, one per bundle, but only 0 of the 0 such nodes/,
    );
  });

  it('re-places a PACK bundle next to its surviving bundles, a STRICT_PACK group on one node', () => {
    // n3 registers before n2, so only the preference for the survivor's node sends bundle 0 to n2.
    const s = cluster(node('n1', { cpus: 2 }), node('n3', { cpus: 4 }), node('n2', { cpus: 4 }));
    s.restoreGroup('pg1', 'PACK', [
      { resources: res({ numCpus: 2 }), placement: { nodeId: 'n1', gpus: [] } },
      { resources: res({ numCpus: 1 }), placement: { nodeId: 'n2', gpus: [] } },
    ]);
    expect(s.removeNode('n1')).toEqual(['pg1']);
    expect(ok(s.rescheduleLostBundles('pg1')).map((b) => b.placement.nodeId)).toEqual(['n2']);
    ok(group(s, 'STRICT_PACK', [{ numCpus: 2 }, { numCpus: 2 }], 'pg2'));
    expect(s.groupBundles('pg2')?.map((b) => b.placement?.nodeId)).toEqual(['n3', 'n3']);
    expect(s.removeNode('n3')).toEqual(['pg2']);
    expect(s.removeNode('n3')).toEqual([]);
    // n2 could hold pg2 once pg1 is gone: busy, not infeasible.
    expect(s.rescheduleLostBundles('pg2')).toEqual({ ok: false, reason: 'busy' });
    s.releaseGroup('pg1');
    expect(ok(s.rescheduleLostBundles('pg2')).map((b) => b.placement.nodeId)).toEqual(['n2', 'n2']);
    expect(() => s.rescheduleLostBundles('pg9')).toThrow(ConfigError);
  });

  it('re-places every bundle of a group whose only node died, in rank order', () => {
    const s = cluster(node('n1', { gpus: 4 }), node('n2', { gpus: 4 }));
    ok(group(s, 'STRICT_PACK', [{ numGpus: 2 }, { numGpus: 2 }]));
    s.removeNode('n1');
    expect(ok(s.rescheduleLostBundles('pg1'))).toEqual([
      { bundleIndex: 0, placement: { nodeId: 'n2', gpus: [0, 1].map((gpuId) => ({ gpuId, fraction: 1 })) } },
      { bundleIndex: 1, placement: { nodeId: 'n2', gpus: [2, 3].map((gpuId) => ({ gpuId, fraction: 1 })) } },
    ]);
  });
});

describe('scheduler: restore after a head restart', () => {
  it('rebuilds the same state from stored placements', () => {
    const nodes = [node('n1', { cpus: 8, gpus: 4 }), node('n2', { cpus: 8, gpus: 4 })];
    const live = cluster(...nodes);
    const bundles = [res({ numCpus: 1, numGpus: 1 }), res({ numGpus: 0.5 })];
    const g = ok(live.placeGroup({ placementGroupId: 'pg1', what: 'pg1', strategy: 'SPREAD', bundles }));
    const actors = [
      { demand: actor({ numCpus: 2, numGpus: 0.25 }) },
      { demand: actor({ numGpus: 2 }) },
      { demand: actor({ numGpus: 0.25 }, { placementGroupId: 'pg1', bundleIndex: 1 }) },
      { demand: actor({ numCpus: 1 }, { placementGroupId: 'pg1', bundleIndex: 0 }) },
    ].map(({ demand }) => ({ resources: demand.resources, placement: ok(live.placeActor(demand)) }));

    const restored = cluster(...nodes);
    restored.restoreGroup(
      'pg1',
      'SPREAD',
      bundles.map((resources, i) => ({ resources, placement: g[i] })),
    );
    for (const a of actors) restored.restoreActor(a.placement, a.resources);
    for (const id of ['n1', 'n2']) expect(restored.nodeView(id)).toEqual(live.nodeView(id));
    expect(restored.groupBundles('pg1')).toEqual(live.groupBundles('pg1'));
    expect(restored.totals()).toEqual(live.totals());
    const next = actor({ numGpus: 0.25 });
    expect(restored.placeActor(next)).toEqual(live.placeActor(next));
  });

  it('does not fail on an over-commit and keeps the debt until enough is released', () => {
    const s = cluster(node('n1', { cpus: 4, gpus: 1 }));
    const p = { nodeId: 'n1', gpus: [{ gpuId: 0, fraction: 1 }] };
    for (let i = 0; i < 3; i++) s.restoreActor(p, res({ numCpus: 2, numGpus: 1 }));
    expect(s.nodeView('n1')?.available).toEqual(res({ memoryMb: 16_384 }));
    expect(s.nodeView('n1')?.gpusAvailable).toEqual([{ gpuId: 0, fraction: 0 }]);
    expect(s.totals().used).toEqual({ CPU: 4, GPU: 1, memory_mb: 0 });
    expect(s.placeActor(actor({ numCpus: 1 }))).toEqual({ ok: false, reason: 'busy' });
    s.releaseActor(p, res({ numCpus: 2, numGpus: 1 }));
    expect(s.placeActor(actor({ numCpus: 1 }))).toEqual({ ok: false, reason: 'busy' });
    s.releaseActor(p, res({ numCpus: 2, numGpus: 1 }));
    // Three GPUs were restored onto one and two came back: the GPU is still fully in use.
    expect(s.placeActor(actor({ numGpus: 0.5 }))).toEqual({ ok: false, reason: 'busy' });
    expect(ok(s.placeActor(actor({ numCpus: 1 }))).nodeId).toBe('n1');
    s.restoreActor({ nodeId: 'gone', gpus: [] }, res({ numCpus: 1 }));
  });

  it('brings back a bundle whose node is gone as lost, for rescheduling', () => {
    const s = cluster(node('n2', { gpus: 2 }));
    s.restoreGroup('pg1', 'STRICT_SPREAD', [
      { resources: res({ numGpus: 1 }), placement: { nodeId: 'n1', gpus: [{ gpuId: 0, fraction: 1 }] } },
      { resources: res({ numGpus: 1 }), placement: { nodeId: 'n2', gpus: [{ gpuId: 1, fraction: 1 }] } },
    ]);
    expect(s.nodeView('n2')?.gpusAvailable).toEqual([
      { gpuId: 0, fraction: 1 },
      { gpuId: 1, fraction: 0 },
    ]);
    expect(s.groupBundles('pg1')?.map((b) => b.placement?.nodeId ?? null)).toEqual([null, 'n2']);
    s.addNode(node('n3', { gpus: 1 }));
    expect(ok(s.rescheduleLostBundles('pg1'))).toEqual([
      { bundleIndex: 0, placement: { nodeId: 'n3', gpus: [{ gpuId: 0, fraction: 1 }] } },
    ]);
    // Restoring again replaces the group instead of reserving twice.
    s.restoreGroup('pg1', 'STRICT_SPREAD', [
      { resources: res({ numGpus: 1 }), placement: { nodeId: 'n2', gpus: [{ gpuId: 1, fraction: 1 }] } },
    ]);
    expect(s.nodeView('n3')?.gpusAvailable).toEqual([{ gpuId: 0, fraction: 1 }]);
  });
});

describe('scheduler: determinism and scale', () => {
  /** A fixed pseudo-random mix of requests and releases. */
  function run(): unknown[] {
    const s = cluster(
      ...Array.from({ length: 12 }, (_, i) =>
        node(`n${i}`, {
          cpus: 16,
          gpus: i % 3 === 0 ? 0 : 4,
          address: `10.0.0.${i}:7001`,
          labels: { rack: `r${i % 2}` },
        }),
      ),
    );
    let seed = 42;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const log: unknown[] = [];
    const live: { placement: ActorPlacement; resources: ResourceRequest }[] = [];
    for (let i = 0; i < 400; i++) {
      const r = rand();
      if (r < 0.2 && live.length > 0) {
        const [gone] = live.splice(Math.floor(rand() * live.length), 1);
        s.releaseActor(gone.placement, gone.resources);
        continue;
      }
      const resources = res({
        numCpus: Math.round(rand() * 4) / 2,
        numGpus: r < 0.5 ? [0, 0.25, 0.5, 1, 2][Math.floor(rand() * 5)] : 0,
      });
      const labelSelector: Record<string, string> = r > 0.9 ? { rack: 'r1' } : {};
      const attempt = s.placeActor({ what: `actor ${i}`, resources, labelSelector });
      log.push(attempt);
      if (attempt.ok) live.push({ placement: attempt.placement, resources });
    }
    log.push(s.totals());
    return log;
  }

  it('makes the same choices for the same calls', () => {
    expect(run()).toEqual(run());
  });

  it('places 10,000 mixed actors over 250 nodes (timing is measured by the bench, not asserted)', async () => {
    const result = await benchScheduling();
    expect(result.actors).toBe(10_000);
    expect(result.nodes).toBe(250);
  });
});
