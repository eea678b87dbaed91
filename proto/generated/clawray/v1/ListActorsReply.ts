// Original file: proto/head.proto

import type { ActorInfo as _clawray_v1_ActorInfo, ActorInfo__Output as _clawray_v1_ActorInfo__Output } from '../../clawray/v1/ActorInfo.js';

export interface ListActorsReply {
  'actors'?: (_clawray_v1_ActorInfo)[];
}

export interface ListActorsReply__Output {
  'actors': (_clawray_v1_ActorInfo__Output)[];
}
