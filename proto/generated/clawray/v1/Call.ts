// Original file: proto/actor.proto


export interface Call {
  'callId'?: (number);
  'method'?: (string);
  'args'?: (Buffer | Uint8Array | string);
  'more'?: (boolean);
}

export interface Call__Output {
  'callId': (number);
  'method': (string);
  'args': (Buffer);
  'more': (boolean);
}
