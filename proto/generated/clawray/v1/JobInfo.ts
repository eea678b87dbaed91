// Original file: proto/head.proto


export interface JobInfo {
  'submissionId'?: (string);
  'entrypoint'?: (string);
  'status'?: (string);
  'message'?: (string);
  'createdAtMs'?: (number | string);
  'startedAtMs'?: (number | string);
  'endedAtMs'?: (number | string);
  'workingDirHash'?: (string);
  'metadata'?: ({[key: string]: string});
  'supervisorActorId'?: (string);
  'hasExitCode'?: (boolean);
  'exitCode'?: (number);
  'pid'?: (number);
  'nodeId'?: (string);
  'attempt'?: (number);
  'maxRetries'?: (number);
  'stopGraceMs'?: (number | string);
  'info'?: ({[key: string]: string});
}

export interface JobInfo__Output {
  'submissionId': (string);
  'entrypoint': (string);
  'status': (string);
  'message': (string);
  'createdAtMs': (number);
  'startedAtMs': (number);
  'endedAtMs': (number);
  'workingDirHash': (string);
  'metadata': ({[key: string]: string});
  'supervisorActorId': (string);
  'hasExitCode': (boolean);
  'exitCode': (number);
  'pid': (number);
  'nodeId': (string);
  'attempt': (number);
  'maxRetries': (number);
  'stopGraceMs': (number);
  'info': ({[key: string]: string});
}
