// Original file: proto/head.proto

import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from '../../clawray/v1/Resources.js';
import type { GpuShare as _clawray_v1_GpuShare, GpuShare__Output as _clawray_v1_GpuShare__Output } from '../../clawray/v1/GpuShare.js';

export interface Bundle {
  'resources'?: (_clawray_v1_Resources | null);
  'nodeId'?: (string);
  'gpus'?: (_clawray_v1_GpuShare)[];
}

export interface Bundle__Output {
  'resources': (_clawray_v1_Resources__Output | null);
  'nodeId': (string);
  'gpus': (_clawray_v1_GpuShare__Output)[];
}
