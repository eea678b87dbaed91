// Original file: proto/head.proto


export interface DrainNodeRequest {
  'nodeId'?: (string);
  'reason'?: (string);
  'exiting'?: (boolean);
}

export interface DrainNodeRequest__Output {
  'nodeId': (string);
  'reason': (string);
  'exiting': (boolean);
}
