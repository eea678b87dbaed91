// Original file: proto/head.proto

import type { Bundle as _clawray_v1_Bundle, Bundle__Output as _clawray_v1_Bundle__Output } from '../../clawray/v1/Bundle.js';
import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from '../../clawray/v1/ErrorInfo.js';

export interface GroupPlan {
  'name'?: (string);
  'placed'?: (boolean);
  'bundles'?: (_clawray_v1_Bundle)[];
  'error'?: (_clawray_v1_ErrorInfo | null);
}

export interface GroupPlan__Output {
  'name': (string);
  'placed': (boolean);
  'bundles': (_clawray_v1_Bundle__Output)[];
  'error': (_clawray_v1_ErrorInfo__Output | null);
}
