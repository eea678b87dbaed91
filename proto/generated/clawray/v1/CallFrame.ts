// Original file: proto/actor.proto

import type { Call as _clawray_v1_Call, Call__Output as _clawray_v1_Call__Output } from '../../clawray/v1/Call.js';

export interface CallFrame {
  'calls'?: (_clawray_v1_Call)[];
}

export interface CallFrame__Output {
  'calls': (_clawray_v1_Call__Output)[];
}
