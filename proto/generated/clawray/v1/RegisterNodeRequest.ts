// Original file: proto/head.proto

import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from '../../clawray/v1/Resources.js';
import type { RunningActor as _clawray_v1_RunningActor, RunningActor__Output as _clawray_v1_RunningActor__Output } from '../../clawray/v1/RunningActor.js';

export interface RegisterNodeRequest {
  'nodeId'?: (string);
  'address'?: (string);
  'resources'?: (_clawray_v1_Resources | null);
  'gpuIds'?: (number)[];
  'labels'?: ({[key: string]: string});
  'actors'?: (_clawray_v1_RunningActor)[];
  'hostname'?: (string);
}

export interface RegisterNodeRequest__Output {
  'nodeId': (string);
  'address': (string);
  'resources': (_clawray_v1_Resources__Output | null);
  'gpuIds': (number)[];
  'labels': ({[key: string]: string});
  'actors': (_clawray_v1_RunningActor__Output)[];
  'hostname': (string);
}
