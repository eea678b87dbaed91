/**
 * What the SDK and CLI show of the cluster, converted from the wire messages: resource maps
 * keyed `CPU`, `GPU`, `memory_mb` and custom names, as users read them in `clawray status`.
 */
import type { ErrorInfoShape } from '../../common/errors.js';
import type { GpuShare, ResourceRequest } from '../../common/resources.js';
import type * as m from '../../proto/messages.js';
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
  deathCause?: ErrorInfoShape;
}

export interface ClusterStatusView {
  headAddress: string;
  store: string;
  startedAtMs: number;
  nodes: NodeView[];
  actors: ActorView[];
  placementGroups: PlacementGroup[];
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
  };
}
