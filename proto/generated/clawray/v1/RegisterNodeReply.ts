// Original file: proto/head.proto


export interface RegisterNodeReply {
  'nodeId'?: (string);
  'heartbeatIntervalMs'?: (number | string);
  'stopActorIds'?: (string)[];
}

export interface RegisterNodeReply__Output {
  'nodeId': (string);
  'heartbeatIntervalMs': (number);
  'stopActorIds': (string)[];
}
