/**
 * The scheduler's contract with the head. The scheduler is pure bookkeeping: it never does
 * I/O, it is deterministic for a given sequence of calls, and it reserves resources only when
 * it returns a placement. The head persists placements and calls `release*` when they end.
 */
import type { GpuShare, LabelSelector, PlacementStrategy, ResourceRequest } from '../../common/resources.js';

export interface NodeCapacity {
  nodeId: string;
  /** host:port, only for messages. */
  address: string;
  /** Totals. `numGpus` equals `gpuIds.length`. */
  resources: ResourceRequest;
  /** Physical GPU ids of the node (as `CUDA_VISIBLE_DEVICES` numbers them there). */
  gpuIds: number[];
  labels: Record<string, string>;
}

export interface ActorDemand {
  /** Names the request in error messages, e.g. `actor Counter (actor_ab12)`. */
  what: string;
  resources: ResourceRequest;
  labelSelector: LabelSelector;
  /** Set when the actor runs inside a placement group's reservation. */
  placementGroupId?: string;
  /** -1 (or undefined) means any bundle of the group. */
  bundleIndex?: number;
}

export interface ActorPlacement {
  nodeId: string;
  /** GPU shares in rank order; empty when no GPU was asked for. */
  gpus: GpuShare[];
  placementGroupId?: string;
  bundleIndex?: number;
}

export interface GroupDemand {
  placementGroupId: string;
  /** Names the request in error messages. */
  what: string;
  strategy: PlacementStrategy;
  bundles: ResourceRequest[];
}

export interface BundlePlacement {
  nodeId: string;
  /** For whole-GPU bundles the GPU ids with fraction 1; bundles on one node get ids in bundle order. */
  gpus: GpuShare[];
}

/** `busy`: feasible, but not now; the head waits for resources to free up and tries again. */
export type Attempt<T> = { ok: true; placement: T } | { ok: false; reason: 'busy' };

export interface NodeView {
  nodeId: string;
  total: ResourceRequest;
  available: ResourceRequest;
  /** Free share of each physical GPU, ascending by id. */
  gpusAvailable: GpuShare[];
}

export interface ResourceTotals {
  /** Keyed `CPU`, `GPU`, `memory_mb` and custom names. */
  total: Record<string, number>;
  used: Record<string, number>;
}

/** One bundle of a placed group, as `Scheduler.groupBundles` reports it. */
export interface BundleView {
  bundleIndex: number;
  /** Null while the bundle is lost with its node (until `rescheduleLostBundles`). */
  placement: BundlePlacement | null;
  /** What the bundle reserves. */
  total: ResourceRequest;
  /** What its actors have not taken yet. */
  available: ResourceRequest;
}

export interface SchedulerOptions {
  /** Ray's `scheduler_spread_threshold`: nodes fill to this utilization before work spreads. Default 0.5. */
  spreadThreshold?: number;
  /** Ray's `scheduler_avoid_gpu_nodes`: CPU-only actors prefer GPU-less nodes while they have room. Default true. */
  avoidGpuNodes?: boolean;
}
