import type { GpuShare, PlacementStrategy, ResourceRequest } from '../common/resources.js';

export interface PlacedBundle {
  resources: ResourceRequest;
  nodeId: string;
  /** GPU shares reserved for the bundle, in rank order. */
  gpus: GpuShare[];
}

/** A reserved placement group; pass it as `options.placementGroup` to place actors in it. */
export interface PlacementGroup {
  id: string;
  name: string;
  namespace: string;
  strategy: PlacementStrategy;
  state: string;
  bundles: PlacedBundle[];
}
