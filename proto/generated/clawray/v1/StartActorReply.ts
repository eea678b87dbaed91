// Original file: proto/node.proto


export interface StartActorReply {
  'address'?: (string);
  'pid'?: (number);
}

export interface StartActorReply__Output {
  'address': (string);
  'pid': (number);
}
