/**
 * What the SDK and CLI show of the cluster, converted from the wire messages: resource maps
 * keyed `CPU`, `GPU`, `memory_mb` and custom names, as users read them in `clawray status`.
 */
import type { ErrorInfoShape } from '../common/errors.js';
import type { GpuShare, ResourceRequest } from '../common/resources.js';
import type * as m from '../proto/messages.js';
import type { PlacementGroup } from './placement-group.js';

export type ResourceMap = Record<string, number>;

export function toResourceMap(r: ResourceRequest): ResourceMap {
  return { CPU: r.numCpus, GPU: r.numGpus, memory_mb: r.memoryMb, ...r.custom };
}

export function resourcesToWire(r: ResourceRequest): m.Resources {
  return { numCpus: r.numCpus, numGpus: r.numGpus, memoryMb: r.memoryMb, custom: r.custom };
}

export function resourcesFromWire(r: m.Resources__Output | null | undefined): ResourceRequest {
  return {
    numCpus: r?.numCpus ?? 0,
    numGpus: r?.numGpus ?? 0,
    memoryMb: r?.memoryMb ?? 0,
    custom: { ...(r?.custom ?? {}) },
  };
}

/** Resources as the wire carries them, read or written. */
export interface ResourceShape {
  numCpus?: number | string;
  numGpus?: number | string;
  memoryMb?: number | string;
  custom?: Record<string, number | string>;
}

/** `{CPU: 1, GPU: 0.5, memory_mb: 512, slot: 1}` (zeros left out); `{}` for nothing. */
export function formatResources(r: ResourceShape | null | undefined): string {
  const parts: string[] = [];
  const add = (k: string, v: number | string | undefined) => {
    if (v !== undefined && Number(v) !== 0) parts.push(`${k}: ${Number(v)}`);
  };
  add('CPU', r?.numCpus);
  add('GPU', r?.numGpus);
  add('memory_mb', r?.memoryMb);
  for (const [k, v] of Object.entries(r?.custom ?? {})) add(k, v);
  return `{${parts.join(', ')}}`;
}

export const gpusFromWire = (gpus: m.GpuShare__Output[]): GpuShare[] =>
  gpus.map((g) => ({ gpuId: g.gpuId, fraction: g.fraction }));

export interface NodeView {
  nodeId: string;
  address: string;
  hostname: string;
  state: string;
  total: ResourceMap;
  available: ResourceMap;
  gpusAvailable: GpuShare[];
  labels: Record<string, string>;
  lastHeartbeatMs: number;
}

export interface ActorView {
  actorId: string;
  className: string;
  module: string;
  name: string;
  namespace: string;
  jobId: string;
  state: string;
  nodeId: string;
  address: string;
  pid: number;
  gpuIds: number[];
  gpus: GpuShare[];
  resources: ResourceMap;
  numRestarts: number;
  placementGroupId: string;
  /** Outlives its owner (`lifetime: 'detached'`). */
  detached: boolean;
  /** The owner session that created it ('' for the head's own actors). */
  ownerId: string;
  /** The actor that created it, if one did. */
  ownerActorId: string;
  deathCause?: ErrorInfoShape;
}

/** A request waiting for resources (Ray's pending demands). */
export interface PendingDemandView {
  kind: 'actor' | 'placement group';
  id: string;
  name: string;
  /** One entry for an actor; one per bundle for a placement group. */
  bundles: ResourceMap[];
  /** DEFAULT, `PLACEMENT_GROUP pg_… [bundle N]`, or a group's strategy. */
  strategy: string;
  labelSelector: Record<string, string>;
  pendingSinceMs: number;
  state: string;
  ownerId: string;
}

export interface ClusterStatusView {
  headAddress: string;
  store: string;
  startedAtMs: number;
  nodes: NodeView[];
  actors: ActorView[];
  placementGroups: PlacementGroup[];
  /** Requests waiting for resources, oldest first. */
  pendingDemands: PendingDemandView[];
  /** Dead actors and finished jobs dropped beyond the head's caps since it started. */
  droppedDeadActors: number;
  droppedFinishedJobs: number;
}

export function pendingDemandView(d: m.PendingDemand__Output): PendingDemandView {
  return {
    kind: d.kind === 'actor' ? 'actor' : 'placement group',
    id: d.id,
    name: d.name,
    bundles: d.bundles.map((b) => toResourceMap(resourcesFromWire(b))),
    strategy: d.strategy,
    labelSelector: { ...d.labelSelector },
    pendingSinceMs: d.pendingSinceMs,
    state: d.state,
    ownerId: d.ownerId,
  };
}

export function actorView(info: m.ActorInfo__Output): ActorView {
  const spec = info.spec;
  const options = spec?.options;
  return {
    actorId: spec?.actorId ?? '',
    className: spec?.className ?? '',
    module: spec?.module ?? '',
    name: options?.name ?? '',
    namespace: options?.namespace ?? '',
    jobId: spec?.jobId ?? '',
    state: info.state,
    nodeId: info.nodeId,
    address: info.address,
    pid: info.pid,
    gpuIds: [...new Set(info.gpus.map((g) => g.gpuId))],
    gpus: gpusFromWire(info.gpus),
    resources: toResourceMap(resourcesFromWire(options?.resources)),
    numRestarts: info.numRestarts,
    placementGroupId: options?.placementGroupId ?? '',
    detached: options?.detached ?? false,
    ownerId: spec?.ownerId ?? '',
    ownerActorId: spec?.ownerActorId ?? '',
    deathCause: info.deathCause?.name ? info.deathCause : undefined,
  };
}

export function placementGroupView(info: m.PlacementGroupInfo__Output): PlacementGroup {
  return {
    id: info.placementGroupId,
    name: info.name,
    namespace: info.namespace,
    strategy: info.strategy as PlacementGroup['strategy'],
    state: info.state,
    bundles: info.bundles.map((b) => ({
      resources: resourcesFromWire(b.resources),
      nodeId: b.nodeId,
      gpus: gpusFromWire(b.gpus),
    })),
  };
}

export function nodeView(n: m.NodeStatus__Output): NodeView {
  return {
    nodeId: n.nodeId,
    address: n.address,
    hostname: n.hostname,
    state: n.state,
    total: toResourceMap(resourcesFromWire(n.total)),
    available: toResourceMap(resourcesFromWire(n.available)),
    gpusAvailable: gpusFromWire(n.gpusAvailable),
    labels: { ...n.labels },
    lastHeartbeatMs: n.lastHeartbeatMs,
  };
}

export function clusterStatusView(s: m.ClusterStatus__Output): ClusterStatusView {
  return {
    headAddress: s.headAddress,
    store: s.store,
    startedAtMs: s.startedAtMs,
    nodes: s.nodes.map(nodeView),
    actors: s.actors.map(actorView),
    placementGroups: s.placementGroups.map(placementGroupView),
    pendingDemands: (s.pendingDemands ?? []).map(pendingDemandView),
    droppedDeadActors: s.droppedDeadActors ?? 0,
    droppedFinishedJobs: s.droppedFinishedJobs ?? 0,
  };
}
