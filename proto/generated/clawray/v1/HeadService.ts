// Original file: proto/head.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ActorInfo as _clawray_v1_ActorInfo, ActorInfo__Output as _clawray_v1_ActorInfo__Output } from '../../clawray/v1/ActorInfo.js';
import type { CloseOwnerSessionReply as _clawray_v1_CloseOwnerSessionReply, CloseOwnerSessionReply__Output as _clawray_v1_CloseOwnerSessionReply__Output } from '../../clawray/v1/CloseOwnerSessionReply.js';
import type { ClusterStatus as _clawray_v1_ClusterStatus, ClusterStatus__Output as _clawray_v1_ClusterStatus__Output } from '../../clawray/v1/ClusterStatus.js';
import type { CreateActorRequest as _clawray_v1_CreateActorRequest, CreateActorRequest__Output as _clawray_v1_CreateActorRequest__Output } from '../../clawray/v1/CreateActorRequest.js';
import type { CreatePlacementGroupRequest as _clawray_v1_CreatePlacementGroupRequest, CreatePlacementGroupRequest__Output as _clawray_v1_CreatePlacementGroupRequest__Output } from '../../clawray/v1/CreatePlacementGroupRequest.js';
import type { DrainNodeRequest as _clawray_v1_DrainNodeRequest, DrainNodeRequest__Output as _clawray_v1_DrainNodeRequest__Output } from '../../clawray/v1/DrainNodeRequest.js';
import type { Empty as _clawray_v1_Empty, Empty__Output as _clawray_v1_Empty__Output } from '../../clawray/v1/Empty.js';
import type { GetActorRequest as _clawray_v1_GetActorRequest, GetActorRequest__Output as _clawray_v1_GetActorRequest__Output } from '../../clawray/v1/GetActorRequest.js';
import type { GetJobLogsRequest as _clawray_v1_GetJobLogsRequest, GetJobLogsRequest__Output as _clawray_v1_GetJobLogsRequest__Output } from '../../clawray/v1/GetJobLogsRequest.js';
import type { GetPlacementGroupRequest as _clawray_v1_GetPlacementGroupRequest, GetPlacementGroupRequest__Output as _clawray_v1_GetPlacementGroupRequest__Output } from '../../clawray/v1/GetPlacementGroupRequest.js';
import type { HasPackageReply as _clawray_v1_HasPackageReply, HasPackageReply__Output as _clawray_v1_HasPackageReply__Output } from '../../clawray/v1/HasPackageReply.js';
import type { HeartbeatReply as _clawray_v1_HeartbeatReply, HeartbeatReply__Output as _clawray_v1_HeartbeatReply__Output } from '../../clawray/v1/HeartbeatReply.js';
import type { HeartbeatRequest as _clawray_v1_HeartbeatRequest, HeartbeatRequest__Output as _clawray_v1_HeartbeatRequest__Output } from '../../clawray/v1/HeartbeatRequest.js';
import type { JobInfo as _clawray_v1_JobInfo, JobInfo__Output as _clawray_v1_JobInfo__Output } from '../../clawray/v1/JobInfo.js';
import type { JobLogChunk as _clawray_v1_JobLogChunk, JobLogChunk__Output as _clawray_v1_JobLogChunk__Output } from '../../clawray/v1/JobLogChunk.js';
import type { JobRef as _clawray_v1_JobRef, JobRef__Output as _clawray_v1_JobRef__Output } from '../../clawray/v1/JobRef.js';
import type { KillActorRequest as _clawray_v1_KillActorRequest, KillActorRequest__Output as _clawray_v1_KillActorRequest__Output } from '../../clawray/v1/KillActorRequest.js';
import type { ListActorsReply as _clawray_v1_ListActorsReply, ListActorsReply__Output as _clawray_v1_ListActorsReply__Output } from '../../clawray/v1/ListActorsReply.js';
import type { ListActorsRequest as _clawray_v1_ListActorsRequest, ListActorsRequest__Output as _clawray_v1_ListActorsRequest__Output } from '../../clawray/v1/ListActorsRequest.js';
import type { ListJobsReply as _clawray_v1_ListJobsReply, ListJobsReply__Output as _clawray_v1_ListJobsReply__Output } from '../../clawray/v1/ListJobsReply.js';
import type { ListPlacementGroupsReply as _clawray_v1_ListPlacementGroupsReply, ListPlacementGroupsReply__Output as _clawray_v1_ListPlacementGroupsReply__Output } from '../../clawray/v1/ListPlacementGroupsReply.js';
import type { OwnerEvent as _clawray_v1_OwnerEvent, OwnerEvent__Output as _clawray_v1_OwnerEvent__Output } from '../../clawray/v1/OwnerEvent.js';
import type { OwnerSessionRequest as _clawray_v1_OwnerSessionRequest, OwnerSessionRequest__Output as _clawray_v1_OwnerSessionRequest__Output } from '../../clawray/v1/OwnerSessionRequest.js';
import type { PackageChunk as _clawray_v1_PackageChunk, PackageChunk__Output as _clawray_v1_PackageChunk__Output } from '../../clawray/v1/PackageChunk.js';
import type { PackageRef as _clawray_v1_PackageRef, PackageRef__Output as _clawray_v1_PackageRef__Output } from '../../clawray/v1/PackageRef.js';
import type { PlacementGroupInfo as _clawray_v1_PlacementGroupInfo, PlacementGroupInfo__Output as _clawray_v1_PlacementGroupInfo__Output } from '../../clawray/v1/PlacementGroupInfo.js';
import type { PlanPlacementGroupsReply as _clawray_v1_PlanPlacementGroupsReply, PlanPlacementGroupsReply__Output as _clawray_v1_PlanPlacementGroupsReply__Output } from '../../clawray/v1/PlanPlacementGroupsReply.js';
import type { PlanPlacementGroupsRequest as _clawray_v1_PlanPlacementGroupsRequest, PlanPlacementGroupsRequest__Output as _clawray_v1_PlanPlacementGroupsRequest__Output } from '../../clawray/v1/PlanPlacementGroupsRequest.js';
import type { RegisterNodeReply as _clawray_v1_RegisterNodeReply, RegisterNodeReply__Output as _clawray_v1_RegisterNodeReply__Output } from '../../clawray/v1/RegisterNodeReply.js';
import type { RegisterNodeRequest as _clawray_v1_RegisterNodeRequest, RegisterNodeRequest__Output as _clawray_v1_RegisterNodeRequest__Output } from '../../clawray/v1/RegisterNodeRequest.js';
import type { RemovePlacementGroupRequest as _clawray_v1_RemovePlacementGroupRequest, RemovePlacementGroupRequest__Output as _clawray_v1_RemovePlacementGroupRequest__Output } from '../../clawray/v1/RemovePlacementGroupRequest.js';
import type { ReportActorExitRequest as _clawray_v1_ReportActorExitRequest, ReportActorExitRequest__Output as _clawray_v1_ReportActorExitRequest__Output } from '../../clawray/v1/ReportActorExitRequest.js';
import type { ReportJobInfoRequest as _clawray_v1_ReportJobInfoRequest, ReportJobInfoRequest__Output as _clawray_v1_ReportJobInfoRequest__Output } from '../../clawray/v1/ReportJobInfoRequest.js';
import type { StoreJobLogRequest as _clawray_v1_StoreJobLogRequest, StoreJobLogRequest__Output as _clawray_v1_StoreJobLogRequest__Output } from '../../clawray/v1/StoreJobLogRequest.js';
import type { SubmitJobRequest as _clawray_v1_SubmitJobRequest, SubmitJobRequest__Output as _clawray_v1_SubmitJobRequest__Output } from '../../clawray/v1/SubmitJobRequest.js';
import type { UpdateJobRequest as _clawray_v1_UpdateJobRequest, UpdateJobRequest__Output as _clawray_v1_UpdateJobRequest__Output } from '../../clawray/v1/UpdateJobRequest.js';

