// Original file: proto/head.proto


export interface OwnerSessionRequest {
  'ownerId'?: (string);
  'pid'?: (number);
  'hostname'?: (string);
  'jobId'?: (string);
}

export interface OwnerSessionRequest__Output {
  'ownerId': (string);
  'pid': (number);
  'hostname': (string);
  'jobId': (string);
}
