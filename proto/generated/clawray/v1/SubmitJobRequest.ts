// Original file: proto/head.proto


export interface SubmitJobRequest {
  'submissionId'?: (string);
  'entrypoint'?: (string);
  'workingDirHash'?: (string);
  'metadata'?: ({[key: string]: string});
  'maxRetries'?: (number);
  'stopGraceMs'?: (number | string);
}

export interface SubmitJobRequest__Output {
  'submissionId': (string);
  'entrypoint': (string);
  'workingDirHash': (string);
  'metadata': ({[key: string]: string});
  'maxRetries': (number);
  'stopGraceMs': (number);
}
