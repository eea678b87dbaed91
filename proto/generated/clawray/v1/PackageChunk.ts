// Original file: proto/head.proto


export interface PackageChunk {
  'hash'?: (string);
  'data'?: (Buffer | Uint8Array | string);
  'sizeBytes'?: (number | string);
}

export interface PackageChunk__Output {
  'hash': (string);
  'data': (Buffer);
  'sizeBytes': (number);
}
