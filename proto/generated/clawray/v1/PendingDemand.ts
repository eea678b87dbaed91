// Original file: proto/head.proto

import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from '../../clawray/v1/Resources.js';

export interface PendingDemand {
  'kind'?: (string);
  'id'?: (string);
  'name'?: (string);
  'bundles'?: (_clawray_v1_Resources)[];
  'strategy'?: (string);
  'labelSelector'?: ({[key: string]: string});
  'pendingSinceMs'?: (number | string);
  'state'?: (string);
  'ownerId'?: (string);
}

export interface PendingDemand__Output {
  'kind': (string);
  'id': (string);
  'name': (string);
  'bundles': (_clawray_v1_Resources__Output)[];
  'strategy': (string);
  'labelSelector': ({[key: string]: string});
  'pendingSinceMs': (number);
  'state': (string);
  'ownerId': (string);
}
