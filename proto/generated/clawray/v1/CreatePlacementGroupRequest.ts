// Original file: proto/head.proto

import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from '../../clawray/v1/Resources.js';

export interface CreatePlacementGroupRequest {
  'placementGroupId'?: (string);
  'name'?: (string);
  'namespace'?: (string);
  'strategy'?: (string);
  'bundles'?: (_clawray_v1_Resources)[];
  'timeoutMs'?: (number | string);
  'jobId'?: (string);
  'ownerId'?: (string);
  'ownerActorId'?: (string);
  'ownerIncarnation'?: (number);
  'detached'?: (boolean);
}

export interface CreatePlacementGroupRequest__Output {
  'placementGroupId': (string);
  'name': (string);
  'namespace': (string);
  'strategy': (string);
  'bundles': (_clawray_v1_Resources__Output)[];
  'timeoutMs': (number);
  'jobId': (string);
  'ownerId': (string);
  'ownerActorId': (string);
  'ownerIncarnation': (number);
  'detached': (boolean);
}
