// Original file: proto/head.proto


export interface UpdateJobRequest {
  'submissionId'?: (string);
  'status'?: (string);
  'message'?: (string);
  'hasExitCode'?: (boolean);
  'exitCode'?: (number);
  'pid'?: (number);
  'nodeId'?: (string);
  'attempt'?: (number);
  'restartable'?: (boolean);
}

export interface UpdateJobRequest__Output {
  'submissionId': (string);
  'status': (string);
  'message': (string);
  'hasExitCode': (boolean);
  'exitCode': (number);
  'pid': (number);
  'nodeId': (string);
  'attempt': (number);
  'restartable': (boolean);
}
