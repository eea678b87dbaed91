// Original file: proto/head.proto


export interface ReportJobInfoRequest {
  'submissionId'?: (string);
  'attempt'?: (number);
  'info'?: ({[key: string]: string});
}

export interface ReportJobInfoRequest__Output {
  'submissionId': (string);
  'attempt': (number);
  'info': ({[key: string]: string});
}
