// Original file: proto/head.proto


export interface SubmitJobRequest {
  'submissionId'?: (string);
  'entrypoint'?: (string);
  'workingDirHash'?: (string);
  'metadata'?: ({[key: string]: string});
  'manifest'?: (string);
  'manifestFile'?: (string);
  'manifestSet'?: (string)[];
}

export interface SubmitJobRequest__Output {
  'submissionId': (string);
  'entrypoint': (string);
  'workingDirHash': (string);
  'metadata': ({[key: string]: string});
  'manifest': (string);
  'manifestFile': (string);
  'manifestSet': (string)[];
}
