// Original file: proto/actor.proto

import type { CallCancel as _clawray_v1_CallCancel, CallCancel__Output as _clawray_v1_CallCancel__Output } from '../../clawray/v1/CallCancel.js';

export interface Call {
  'callId'?: (number);
  'method'?: (string);
  'args'?: (Buffer | Uint8Array | string);
  'more'?: (boolean);
  'cancel'?: (_clawray_v1_CallCancel);
  'stream'?: (boolean);
  'credit'?: (number);
}

export interface Call__Output {
  'callId': (number);
  'method': (string);
  'args': (Buffer);
  'more': (boolean);
  'cancel': (_clawray_v1_CallCancel__Output);
  'stream': (boolean);
  'credit': (number);
}
