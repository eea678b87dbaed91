// Original file: proto/common.proto


export interface Resources {
  'numCpus'?: (number | string);
  'numGpus'?: (number | string);
  'memoryMb'?: (number | string);
  'custom'?: ({[key: string]: number | string});
}

export interface Resources__Output {
  'numCpus': (number);
  'numGpus': (number);
  'memoryMb': (number);
  'custom': ({[key: string]: number});
}
