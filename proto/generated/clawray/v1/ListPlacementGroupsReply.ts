// Original file: proto/head.proto

import type { PlacementGroupInfo as _clawray_v1_PlacementGroupInfo, PlacementGroupInfo__Output as _clawray_v1_PlacementGroupInfo__Output } from '../../clawray/v1/PlacementGroupInfo.js';

export interface ListPlacementGroupsReply {
  'placementGroups'?: (_clawray_v1_PlacementGroupInfo)[];
}

export interface ListPlacementGroupsReply__Output {
  'placementGroups': (_clawray_v1_PlacementGroupInfo__Output)[];
}
