/**
 * The records the head keeps in the cluster store. They are plain JSON: constructor arguments
 * are base64, error causes are `ErrorInfoShape`.
 */
import type { ErrorInfoShape } from '../common/errors.js';
import type { GpuShare, LabelSelector, PlacementStrategy, ResourceRequest } from '../common/resources.js';

export type NodeState = 'ALIVE' | 'DRAINING' | 'DEAD';

export interface NodeRecord {
  nodeId: string;
  address: string;
  hostname: string;
  resources: ResourceRequest;
  gpuIds: number[];
  labels: Record<string, string>;
  state: NodeState;
  registeredAtMs: number;
  deadAtMs?: number;
}

export type ActorStateName = 'PENDING_CREATION' | 'ALIVE' | 'RESTARTING' | 'DEAD';

export interface ActorOptionsRecord {
  resources: ResourceRequest;
  labelSelector: LabelSelector;
  name: string;
  namespace: string;
  maxRestarts: number;
  maxTaskRetries: number;
  maxConcurrency: number;
  maxPendingCalls: number;
  placementGroupId: string;
  bundleIndex: number;
  env: Record<string, string>;
  scheduleTimeoutMs: number;
  /** Outlives its owner (absent in records of older heads: false). */
  detached?: boolean;
}

/**
 * Who owns an actor or placement group (Ray's owner): the SDK connection (owner session) that
 * created it, and, when an actor created it, that actor's incarnation. Absent fields: no such
 * owner (the head's own actors, records of older heads).
 */
export interface OwnerFields {
  ownerId?: string;
  ownerActorId?: string;
  ownerIncarnation?: number;
}

export interface ActorRecord extends OwnerFields {
  actorId: string;
  module: string;
  className: string;
  argsBase64: string;
  jobId: string;
  options: ActorOptionsRecord;
  state: ActorStateName;
  nodeId: string;
  address: string;
  gpus: GpuShare[];
  /** Which bundle of its placement group the actor's resources came from, if any. */
  bundleIndex: number;
  pid: number;
  numRestarts: number;
  incarnation: number;
  deathCause?: ErrorInfoShape;
  createdAtMs: number;
  updatedAtMs: number;
}

export type PlacementGroupState = 'PENDING' | 'CREATED' | 'RESCHEDULING' | 'REMOVED';

export interface BundleRecord {
  resources: ResourceRequest;
  nodeId: string;
  gpus: GpuShare[];
}

export interface PlacementGroupRecord extends OwnerFields {
  placementGroupId: string;
  name: string;
  namespace: string;
  strategy: PlacementStrategy;
  bundles: BundleRecord[];
  state: PlacementGroupState;
  jobId: string;
  createdAtMs: number;
  detached?: boolean;
}
