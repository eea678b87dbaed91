// Original file: proto/head.proto


export interface GetJobLogsRequest {
  'submissionId'?: (string);
  'offset'?: (number | string);
}

export interface GetJobLogsRequest__Output {
  'submissionId': (string);
  'offset': (number);
}
