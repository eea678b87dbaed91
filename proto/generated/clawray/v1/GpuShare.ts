// Original file: proto/common.proto


export interface GpuShare {
  'gpuId'?: (number);
  'fraction'?: (number | string);
}

export interface GpuShare__Output {
  'gpuId': (number);
  'fraction': (number);
}
