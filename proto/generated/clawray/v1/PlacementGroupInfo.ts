// Original file: proto/head.proto

import type { Bundle as _clawray_v1_Bundle, Bundle__Output as _clawray_v1_Bundle__Output } from '../../clawray/v1/Bundle.js';

export interface PlacementGroupInfo {
  'placementGroupId'?: (string);
  'name'?: (string);
  'namespace'?: (string);
  'strategy'?: (string);
  'bundles'?: (_clawray_v1_Bundle)[];
  'state'?: (string);
  'createdAtMs'?: (number | string);
  'jobId'?: (string);
  'detached'?: (boolean);
  'ownerId'?: (string);
  'ownerActorId'?: (string);
}

export interface PlacementGroupInfo__Output {
  'placementGroupId': (string);
  'name': (string);
  'namespace': (string);
  'strategy': (string);
  'bundles': (_clawray_v1_Bundle__Output)[];
  'state': (string);
  'createdAtMs': (number);
  'jobId': (string);
  'detached': (boolean);
  'ownerId': (string);
  'ownerActorId': (string);
}
