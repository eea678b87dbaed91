/**
 * The runtime's public surface: what the SDK (root index.ts), head/, worker/, cli/, jobs/ and
 * the actor workloads share: the cluster client and actor handles, call options and scope, the
 * argument codec, the status views, actor-option parsing, the head client and the host's IPC.
 * Code outside runtime/ imports it from here only, so the files behind it can move and split
 * without touching their users (biome.json's noRestrictedImports; test/import-boundaries.test.ts).
 * host-main.ts is not exported: it is a process entry (the worker forks dist/runtime/host-main.js),
 * and importing it would start an actor host.
 */
export { type ActorContext, actorContext, insideActor } from './actor-context.js';
export { type ActorCallView, ActorHandle, type RemoteMethods } from './actor-handle.js';
export { type ActorOptions, parseWith } from './actor-options.js';
export { ambientCluster, ambientToken } from './ambient.js';
export type { CallOptions } from './call-options.js';
export { callSignal } from './call-scope.js';
export {
  Cluster,
  type ClusterOptions,
  type CreateActorRequest,
  type PlacementGroupRequest,
  type PlacementPlanRequest,
} from './cluster.js';
export { decodeArgs, encodeArgs } from './codec.js';
export { HeadClient } from './head-client.js';
export { describeExit, HOST_EXIT, type HostToAgent, type InitCommand } from './ipc.js';
export { addMetricsSource } from './metrics-sources.js';
export type { PlacedBundle, PlacementGroup } from './placement-group.js';
export { STREAM_WINDOW_ITEMS, type StreamedCall } from './streamed-call.js';
export {
  type ActorView,
  actorView,
  type ClusterStatusView,
  formatResources,
  gpusFromWire,
  type NodeView,
  type PendingDemandView,
  type ResourceMap,
  resourcesFromWire,
  resourcesToWire,
} from './views.js';
