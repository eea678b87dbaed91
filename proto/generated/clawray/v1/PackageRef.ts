// Original file: proto/head.proto


export interface PackageRef {
  'hash'?: (string);
}

export interface PackageRef__Output {
  'hash': (string);
}
