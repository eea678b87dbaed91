// Original file: proto/head.proto

import type { JobInfo as _clawray_v1_JobInfo, JobInfo__Output as _clawray_v1_JobInfo__Output } from '../../clawray/v1/JobInfo.js';

export interface ListJobsReply {
  'jobs'?: (_clawray_v1_JobInfo)[];
}

export interface ListJobsReply__Output {
  'jobs': (_clawray_v1_JobInfo__Output)[];
}
