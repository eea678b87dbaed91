// Original file: proto/common.proto

import type { ActorOptions as _clawray_v1_ActorOptions, ActorOptions__Output as _clawray_v1_ActorOptions__Output } from '../../clawray/v1/ActorOptions.js';

export interface ActorSpec {
  'actorId'?: (string);
  'module'?: (string);
  'className'?: (string);
  'args'?: (Buffer | Uint8Array | string);
  'options'?: (_clawray_v1_ActorOptions | null);
  'jobId'?: (string);
  'ownerId'?: (string);
  'ownerActorId'?: (string);
  'ownerIncarnation'?: (number);
}

export interface ActorSpec__Output {
  'actorId': (string);
  'module': (string);
  'className': (string);
  'args': (Buffer);
  'options': (_clawray_v1_ActorOptions__Output | null);
  'jobId': (string);
  'ownerId': (string);
  'ownerActorId': (string);
  'ownerIncarnation': (number);
}
