// Original file: proto/common.proto

import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from '../../clawray/v1/Resources.js';

export interface ActorOptions {
  'resources'?: (_clawray_v1_Resources | null);
  'labelSelector'?: ({[key: string]: string});
  'name'?: (string);
  'namespace'?: (string);
  'getIfExists'?: (boolean);
  'maxRestarts'?: (number);
  'maxTaskRetries'?: (number);
  'maxConcurrency'?: (number);
  'maxPendingCalls'?: (number);
  'placementGroupId'?: (string);
  'bundleIndex'?: (number);
  'env'?: ({[key: string]: string});
  'scheduleTimeoutMs'?: (number | string);
  'detached'?: (boolean);
}

export interface ActorOptions__Output {
  'resources': (_clawray_v1_Resources__Output | null);
  'labelSelector': ({[key: string]: string});
  'name': (string);
  'namespace': (string);
  'getIfExists': (boolean);
  'maxRestarts': (number);
  'maxTaskRetries': (number);
  'maxConcurrency': (number);
  'maxPendingCalls': (number);
  'placementGroupId': (string);
  'bundleIndex': (number);
  'env': ({[key: string]: string});
  'scheduleTimeoutMs': (number);
  'detached': (boolean);
}
