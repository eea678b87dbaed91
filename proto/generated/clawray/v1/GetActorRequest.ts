// Original file: proto/head.proto


export interface GetActorRequest {
  'actorId'?: (string);
  'name'?: (string);
  'namespace'?: (string);
}

export interface GetActorRequest__Output {
  'actorId': (string);
  'name': (string);
  'namespace': (string);
}
