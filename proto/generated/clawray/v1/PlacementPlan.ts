// Original file: proto/head.proto

import type { GroupPlan as _clawray_v1_GroupPlan, GroupPlan__Output as _clawray_v1_GroupPlan__Output } from '../../clawray/v1/GroupPlan.js';

export interface PlacementPlan {
  'fits'?: (boolean);
  'groups'?: (_clawray_v1_GroupPlan)[];
}

export interface PlacementPlan__Output {
  'fits': (boolean);
  'groups': (_clawray_v1_GroupPlan__Output)[];
}