export interface HeadServiceClient extends grpc.Client {
  CloseOwnerSession(argument: _clawray_v1_OwnerSessionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  CloseOwnerSession(argument: _clawray_v1_OwnerSessionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  CloseOwnerSession(argument: _clawray_v1_OwnerSessionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  CloseOwnerSession(argument: _clawray_v1_OwnerSessionRequest, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  closeOwnerSession(argument: _clawray_v1_OwnerSessionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  closeOwnerSession(argument: _clawray_v1_OwnerSessionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  closeOwnerSession(argument: _clawray_v1_OwnerSessionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  closeOwnerSession(argument: _clawray_v1_OwnerSessionRequest, callback: grpc.requestCallback<_clawray_v1_CloseOwnerSessionReply__Output>): grpc.ClientUnaryCall;
  
  CreateActor(argument: _clawray_v1_CreateActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  CreateActor(argument: _clawray_v1_CreateActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  CreateActor(argument: _clawray_v1_CreateActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  CreateActor(argument: _clawray_v1_CreateActorRequest, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  createActor(argument: _clawray_v1_CreateActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  createActor(argument: _clawray_v1_CreateActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  createActor(argument: _clawray_v1_CreateActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  createActor(argument: _clawray_v1_CreateActorRequest, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  
  CreatePlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  CreatePlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  CreatePlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  CreatePlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  createPlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  createPlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  createPlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  createPlacementGroup(argument: _clawray_v1_CreatePlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  
  DeleteJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  DeleteJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  DeleteJob(argument: _clawray_v1_JobRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  DeleteJob(argument: _clawray_v1_JobRef, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  deleteJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  deleteJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  deleteJob(argument: _clawray_v1_JobRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  deleteJob(argument: _clawray_v1_JobRef, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  
  DownloadPackage(argument: _clawray_v1_PackageRef, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_PackageChunk__Output>;
  DownloadPackage(argument: _clawray_v1_PackageRef, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_PackageChunk__Output>;
  downloadPackage(argument: _clawray_v1_PackageRef, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_PackageChunk__Output>;
  downloadPackage(argument: _clawray_v1_PackageRef, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_PackageChunk__Output>;
  
  DrainNode(argument: _clawray_v1_DrainNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _clawray_v1_DrainNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _clawray_v1_DrainNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _clawray_v1_DrainNodeRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _clawray_v1_DrainNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _clawray_v1_DrainNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _clawray_v1_DrainNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _clawray_v1_DrainNodeRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  
  GetActor(argument: _clawray_v1_GetActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  GetActor(argument: _clawray_v1_GetActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  GetActor(argument: _clawray_v1_GetActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  GetActor(argument: _clawray_v1_GetActorRequest, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  getActor(argument: _clawray_v1_GetActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  getActor(argument: _clawray_v1_GetActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  getActor(argument: _clawray_v1_GetActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  getActor(argument: _clawray_v1_GetActorRequest, callback: grpc.requestCallback<_clawray_v1_ActorInfo__Output>): grpc.ClientUnaryCall;
  
  GetClusterStatus(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  
  GetJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _clawray_v1_JobRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _clawray_v1_JobRef, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  getJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  getJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  getJob(argument: _clawray_v1_JobRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  getJob(argument: _clawray_v1_JobRef, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  
  GetJobLogs(argument: _clawray_v1_GetJobLogsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  GetJobLogs(argument: _clawray_v1_GetJobLogsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  GetJobLogs(argument: _clawray_v1_GetJobLogsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  GetJobLogs(argument: _clawray_v1_GetJobLogsRequest, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  getJobLogs(argument: _clawray_v1_GetJobLogsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  getJobLogs(argument: _clawray_v1_GetJobLogsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  getJobLogs(argument: _clawray_v1_GetJobLogsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  getJobLogs(argument: _clawray_v1_GetJobLogsRequest, callback: grpc.requestCallback<_clawray_v1_JobLogChunk__Output>): grpc.ClientUnaryCall;
  
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  
  HasPackage(argument: _clawray_v1_PackageRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  HasPackage(argument: _clawray_v1_PackageRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  HasPackage(argument: _clawray_v1_PackageRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  HasPackage(argument: _clawray_v1_PackageRef, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  hasPackage(argument: _clawray_v1_PackageRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  hasPackage(argument: _clawray_v1_PackageRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  hasPackage(argument: _clawray_v1_PackageRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  hasPackage(argument: _clawray_v1_PackageRef, callback: grpc.requestCallback<_clawray_v1_HasPackageReply__Output>): grpc.ClientUnaryCall;
  
  Heartbeat(argument: _clawray_v1_HeartbeatRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  Heartbeat(argument: _clawray_v1_HeartbeatRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  Heartbeat(argument: _clawray_v1_HeartbeatRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  Heartbeat(argument: _clawray_v1_HeartbeatRequest, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _clawray_v1_HeartbeatRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _clawray_v1_HeartbeatRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _clawray_v1_HeartbeatRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _clawray_v1_HeartbeatRequest, callback: grpc.requestCallback<_clawray_v1_HeartbeatReply__Output>): grpc.ClientUnaryCall;
  
  KillActor(argument: _clawray_v1_KillActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  KillActor(argument: _clawray_v1_KillActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  KillActor(argument: _clawray_v1_KillActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  KillActor(argument: _clawray_v1_KillActorRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  killActor(argument: _clawray_v1_KillActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  killActor(argument: _clawray_v1_KillActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  killActor(argument: _clawray_v1_KillActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  killActor(argument: _clawray_v1_KillActorRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  
  ListActors(argument: _clawray_v1_ListActorsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  ListActors(argument: _clawray_v1_ListActorsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  ListActors(argument: _clawray_v1_ListActorsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  ListActors(argument: _clawray_v1_ListActorsRequest, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  listActors(argument: _clawray_v1_ListActorsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  listActors(argument: _clawray_v1_ListActorsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  listActors(argument: _clawray_v1_ListActorsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  listActors(argument: _clawray_v1_ListActorsRequest, callback: grpc.requestCallback<_clawray_v1_ListActorsReply__Output>): grpc.ClientUnaryCall;
  
  ListJobs(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ListJobsReply__Output>): grpc.ClientUnaryCall;
  
  ListPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  ListPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  ListPlacementGroups(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  ListPlacementGroups(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  
  OpenOwnerSession(argument: _clawray_v1_OwnerSessionRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_OwnerEvent__Output>;
  OpenOwnerSession(argument: _clawray_v1_OwnerSessionRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_OwnerEvent__Output>;
  openOwnerSession(argument: _clawray_v1_OwnerSessionRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_OwnerEvent__Output>;
  openOwnerSession(argument: _clawray_v1_OwnerSessionRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_clawray_v1_OwnerEvent__Output>;
  
  PlanPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  PlanPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  PlanPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  PlanPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  planPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  planPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  planPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  planPlacementGroups(argument: _clawray_v1_PlanPlacementGroupsRequest, callback: grpc.requestCallback<_clawray_v1_PlanPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  
  RegisterNode(argument: _clawray_v1_RegisterNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  RegisterNode(argument: _clawray_v1_RegisterNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  RegisterNode(argument: _clawray_v1_RegisterNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  RegisterNode(argument: _clawray_v1_RegisterNodeRequest, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  registerNode(argument: _clawray_v1_RegisterNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  registerNode(argument: _clawray_v1_RegisterNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  registerNode(argument: _clawray_v1_RegisterNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  registerNode(argument: _clawray_v1_RegisterNodeRequest, callback: grpc.requestCallback<_clawray_v1_RegisterNodeReply__Output>): grpc.ClientUnaryCall;
  
  RemovePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  RemovePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  RemovePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  RemovePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  removePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  removePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  removePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  removePlacementGroup(argument: _clawray_v1_RemovePlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  
  ReportActorExit(argument: _clawray_v1_ReportActorExitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  ReportActorExit(argument: _clawray_v1_ReportActorExitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  ReportActorExit(argument: _clawray_v1_ReportActorExitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  ReportActorExit(argument: _clawray_v1_ReportActorExitRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  reportActorExit(argument: _clawray_v1_ReportActorExitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  reportActorExit(argument: _clawray_v1_ReportActorExitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  reportActorExit(argument: _clawray_v1_ReportActorExitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  reportActorExit(argument: _clawray_v1_ReportActorExitRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  
  ReportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  ReportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  ReportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  ReportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  reportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  reportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  reportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  reportJobInfo(argument: _clawray_v1_ReportJobInfoRequest, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  
  StopJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  StopJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  StopJob(argument: _clawray_v1_JobRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  StopJob(argument: _clawray_v1_JobRef, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  stopJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  stopJob(argument: _clawray_v1_JobRef, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  stopJob(argument: _clawray_v1_JobRef, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  stopJob(argument: _clawray_v1_JobRef, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  
  StoreJobLog(argument: _clawray_v1_StoreJobLogRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  StoreJobLog(argument: _clawray_v1_StoreJobLogRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  StoreJobLog(argument: _clawray_v1_StoreJobLogRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  StoreJobLog(argument: _clawray_v1_StoreJobLogRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  storeJobLog(argument: _clawray_v1_StoreJobLogRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  storeJobLog(argument: _clawray_v1_StoreJobLogRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  storeJobLog(argument: _clawray_v1_StoreJobLogRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  storeJobLog(argument: _clawray_v1_StoreJobLogRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  
  SubmitJob(argument: _clawray_v1_SubmitJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _clawray_v1_SubmitJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _clawray_v1_SubmitJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _clawray_v1_SubmitJobRequest, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _clawray_v1_SubmitJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _clawray_v1_SubmitJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _clawray_v1_SubmitJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _clawray_v1_SubmitJobRequest, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  
  UpdateJob(argument: _clawray_v1_UpdateJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  UpdateJob(argument: _clawray_v1_UpdateJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  UpdateJob(argument: _clawray_v1_UpdateJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  UpdateJob(argument: _clawray_v1_UpdateJobRequest, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  updateJob(argument: _clawray_v1_UpdateJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  updateJob(argument: _clawray_v1_UpdateJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  updateJob(argument: _clawray_v1_UpdateJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  updateJob(argument: _clawray_v1_UpdateJobRequest, callback: grpc.requestCallback<_clawray_v1_JobInfo__Output>): grpc.ClientUnaryCall;
  
  UploadPackage(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  UploadPackage(metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  UploadPackage(options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  UploadPackage(callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  uploadPackage(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  uploadPackage(metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  uploadPackage(options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  uploadPackage(callback: grpc.requestCallback<_clawray_v1_PackageRef__Output>): grpc.ClientWritableStream<_clawray_v1_PackageChunk>;
  
}

export interface HeadServiceHandlers extends grpc.UntypedServiceImplementation {
  CloseOwnerSession: grpc.handleUnaryCall<_clawray_v1_OwnerSessionRequest__Output, _clawray_v1_CloseOwnerSessionReply>;
  
  CreateActor: grpc.handleUnaryCall<_clawray_v1_CreateActorRequest__Output, _clawray_v1_ActorInfo>;
  
  CreatePlacementGroup: grpc.handleUnaryCall<_clawray_v1_CreatePlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo>;
  
  DeleteJob: grpc.handleUnaryCall<_clawray_v1_JobRef__Output, _clawray_v1_Empty>;
  
  DownloadPackage: grpc.handleServerStreamingCall<_clawray_v1_PackageRef__Output, _clawray_v1_PackageChunk>;
  
  DrainNode: grpc.handleUnaryCall<_clawray_v1_DrainNodeRequest__Output, _clawray_v1_Empty>;
  
  GetActor: grpc.handleUnaryCall<_clawray_v1_GetActorRequest__Output, _clawray_v1_ActorInfo>;
  
  GetClusterStatus: grpc.handleUnaryCall<_clawray_v1_Empty__Output, _clawray_v1_ClusterStatus>;
  
  GetJob: grpc.handleUnaryCall<_clawray_v1_JobRef__Output, _clawray_v1_JobInfo>;
  
  GetJobLogs: grpc.handleUnaryCall<_clawray_v1_GetJobLogsRequest__Output, _clawray_v1_JobLogChunk>;
  
  GetPlacementGroup: grpc.handleUnaryCall<_clawray_v1_GetPlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo>;
  
  HasPackage: grpc.handleUnaryCall<_clawray_v1_PackageRef__Output, _clawray_v1_HasPackageReply>;
  
  Heartbeat: grpc.handleUnaryCall<_clawray_v1_HeartbeatRequest__Output, _clawray_v1_HeartbeatReply>;
  
  KillActor: grpc.handleUnaryCall<_clawray_v1_KillActorRequest__Output, _clawray_v1_Empty>;
  
  ListActors: grpc.handleUnaryCall<_clawray_v1_ListActorsRequest__Output, _clawray_v1_ListActorsReply>;
  
  ListJobs: grpc.handleUnaryCall<_clawray_v1_Empty__Output, _clawray_v1_ListJobsReply>;
  
  ListPlacementGroups: grpc.handleUnaryCall<_clawray_v1_Empty__Output, _clawray_v1_ListPlacementGroupsReply>;
  
  OpenOwnerSession: grpc.handleServerStreamingCall<_clawray_v1_OwnerSessionRequest__Output, _clawray_v1_OwnerEvent>;
  
  PlanPlacementGroups: grpc.handleUnaryCall<_clawray_v1_PlanPlacementGroupsRequest__Output, _clawray_v1_PlanPlacementGroupsReply>;
  
  RegisterNode: grpc.handleUnaryCall<_clawray_v1_RegisterNodeRequest__Output, _clawray_v1_RegisterNodeReply>;
  
  RemovePlacementGroup: grpc.handleUnaryCall<_clawray_v1_RemovePlacementGroupRequest__Output, _clawray_v1_Empty>;
  
  ReportActorExit: grpc.handleUnaryCall<_clawray_v1_ReportActorExitRequest__Output, _clawray_v1_Empty>;
  
  ReportJobInfo: grpc.handleUnaryCall<_clawray_v1_ReportJobInfoRequest__Output, _clawray_v1_JobInfo>;
  
  StopJob: grpc.handleUnaryCall<_clawray_v1_JobRef__Output, _clawray_v1_JobInfo>;
  
  StoreJobLog: grpc.handleUnaryCall<_clawray_v1_StoreJobLogRequest__Output, _clawray_v1_Empty>;
  
  SubmitJob: grpc.handleUnaryCall<_clawray_v1_SubmitJobRequest__Output, _clawray_v1_JobInfo>;
  
  UpdateJob: grpc.handleUnaryCall<_clawray_v1_UpdateJobRequest__Output, _clawray_v1_JobInfo>;
  
  UploadPackage: grpc.handleClientStreamingCall<_clawray_v1_PackageChunk__Output, _clawray_v1_PackageRef>;
  
}

export interface HeadServiceDefinition extends grpc.ServiceDefinition {
  CloseOwnerSession: MethodDefinition<_clawray_v1_OwnerSessionRequest, _clawray_v1_CloseOwnerSessionReply, _clawray_v1_OwnerSessionRequest__Output, _clawray_v1_CloseOwnerSessionReply__Output>
  CreateActor: MethodDefinition<_clawray_v1_CreateActorRequest, _clawray_v1_ActorInfo, _clawray_v1_CreateActorRequest__Output, _clawray_v1_ActorInfo__Output>
  CreatePlacementGroup: MethodDefinition<_clawray_v1_CreatePlacementGroupRequest, _clawray_v1_PlacementGroupInfo, _clawray_v1_CreatePlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo__Output>
  DeleteJob: MethodDefinition<_clawray_v1_JobRef, _clawray_v1_Empty, _clawray_v1_JobRef__Output, _clawray_v1_Empty__Output>
  DownloadPackage: MethodDefinition<_clawray_v1_PackageRef, _clawray_v1_PackageChunk, _clawray_v1_PackageRef__Output, _clawray_v1_PackageChunk__Output>
  DrainNode: MethodDefinition<_clawray_v1_DrainNodeRequest, _clawray_v1_Empty, _clawray_v1_DrainNodeRequest__Output, _clawray_v1_Empty__Output>
  GetActor: MethodDefinition<_clawray_v1_GetActorRequest, _clawray_v1_ActorInfo, _clawray_v1_GetActorRequest__Output, _clawray_v1_ActorInfo__Output>
  GetClusterStatus: MethodDefinition<_clawray_v1_Empty, _clawray_v1_ClusterStatus, _clawray_v1_Empty__Output, _clawray_v1_ClusterStatus__Output>
  GetJob: MethodDefinition<_clawray_v1_JobRef, _clawray_v1_JobInfo, _clawray_v1_JobRef__Output, _clawray_v1_JobInfo__Output>
  GetJobLogs: MethodDefinition<_clawray_v1_GetJobLogsRequest, _clawray_v1_JobLogChunk, _clawray_v1_GetJobLogsRequest__Output, _clawray_v1_JobLogChunk__Output>
  GetPlacementGroup: MethodDefinition<_clawray_v1_GetPlacementGroupRequest, _clawray_v1_PlacementGroupInfo, _clawray_v1_GetPlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo__Output>
  HasPackage: MethodDefinition<_clawray_v1_PackageRef, _clawray_v1_HasPackageReply, _clawray_v1_PackageRef__Output, _clawray_v1_HasPackageReply__Output>
  Heartbeat: MethodDefinition<_clawray_v1_HeartbeatRequest, _clawray_v1_HeartbeatReply, _clawray_v1_HeartbeatRequest__Output, _clawray_v1_HeartbeatReply__Output>
  KillActor: MethodDefinition<_clawray_v1_KillActorRequest, _clawray_v1_Empty, _clawray_v1_KillActorRequest__Output, _clawray_v1_Empty__Output>
  ListActors: MethodDefinition<_clawray_v1_ListActorsRequest, _clawray_v1_ListActorsReply, _clawray_v1_ListActorsRequest__Output, _clawray_v1_ListActorsReply__Output>
  ListJobs: MethodDefinition<_clawray_v1_Empty, _clawray_v1_ListJobsReply, _clawray_v1_Empty__Output, _clawray_v1_ListJobsReply__Output>
  ListPlacementGroups: MethodDefinition<_clawray_v1_Empty, _clawray_v1_ListPlacementGroupsReply, _clawray_v1_Empty__Output, _clawray_v1_ListPlacementGroupsReply__Output>
  OpenOwnerSession: MethodDefinition<_clawray_v1_OwnerSessionRequest, _clawray_v1_OwnerEvent, _clawray_v1_OwnerSessionRequest__Output, _clawray_v1_OwnerEvent__Output>
  PlanPlacementGroups: MethodDefinition<_clawray_v1_PlanPlacementGroupsRequest, _clawray_v1_PlanPlacementGroupsReply, _clawray_v1_PlanPlacementGroupsRequest__Output, _clawray_v1_PlanPlacementGroupsReply__Output>
  RegisterNode: MethodDefinition<_clawray_v1_RegisterNodeRequest, _clawray_v1_RegisterNodeReply, _clawray_v1_RegisterNodeRequest__Output, _clawray_v1_RegisterNodeReply__Output>
  RemovePlacementGroup: MethodDefinition<_clawray_v1_RemovePlacementGroupRequest, _clawray_v1_Empty, _clawray_v1_RemovePlacementGroupRequest__Output, _clawray_v1_Empty__Output>
  ReportActorExit: MethodDefinition<_clawray_v1_ReportActorExitRequest, _clawray_v1_Empty, _clawray_v1_ReportActorExitRequest__Output, _clawray_v1_Empty__Output>
  ReportJobInfo: MethodDefinition<_clawray_v1_ReportJobInfoRequest, _clawray_v1_JobInfo, _clawray_v1_ReportJobInfoRequest__Output, _clawray_v1_JobInfo__Output>
  StopJob: MethodDefinition<_clawray_v1_JobRef, _clawray_v1_JobInfo, _clawray_v1_JobRef__Output, _clawray_v1_JobInfo__Output>
  StoreJobLog: MethodDefinition<_clawray_v1_StoreJobLogRequest, _clawray_v1_Empty, _clawray_v1_StoreJobLogRequest__Output, _clawray_v1_Empty__Output>
  SubmitJob: MethodDefinition<_clawray_v1_SubmitJobRequest, _clawray_v1_JobInfo, _clawray_v1_SubmitJobRequest__Output, _clawray_v1_JobInfo__Output>
  UpdateJob: MethodDefinition<_clawray_v1_UpdateJobRequest, _clawray_v1_JobInfo, _clawray_v1_UpdateJobRequest__Output, _clawray_v1_JobInfo__Output>
  UploadPackage: MethodDefinition<_clawray_v1_PackageChunk, _clawray_v1_PackageRef, _clawray_v1_PackageChunk__Output, _clawray_v1_PackageRef__Output>
}
