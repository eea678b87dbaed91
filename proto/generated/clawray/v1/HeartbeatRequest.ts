// Original file: proto/head.proto


export interface HeartbeatRequest {
  'nodeId'?: (string);
  'numActors'?: (number);
}

export interface HeartbeatRequest__Output {
  'nodeId': (string);
  'numActors': (number);
}
