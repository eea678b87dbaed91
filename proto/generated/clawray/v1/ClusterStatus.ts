// Original file: proto/head.proto

import type { NodeStatus as _clawray_v1_NodeStatus, NodeStatus__Output as _clawray_v1_NodeStatus__Output } from '../../clawray/v1/NodeStatus.js';
import type { ActorInfo as _clawray_v1_ActorInfo, ActorInfo__Output as _clawray_v1_ActorInfo__Output } from '../../clawray/v1/ActorInfo.js';
import type { PlacementGroupInfo as _clawray_v1_PlacementGroupInfo, PlacementGroupInfo__Output as _clawray_v1_PlacementGroupInfo__Output } from '../../clawray/v1/PlacementGroupInfo.js';
import type { PendingDemand as _clawray_v1_PendingDemand, PendingDemand__Output as _clawray_v1_PendingDemand__Output } from '../../clawray/v1/PendingDemand.js';

export interface ClusterStatus {
  'nodes'?: (_clawray_v1_NodeStatus)[];
  'actors'?: (_clawray_v1_ActorInfo)[];
  'placementGroups'?: (_clawray_v1_PlacementGroupInfo)[];
  'headAddress'?: (string);
  'startedAtMs'?: (number | string);
  'store'?: (string);
  'pendingDemands'?: (_clawray_v1_PendingDemand)[];
  'droppedDeadActors'?: (number | string);
  'droppedFinishedJobs'?: (number | string);
}

export interface ClusterStatus__Output {
  'nodes': (_clawray_v1_NodeStatus__Output)[];
  'actors': (_clawray_v1_ActorInfo__Output)[];
  'placementGroups': (_clawray_v1_PlacementGroupInfo__Output)[];
  'headAddress': (string);
  'startedAtMs': (number);
  'store': (string);
  'pendingDemands': (_clawray_v1_PendingDemand__Output)[];
  'droppedDeadActors': (number);
  'droppedFinishedJobs': (number);
}
