// Original file: proto/head.proto

import type { PendingDemand as _clawray_v1_PendingDemand, PendingDemand__Output as _clawray_v1_PendingDemand__Output } from '../../clawray/v1/PendingDemand.js';

export interface OwnerEvent {
  'kind'?: (string);
  'message'?: (string);
  'actorId'?: (string);
  'placementGroupId'?: (string);
  'demand'?: (_clawray_v1_PendingDemand | null);
}

export interface OwnerEvent__Output {
  'kind': (string);
  'message': (string);
  'actorId': (string);
  'placementGroupId': (string);
  'demand': (_clawray_v1_PendingDemand__Output | null);
}
