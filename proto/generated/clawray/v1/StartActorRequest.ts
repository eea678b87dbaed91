// Original file: proto/node.proto

import type { ActorSpec as _clawray_v1_ActorSpec, ActorSpec__Output as _clawray_v1_ActorSpec__Output } from '../../clawray/v1/ActorSpec.js';
import type { GpuShare as _clawray_v1_GpuShare, GpuShare__Output as _clawray_v1_GpuShare__Output } from '../../clawray/v1/GpuShare.js';

export interface StartActorRequest {
  'spec'?: (_clawray_v1_ActorSpec | null);
  'gpus'?: (_clawray_v1_GpuShare)[];
  'incarnation'?: (number);
}

export interface StartActorRequest__Output {
  'spec': (_clawray_v1_ActorSpec__Output | null);
  'gpus': (_clawray_v1_GpuShare__Output)[];
  'incarnation': (number);
}
