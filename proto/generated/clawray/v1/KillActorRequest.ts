// Original file: proto/head.proto


export interface KillActorRequest {
  'actorId'?: (string);
  'noRestart'?: (boolean);
}

export interface KillActorRequest__Output {
  'actorId': (string);
  'noRestart': (boolean);
}
