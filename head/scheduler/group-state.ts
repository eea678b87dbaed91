/**
 * A placed group's bundles, each a small ledger of what it reserved on its node. Actors of the
 * group draw from these ledgers, never from the node's free pool, so a group's reservation is
 * exactly what its actors can use.
 */
import { ConfigError } from '../../common/errors.js';
import type { GpuShare, PlacementStrategy, ResourceRequest } from '../../common/resources.js';
import { newGpuPool, poolFromShares } from './gpu-allocator.js';
import { bundleActorInfeasible, type Holder } from './infeasible.js';
import { type NodeResources, ResourceLedger } from './node-resources.js';
import type { ActorDemand, ActorPlacement, Attempt, BundleView } from './types.js';
import { cloneVector, toClampedRequest, toResourceRequest, UNIT, type UnitVector } from './units.js';

export interface BundleState {
  index: number;
  request: ResourceRequest;
  need: UnitVector;
  /** Undefined while the bundle is lost with its node. */
  node: NodeResources | undefined;
  /** The GPU shares reserved on the node, in rank order. */
  gpus: GpuShare[];
  ledger: ResourceLedger;
}

export interface GroupState {
  id: string;
  what: string;
  strategy: PlacementStrategy;
  bundles: BundleState[];
}

/**
 * A lost bundle has no devices yet; provisional ids (-1, -2, ...) of the shape it will get let
 * "could an actor ever fit here" be answered before it is re-placed. It is never picked from.
 */
function provisionalPool(gpuUnits: number) {
  if (gpuUnits <= 0) return newGpuPool([]);
  if (gpuUnits < UNIT) return newGpuPool([-1], [gpuUnits]);
  return newGpuPool(Array.from({ length: gpuUnits / UNIT }, (_, i) => -1 - i));
}

export function newBundle(
  index: number,
  request: ResourceRequest,
  need: UnitVector,
  node: NodeResources | undefined,
  gpus: GpuShare[],
): BundleState {
  const pool = node ? poolFromShares(gpus) : provisionalPool(need.gpu);
  return { index, request, need, node, gpus, ledger: new ResourceLedger(cloneVector(need), pool) };
}

export function toBundleView(b: BundleState): BundleView {
  return {
    bundleIndex: b.index,
    placement: b.node ? { nodeId: b.node.nodeId, gpus: b.gpus } : null,
    total: toResourceRequest(b.need),
    available: toClampedRequest(b.ledger.avail),
  };
}

function asHolder(b: BundleState): Holder & { index: number } {
  return {
    id: String(b.index),
    index: b.index,
    title: `bundle ${b.index}`,
    total: b.ledger.total,
    canEverHold: (need) => b.ledger.canEverHold(need),
  };
}

/**
 * An actor inside a group: the given bundle, or with bundle index -1 the lowest-index bundle
 * with room. Fractions pack within the bundle's GPUs; whole GPUs go in the bundle's rank order.
 */
export function placeInGroup(
  group: GroupState,
  demand: ActorDemand,
  need: UnitVector,
): Attempt<ActorPlacement> {
  const index = demand.bundleIndex ?? -1;
  const n = group.bundles.length;
  if (index !== -1 && !(Number.isInteger(index) && index >= 0 && index < n)) {
    throw new ConfigError(
      `${demand.what} asks for bundle ${index} of ${group.what}, which has ${n} bundles ` +
        `(use 0..${n - 1}, or -1 for any bundle)`,
      { fields: { placementGroupId: group.id, bundleIndex: index } },
    );
  }
  const candidates = index === -1 ? group.bundles : [group.bundles[index]];
  let feasible = false;
  for (const b of candidates) {
    if (!b.ledger.canEverHold(need)) continue;
    feasible = true;
    if (b.node === undefined) continue;
    const picks = b.ledger.pick(need);
    if (picks === undefined) continue;
    return {
      ok: true,
      placement: {
        nodeId: b.node.nodeId,
        gpus: b.ledger.take(need, picks),
        placementGroupId: group.id,
        bundleIndex: b.index,
      },
    };
  }
  if (!feasible) {
    throw bundleActorInfeasible(
      demand.what,
      need,
      group.what,
      group.id,
      candidates.map(asHolder),
      index === -1,
    );
  }
  return { ok: false, reason: 'busy' };
}
