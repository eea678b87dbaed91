// Original file: proto/head.proto

import type { ActorSpec as _clawray_v1_ActorSpec, ActorSpec__Output as _clawray_v1_ActorSpec__Output } from '../../clawray/v1/ActorSpec.js';

export interface CreateActorRequest {
  'spec'?: (_clawray_v1_ActorSpec | null);
}

export interface CreateActorRequest__Output {
  'spec': (_clawray_v1_ActorSpec__Output | null);
}
