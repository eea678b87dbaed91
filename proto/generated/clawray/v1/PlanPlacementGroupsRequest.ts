// Original file: proto/head.proto

import type { PlacementGroupAsk as _clawray_v1_PlacementGroupAsk, PlacementGroupAsk__Output as _clawray_v1_PlacementGroupAsk__Output } from '../../clawray/v1/PlacementGroupAsk.js';

export interface PlanPlacementGroupsRequest {
  'groups'?: (_clawray_v1_PlacementGroupAsk)[];
}

export interface PlanPlacementGroupsRequest__Output {
  'groups': (_clawray_v1_PlacementGroupAsk__Output)[];
}
