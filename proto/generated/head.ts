import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ActorInfo as _clawray_v1_ActorInfo, ActorInfo__Output as _clawray_v1_ActorInfo__Output } from './clawray/v1/ActorInfo.js';
import type { ActorOptions as _clawray_v1_ActorOptions, ActorOptions__Output as _clawray_v1_ActorOptions__Output } from './clawray/v1/ActorOptions.js';
import type { ActorSpec as _clawray_v1_ActorSpec, ActorSpec__Output as _clawray_v1_ActorSpec__Output } from './clawray/v1/ActorSpec.js';
import type { Bundle as _clawray_v1_Bundle, Bundle__Output as _clawray_v1_Bundle__Output } from './clawray/v1/Bundle.js';
import type { CloseOwnerSessionReply as _clawray_v1_CloseOwnerSessionReply, CloseOwnerSessionReply__Output as _clawray_v1_CloseOwnerSessionReply__Output } from './clawray/v1/CloseOwnerSessionReply.js';
import type { ClusterStatus as _clawray_v1_ClusterStatus, ClusterStatus__Output as _clawray_v1_ClusterStatus__Output } from './clawray/v1/ClusterStatus.js';
import type { CreateActorRequest as _clawray_v1_CreateActorRequest, CreateActorRequest__Output as _clawray_v1_CreateActorRequest__Output } from './clawray/v1/CreateActorRequest.js';
import type { CreatePlacementGroupRequest as _clawray_v1_CreatePlacementGroupRequest, CreatePlacementGroupRequest__Output as _clawray_v1_CreatePlacementGroupRequest__Output } from './clawray/v1/CreatePlacementGroupRequest.js';
import type { DrainNodeRequest as _clawray_v1_DrainNodeRequest, DrainNodeRequest__Output as _clawray_v1_DrainNodeRequest__Output } from './clawray/v1/DrainNodeRequest.js';
import type { Empty as _clawray_v1_Empty, Empty__Output as _clawray_v1_Empty__Output } from './clawray/v1/Empty.js';
import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from './clawray/v1/ErrorInfo.js';
import type { GetActorRequest as _clawray_v1_GetActorRequest, GetActorRequest__Output as _clawray_v1_GetActorRequest__Output } from './clawray/v1/GetActorRequest.js';
import type { GetJobLogsRequest as _clawray_v1_GetJobLogsRequest, GetJobLogsRequest__Output as _clawray_v1_GetJobLogsRequest__Output } from './clawray/v1/GetJobLogsRequest.js';
import type { GetPlacementGroupRequest as _clawray_v1_GetPlacementGroupRequest, GetPlacementGroupRequest__Output as _clawray_v1_GetPlacementGroupRequest__Output } from './clawray/v1/GetPlacementGroupRequest.js';
import type { GpuShare as _clawray_v1_GpuShare, GpuShare__Output as _clawray_v1_GpuShare__Output } from './clawray/v1/GpuShare.js';
import type { GroupPlan as _clawray_v1_GroupPlan, GroupPlan__Output as _clawray_v1_GroupPlan__Output } from './clawray/v1/GroupPlan.js';
import type { HasPackageReply as _clawray_v1_HasPackageReply, HasPackageReply__Output as _clawray_v1_HasPackageReply__Output } from './clawray/v1/HasPackageReply.js';
import type { HeadServiceClient as _clawray_v1_HeadServiceClient, HeadServiceDefinition as _clawray_v1_HeadServiceDefinition } from './clawray/v1/HeadService.js';
import type { HeartbeatReply as _clawray_v1_HeartbeatReply, HeartbeatReply__Output as _clawray_v1_HeartbeatReply__Output } from './clawray/v1/HeartbeatReply.js';
import type { HeartbeatRequest as _clawray_v1_HeartbeatRequest, HeartbeatRequest__Output as _clawray_v1_HeartbeatRequest__Output } from './clawray/v1/HeartbeatRequest.js';
import type { JobInfo as _clawray_v1_JobInfo, JobInfo__Output as _clawray_v1_JobInfo__Output } from './clawray/v1/JobInfo.js';
import type { JobLogChunk as _clawray_v1_JobLogChunk, JobLogChunk__Output as _clawray_v1_JobLogChunk__Output } from './clawray/v1/JobLogChunk.js';
import type { JobRef as _clawray_v1_JobRef, JobRef__Output as _clawray_v1_JobRef__Output } from './clawray/v1/JobRef.js';
import type { KillActorRequest as _clawray_v1_KillActorRequest, KillActorRequest__Output as _clawray_v1_KillActorRequest__Output } from './clawray/v1/KillActorRequest.js';
import type { ListActorsReply as _clawray_v1_ListActorsReply, ListActorsReply__Output as _clawray_v1_ListActorsReply__Output } from './clawray/v1/ListActorsReply.js';
import type { ListActorsRequest as _clawray_v1_ListActorsRequest, ListActorsRequest__Output as _clawray_v1_ListActorsRequest__Output } from './clawray/v1/ListActorsRequest.js';
import type { ListJobsReply as _clawray_v1_ListJobsReply, ListJobsReply__Output as _clawray_v1_ListJobsReply__Output } from './clawray/v1/ListJobsReply.js';
import type { ListPlacementGroupsReply as _clawray_v1_ListPlacementGroupsReply, ListPlacementGroupsReply__Output as _clawray_v1_ListPlacementGroupsReply__Output } from './clawray/v1/ListPlacementGroupsReply.js';
import type { NodeStatus as _clawray_v1_NodeStatus, NodeStatus__Output as _clawray_v1_NodeStatus__Output } from './clawray/v1/NodeStatus.js';
import type { OwnerEvent as _clawray_v1_OwnerEvent, OwnerEvent__Output as _clawray_v1_OwnerEvent__Output } from './clawray/v1/OwnerEvent.js';
import type { OwnerSessionRequest as _clawray_v1_OwnerSessionRequest, OwnerSessionRequest__Output as _clawray_v1_OwnerSessionRequest__Output } from './clawray/v1/OwnerSessionRequest.js';
import type { PackageChunk as _clawray_v1_PackageChunk, PackageChunk__Output as _clawray_v1_PackageChunk__Output } from './clawray/v1/PackageChunk.js';
import type { PackageRef as _clawray_v1_PackageRef, PackageRef__Output as _clawray_v1_PackageRef__Output } from './clawray/v1/PackageRef.js';
import type { PendingDemand as _clawray_v1_PendingDemand, PendingDemand__Output as _clawray_v1_PendingDemand__Output } from './clawray/v1/PendingDemand.js';
import type { PlacementGroupAsk as _clawray_v1_PlacementGroupAsk, PlacementGroupAsk__Output as _clawray_v1_PlacementGroupAsk__Output } from './clawray/v1/PlacementGroupAsk.js';
import type { PlacementGroupInfo as _clawray_v1_PlacementGroupInfo, PlacementGroupInfo__Output as _clawray_v1_PlacementGroupInfo__Output } from './clawray/v1/PlacementGroupInfo.js';
import type { PlacementPlan as _clawray_v1_PlacementPlan, PlacementPlan__Output as _clawray_v1_PlacementPlan__Output } from './clawray/v1/PlacementPlan.js';
import type { PlanPlacementGroupsReply as _clawray_v1_PlanPlacementGroupsReply, PlanPlacementGroupsReply__Output as _clawray_v1_PlanPlacementGroupsReply__Output } from './clawray/v1/PlanPlacementGroupsReply.js';
import type { PlanPlacementGroupsRequest as _clawray_v1_PlanPlacementGroupsRequest, PlanPlacementGroupsRequest__Output as _clawray_v1_PlanPlacementGroupsRequest__Output } from './clawray/v1/PlanPlacementGroupsRequest.js';
import type { RegisterNodeReply as _clawray_v1_RegisterNodeReply, RegisterNodeReply__Output as _clawray_v1_RegisterNodeReply__Output } from './clawray/v1/RegisterNodeReply.js';
import type { RegisterNodeRequest as _clawray_v1_RegisterNodeRequest, RegisterNodeRequest__Output as _clawray_v1_RegisterNodeRequest__Output } from './clawray/v1/RegisterNodeRequest.js';
import type { RemovePlacementGroupRequest as _clawray_v1_RemovePlacementGroupRequest, RemovePlacementGroupRequest__Output as _clawray_v1_RemovePlacementGroupRequest__Output } from './clawray/v1/RemovePlacementGroupRequest.js';
import type { ReportActorExitRequest as _clawray_v1_ReportActorExitRequest, ReportActorExitRequest__Output as _clawray_v1_ReportActorExitRequest__Output } from './clawray/v1/ReportActorExitRequest.js';
import type { ReportJobInfoRequest as _clawray_v1_ReportJobInfoRequest, ReportJobInfoRequest__Output as _clawray_v1_ReportJobInfoRequest__Output } from './clawray/v1/ReportJobInfoRequest.js';
import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from './clawray/v1/Resources.js';
import type { RunningActor as _clawray_v1_RunningActor, RunningActor__Output as _clawray_v1_RunningActor__Output } from './clawray/v1/RunningActor.js';
import type { StoreJobLogRequest as _clawray_v1_StoreJobLogRequest, StoreJobLogRequest__Output as _clawray_v1_StoreJobLogRequest__Output } from './clawray/v1/StoreJobLogRequest.js';
import type { SubmitJobRequest as _clawray_v1_SubmitJobRequest, SubmitJobRequest__Output as _clawray_v1_SubmitJobRequest__Output } from './clawray/v1/SubmitJobRequest.js';
import type { UpdateJobRequest as _clawray_v1_UpdateJobRequest, UpdateJobRequest__Output as _clawray_v1_UpdateJobRequest__Output } from './clawray/v1/UpdateJobRequest.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  clawray: {
    v1: {
      ActorInfo: MessageTypeDefinition<_clawray_v1_ActorInfo, _clawray_v1_ActorInfo__Output>
      ActorOptions: MessageTypeDefinition<_clawray_v1_ActorOptions, _clawray_v1_ActorOptions__Output>
      ActorSpec: MessageTypeDefinition<_clawray_v1_ActorSpec, _clawray_v1_ActorSpec__Output>
      ActorState: EnumTypeDefinition
      Bundle: MessageTypeDefinition<_clawray_v1_Bundle, _clawray_v1_Bundle__Output>
      CloseOwnerSessionReply: MessageTypeDefinition<_clawray_v1_CloseOwnerSessionReply, _clawray_v1_CloseOwnerSessionReply__Output>
      ClusterStatus: MessageTypeDefinition<_clawray_v1_ClusterStatus, _clawray_v1_ClusterStatus__Output>
      CreateActorRequest: MessageTypeDefinition<_clawray_v1_CreateActorRequest, _clawray_v1_CreateActorRequest__Output>
      CreatePlacementGroupRequest: MessageTypeDefinition<_clawray_v1_CreatePlacementGroupRequest, _clawray_v1_CreatePlacementGroupRequest__Output>
      DrainNodeRequest: MessageTypeDefinition<_clawray_v1_DrainNodeRequest, _clawray_v1_DrainNodeRequest__Output>
      Empty: MessageTypeDefinition<_clawray_v1_Empty, _clawray_v1_Empty__Output>
      ErrorInfo: MessageTypeDefinition<_clawray_v1_ErrorInfo, _clawray_v1_ErrorInfo__Output>
      GetActorRequest: MessageTypeDefinition<_clawray_v1_GetActorRequest, _clawray_v1_GetActorRequest__Output>
      GetJobLogsRequest: MessageTypeDefinition<_clawray_v1_GetJobLogsRequest, _clawray_v1_GetJobLogsRequest__Output>
      GetPlacementGroupRequest: MessageTypeDefinition<_clawray_v1_GetPlacementGroupRequest, _clawray_v1_GetPlacementGroupRequest__Output>
      GpuShare: MessageTypeDefinition<_clawray_v1_GpuShare, _clawray_v1_GpuShare__Output>
      GroupPlan: MessageTypeDefinition<_clawray_v1_GroupPlan, _clawray_v1_GroupPlan__Output>
      HasPackageReply: MessageTypeDefinition<_clawray_v1_HasPackageReply, _clawray_v1_HasPackageReply__Output>
      HeadService: SubtypeConstructor<typeof grpc.Client, _clawray_v1_HeadServiceClient> & { service: _clawray_v1_HeadServiceDefinition }
      HeartbeatReply: MessageTypeDefinition<_clawray_v1_HeartbeatReply, _clawray_v1_HeartbeatReply__Output>
      HeartbeatRequest: MessageTypeDefinition<_clawray_v1_HeartbeatRequest, _clawray_v1_HeartbeatRequest__Output>
      JobInfo: MessageTypeDefinition<_clawray_v1_JobInfo, _clawray_v1_JobInfo__Output>
      JobLogChunk: MessageTypeDefinition<_clawray_v1_JobLogChunk, _clawray_v1_JobLogChunk__Output>
      JobRef: MessageTypeDefinition<_clawray_v1_JobRef, _clawray_v1_JobRef__Output>
      KillActorRequest: MessageTypeDefinition<_clawray_v1_KillActorRequest, _clawray_v1_KillActorRequest__Output>
      ListActorsReply: MessageTypeDefinition<_clawray_v1_ListActorsReply, _clawray_v1_ListActorsReply__Output>
      ListActorsRequest: MessageTypeDefinition<_clawray_v1_ListActorsRequest, _clawray_v1_ListActorsRequest__Output>
      ListJobsReply: MessageTypeDefinition<_clawray_v1_ListJobsReply, _clawray_v1_ListJobsReply__Output>
      ListPlacementGroupsReply: MessageTypeDefinition<_clawray_v1_ListPlacementGroupsReply, _clawray_v1_ListPlacementGroupsReply__Output>
      NodeStatus: MessageTypeDefinition<_clawray_v1_NodeStatus, _clawray_v1_NodeStatus__Output>
      OwnerEvent: MessageTypeDefinition<_clawray_v1_OwnerEvent, _clawray_v1_OwnerEvent__Output>
      OwnerSessionRequest: MessageTypeDefinition<_clawray_v1_OwnerSessionRequest, _clawray_v1_OwnerSessionRequest__Output>
      PackageChunk: MessageTypeDefinition<_clawray_v1_PackageChunk, _clawray_v1_PackageChunk__Output>
      PackageRef: MessageTypeDefinition<_clawray_v1_PackageRef, _clawray_v1_PackageRef__Output>
      PendingDemand: MessageTypeDefinition<_clawray_v1_PendingDemand, _clawray_v1_PendingDemand__Output>
      PlacementGroupAsk: MessageTypeDefinition<_clawray_v1_PlacementGroupAsk, _clawray_v1_PlacementGroupAsk__Output>
      PlacementGroupInfo: MessageTypeDefinition<_clawray_v1_PlacementGroupInfo, _clawray_v1_PlacementGroupInfo__Output>
      PlacementPlan: MessageTypeDefinition<_clawray_v1_PlacementPlan, _clawray_v1_PlacementPlan__Output>
      PlanPlacementGroupsReply: MessageTypeDefinition<_clawray_v1_PlanPlacementGroupsReply, _clawray_v1_PlanPlacementGroupsReply__Output>
      PlanPlacementGroupsRequest: MessageTypeDefinition<_clawray_v1_PlanPlacementGroupsRequest, _clawray_v1_PlanPlacementGroupsRequest__Output>
      RegisterNodeReply: MessageTypeDefinition<_clawray_v1_RegisterNodeReply, _clawray_v1_RegisterNodeReply__Output>
      RegisterNodeRequest: MessageTypeDefinition<_clawray_v1_RegisterNodeRequest, _clawray_v1_RegisterNodeRequest__Output>
      RemovePlacementGroupRequest: MessageTypeDefinition<_clawray_v1_RemovePlacementGroupRequest, _clawray_v1_RemovePlacementGroupRequest__Output>
      ReportActorExitRequest: MessageTypeDefinition<_clawray_v1_ReportActorExitRequest, _clawray_v1_ReportActorExitRequest__Output>
      ReportJobInfoRequest: MessageTypeDefinition<_clawray_v1_ReportJobInfoRequest, _clawray_v1_ReportJobInfoRequest__Output>
      Resources: MessageTypeDefinition<_clawray_v1_Resources, _clawray_v1_Resources__Output>
      RunningActor: MessageTypeDefinition<_clawray_v1_RunningActor, _clawray_v1_RunningActor__Output>
      StoreJobLogRequest: MessageTypeDefinition<_clawray_v1_StoreJobLogRequest, _clawray_v1_StoreJobLogRequest__Output>
      SubmitJobRequest: MessageTypeDefinition<_clawray_v1_SubmitJobRequest, _clawray_v1_SubmitJobRequest__Output>
      UpdateJobRequest: MessageTypeDefinition<_clawray_v1_UpdateJobRequest, _clawray_v1_UpdateJobRequest__Output>
    }
  }
}

