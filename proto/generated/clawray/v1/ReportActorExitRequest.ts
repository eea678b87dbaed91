// Original file: proto/head.proto

import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from '../../clawray/v1/ErrorInfo.js';

export interface ReportActorExitRequest {
  'nodeId'?: (string);
  'actorId'?: (string);
  'incarnation'?: (number);
  'exitCode'?: (number);
  'signal'?: (string);
  'error'?: (_clawray_v1_ErrorInfo | null);
  'intended'?: (boolean);
}

export interface ReportActorExitRequest__Output {
  'nodeId': (string);
  'actorId': (string);
  'incarnation': (number);
  'exitCode': (number);
  'signal': (string);
  'error': (_clawray_v1_ErrorInfo__Output | null);
  'intended': (boolean);
}
