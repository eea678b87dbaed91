// Original file: proto/head.proto


export interface RunningActor {
  'actorId'?: (string);
  'address'?: (string);
  'pid'?: (number);
  'incarnation'?: (number);
}

export interface RunningActor__Output {
  'actorId': (string);
  'address': (string);
  'pid': (number);
  'incarnation': (number);
}
