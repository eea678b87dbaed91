// Original file: proto/head.proto


export interface HasPackageReply {
  'exists'?: (boolean);
}

export interface HasPackageReply__Output {
  'exists': (boolean);
}
