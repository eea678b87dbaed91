// Original file: proto/head.proto


export interface StoreJobLogRequest {
  'submissionId'?: (string);
  'attempt'?: (number);
  'data'?: (Buffer | Uint8Array | string);
  'cutAtBytes'?: (number | string);
  'sizeBytes'?: (number | string);
  'supervisorKey'?: (string);
}

export interface StoreJobLogRequest__Output {
  'submissionId': (string);
  'attempt': (number);
  'data': (Buffer);
  'cutAtBytes': (number);
  'sizeBytes': (number);
  'supervisorKey': (string);
}
