// Original file: proto/actor.proto

import type { Reply as _clawray_v1_Reply, Reply__Output as _clawray_v1_Reply__Output } from '../../clawray/v1/Reply.js';

export interface ReplyFrame {
  'replies'?: (_clawray_v1_Reply)[];
}

export interface ReplyFrame__Output {
  'replies': (_clawray_v1_Reply__Output)[];
}
