// Original file: proto/common.proto

import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from '../../clawray/v1/ErrorInfo.js';

export interface ErrorInfo {
  'name'?: (string);
  'message'?: (string);
  'stack'?: (string);
  'fieldsJson'?: (string);
  'cause'?: (_clawray_v1_ErrorInfo | null);
  'retryable'?: (boolean);
  'ancestors'?: (string)[];
}

export interface ErrorInfo__Output {
  'name': (string);
  'message': (string);
  'stack': (string);
  'fieldsJson': (string);
  'cause': (_clawray_v1_ErrorInfo__Output | null);
  'retryable': (boolean);
  'ancestors': (string)[];
}
