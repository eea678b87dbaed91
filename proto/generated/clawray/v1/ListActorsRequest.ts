// Original file: proto/head.proto


export interface ListActorsRequest {
  'state'?: (string);
  'jobId'?: (string);
}

export interface ListActorsRequest__Output {
  'state': (string);
  'jobId': (string);
}
