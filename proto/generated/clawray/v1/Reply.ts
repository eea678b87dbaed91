// Original file: proto/actor.proto

import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from '../../clawray/v1/ErrorInfo.js';

export interface Reply {
  'callId'?: (number);
  'result'?: (Buffer | Uint8Array | string);
  'more'?: (boolean);
  'error'?: (_clawray_v1_ErrorInfo | null);
  'item'?: (boolean);
}

export interface Reply__Output {
  'callId': (number);
  'result': (Buffer);
  'more': (boolean);
  'error': (_clawray_v1_ErrorInfo__Output | null);
  'item': (boolean);
}
