// Original file: proto/head.proto

import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from '../../clawray/v1/Resources.js';
import type { GpuShare as _clawray_v1_GpuShare, GpuShare__Output as _clawray_v1_GpuShare__Output } from '../../clawray/v1/GpuShare.js';

export interface NodeStatus {
  'nodeId'?: (string);
  'address'?: (string);
  'state'?: (string);
  'total'?: (_clawray_v1_Resources | null);
  'available'?: (_clawray_v1_Resources | null);
  'gpusAvailable'?: (_clawray_v1_GpuShare)[];
  'labels'?: ({[key: string]: string});
  'lastHeartbeatMs'?: (number | string);
  'hostname'?: (string);
}

export interface NodeStatus__Output {
  'nodeId': (string);
  'address': (string);
  'state': (string);
  'total': (_clawray_v1_Resources__Output | null);
  'available': (_clawray_v1_Resources__Output | null);
  'gpusAvailable': (_clawray_v1_GpuShare__Output)[];
  'labels': ({[key: string]: string});
  'lastHeartbeatMs': (number);
  'hostname': (string);
}
