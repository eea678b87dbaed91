// Original file: proto/common.proto

import type { ActorSpec as _clawray_v1_ActorSpec, ActorSpec__Output as _clawray_v1_ActorSpec__Output } from '../../clawray/v1/ActorSpec.js';
import type { ActorState as _clawray_v1_ActorState, ActorState__Output as _clawray_v1_ActorState__Output } from '../../clawray/v1/ActorState.js';
import type { GpuShare as _clawray_v1_GpuShare, GpuShare__Output as _clawray_v1_GpuShare__Output } from '../../clawray/v1/GpuShare.js';
import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from '../../clawray/v1/ErrorInfo.js';

export interface ActorInfo {
  'spec'?: (_clawray_v1_ActorSpec | null);
  'state'?: (_clawray_v1_ActorState);
  'nodeId'?: (string);
  'address'?: (string);
  'gpus'?: (_clawray_v1_GpuShare)[];
  'numRestarts'?: (number);
  'deathCause'?: (_clawray_v1_ErrorInfo | null);
  'pid'?: (number);
  'createdAtMs'?: (number | string);
  'updatedAtMs'?: (number | string);
  'incarnation'?: (number);
}

export interface ActorInfo__Output {
  'spec': (_clawray_v1_ActorSpec__Output | null);
  'state': (_clawray_v1_ActorState__Output);
  'nodeId': (string);
  'address': (string);
  'gpus': (_clawray_v1_GpuShare__Output)[];
  'numRestarts': (number);
  'deathCause': (_clawray_v1_ErrorInfo__Output | null);
  'pid': (number);
  'createdAtMs': (number);
  'updatedAtMs': (number);
  'incarnation': (number);
}
