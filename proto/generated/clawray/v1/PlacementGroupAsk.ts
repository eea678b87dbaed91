// Original file: proto/head.proto

import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from '../../clawray/v1/Resources.js';

export interface PlacementGroupAsk {
  'name'?: (string);
  'strategy'?: (string);
  'bundles'?: (_clawray_v1_Resources)[];
}

export interface PlacementGroupAsk__Output {
  'name': (string);
  'strategy': (string);
  'bundles': (_clawray_v1_Resources__Output)[];
}
