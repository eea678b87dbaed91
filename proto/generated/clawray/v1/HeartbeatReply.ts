// Original file: proto/head.proto


export interface HeartbeatReply {
  'known'?: (boolean);
  'reregister'?: (boolean);
}

export interface HeartbeatReply__Output {
  'known': (boolean);
  'reregister': (boolean);
}
