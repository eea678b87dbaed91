// Original file: proto/head.proto


export interface JobRef {
  'submissionId'?: (string);
}

export interface JobRef__Output {
  'submissionId': (string);
}
