/** Store records to wire messages (the head's replies). */

import type * as m from '../proto/messages.js';
import { resourcesToWire } from '../runtime/index.js';
import type { ActorRecord, PlacementGroupRecord } from './model.js';

export function actorInfo(r: ActorRecord): m.ActorInfo {
  const o = r.options;
  return {
    spec: {
      actorId: r.actorId,
      module: r.module,
      className: r.className,
      args: Buffer.alloc(0),
      jobId: r.jobId,
      ownerId: r.ownerId ?? '',
      ownerActorId: r.ownerActorId ?? '',
      ownerIncarnation: r.ownerIncarnation ?? 0,
      options: {
        resources: resourcesToWire(o.resources),
        labelSelector: o.labelSelector,
        name: o.name,
        namespace: o.namespace,
        getIfExists: false,
        maxRestarts: o.maxRestarts,
        maxTaskRetries: o.maxTaskRetries,
        maxConcurrency: o.maxConcurrency,
        maxPendingCalls: o.maxPendingCalls,
        placementGroupId: o.placementGroupId,
        bundleIndex: o.bundleIndex,
        env: {},
        scheduleTimeoutMs: o.scheduleTimeoutMs,
        detached: o.detached ?? false,
      },
    },
    state: r.state,
    nodeId: r.nodeId,
    address: r.address,
    gpus: r.gpus,
    numRestarts: r.numRestarts,
    deathCause: r.deathCause ?? null,
    pid: r.pid,
    createdAtMs: r.createdAtMs,
    updatedAtMs: r.updatedAtMs,
    incarnation: r.incarnation,
  };
}

export function placementGroupInfo(r: PlacementGroupRecord): m.PlacementGroupInfo {
  return {
    placementGroupId: r.placementGroupId,
    name: r.name,
    namespace: r.namespace,
    strategy: r.strategy,
    state: r.state,
    createdAtMs: r.createdAtMs,
    jobId: r.jobId,
    detached: r.detached ?? false,
    ownerId: r.ownerId ?? '',
    ownerActorId: r.ownerActorId ?? '',
    bundles: r.bundles.map((b) => ({
      resources: resourcesToWire(b.resources),
      nodeId: b.nodeId,
      gpus: b.gpus,
    })),
  };
}
