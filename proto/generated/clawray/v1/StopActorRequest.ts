// Original file: proto/node.proto


export interface StopActorRequest {
  'actorId'?: (string);
  'graceful'?: (boolean);
}

export interface StopActorRequest__Output {
  'actorId': (string);
  'graceful': (boolean);
}
