// Original file: proto/head.proto

import type { PlacementPlan as _clawray_v1_PlacementPlan, PlacementPlan__Output as _clawray_v1_PlacementPlan__Output } from '../../clawray/v1/PlacementPlan.js';

export interface PlanPlacementGroupsReply {
  'now'?: (_clawray_v1_PlacementPlan | null);
  'ever'?: (_clawray_v1_PlacementPlan | null);
}

export interface PlanPlacementGroupsReply__Output {
  'now': (_clawray_v1_PlacementPlan__Output | null);
  'ever': (_clawray_v1_PlacementPlan__Output | null);
}
