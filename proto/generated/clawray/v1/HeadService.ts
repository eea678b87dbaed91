// Original file: proto/head.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ActorInfo as _clawray_v1_ActorInfo, ActorInfo__Output as _clawray_v1_ActorInfo__Output } from '../../clawray/v1/ActorInfo.js';
import type { ClusterStatus as _clawray_v1_ClusterStatus, ClusterStatus__Output as _clawray_v1_ClusterStatus__Output } from '../../clawray/v1/ClusterStatus.js';
import type { CreateActorRequest as _clawray_v1_CreateActorRequest, CreateActorRequest__Output as _clawray_v1_CreateActorRequest__Output } from '../../clawray/v1/CreateActorRequest.js';
import type { CreatePlacementGroupRequest as _clawray_v1_CreatePlacementGroupRequest, CreatePlacementGroupRequest__Output as _clawray_v1_CreatePlacementGroupRequest__Output } from '../../clawray/v1/CreatePlacementGroupRequest.js';
import type { DrainNodeRequest as _clawray_v1_DrainNodeRequest, DrainNodeRequest__Output as _clawray_v1_DrainNodeRequest__Output } from '../../clawray/v1/DrainNodeRequest.js';
import type { Empty as _clawray_v1_Empty, Empty__Output as _clawray_v1_Empty__Output } from '../../clawray/v1/Empty.js';
import type { GetActorRequest as _clawray_v1_GetActorRequest, GetActorRequest__Output as _clawray_v1_GetActorRequest__Output } from '../../clawray/v1/GetActorRequest.js';
import type { GetPlacementGroupRequest as _clawray_v1_GetPlacementGroupRequest, GetPlacementGroupRequest__Output as _clawray_v1_GetPlacementGroupRequest__Output } from '../../clawray/v1/GetPlacementGroupRequest.js';
import type { HeartbeatReply as _clawray_v1_HeartbeatReply, HeartbeatReply__Output as _clawray_v1_HeartbeatReply__Output } from '../../clawray/v1/HeartbeatReply.js';
import type { HeartbeatRequest as _clawray_v1_HeartbeatRequest, HeartbeatRequest__Output as _clawray_v1_HeartbeatRequest__Output } from '../../clawray/v1/HeartbeatRequest.js';
import type { KillActorRequest as _clawray_v1_KillActorRequest, KillActorRequest__Output as _clawray_v1_KillActorRequest__Output } from '../../clawray/v1/KillActorRequest.js';
import type { ListActorsReply as _clawray_v1_ListActorsReply, ListActorsReply__Output as _clawray_v1_ListActorsReply__Output } from '../../clawray/v1/ListActorsReply.js';
import type { ListActorsRequest as _clawray_v1_ListActorsRequest, ListActorsRequest__Output as _clawray_v1_ListActorsRequest__Output } from '../../clawray/v1/ListActorsRequest.js';
import type { ListPlacementGroupsReply as _clawray_v1_ListPlacementGroupsReply, ListPlacementGroupsReply__Output as _clawray_v1_ListPlacementGroupsReply__Output } from '../../clawray/v1/ListPlacementGroupsReply.js';
import type { PlacementGroupInfo as _clawray_v1_PlacementGroupInfo, PlacementGroupInfo__Output as _clawray_v1_PlacementGroupInfo__Output } from '../../clawray/v1/PlacementGroupInfo.js';
import type { RegisterNodeReply as _clawray_v1_RegisterNodeReply, RegisterNodeReply__Output as _clawray_v1_RegisterNodeReply__Output } from '../../clawray/v1/RegisterNodeReply.js';
import type { RegisterNodeRequest as _clawray_v1_RegisterNodeRequest, RegisterNodeRequest__Output as _clawray_v1_RegisterNodeRequest__Output } from '../../clawray/v1/RegisterNodeRequest.js';
import type { RemovePlacementGroupRequest as _clawray_v1_RemovePlacementGroupRequest, RemovePlacementGroupRequest__Output as _clawray_v1_RemovePlacementGroupRequest__Output } from '../../clawray/v1/RemovePlacementGroupRequest.js';
import type { ReportActorExitRequest as _clawray_v1_ReportActorExitRequest, ReportActorExitRequest__Output as _clawray_v1_ReportActorExitRequest__Output } from '../../clawray/v1/ReportActorExitRequest.js';

export interface HeadServiceClient extends grpc.Client {
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
  
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  GetPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  getPlacementGroup(argument: _clawray_v1_GetPlacementGroupRequest, callback: grpc.requestCallback<_clawray_v1_PlacementGroupInfo__Output>): grpc.ClientUnaryCall;
  
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
  
  ListPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  ListPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  ListPlacementGroups(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  ListPlacementGroups(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  listPlacementGroups(argument: _clawray_v1_Empty, callback: grpc.requestCallback<_clawray_v1_ListPlacementGroupsReply__Output>): grpc.ClientUnaryCall;
  
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
  
}

export interface HeadServiceHandlers extends grpc.UntypedServiceImplementation {
  CreateActor: grpc.handleUnaryCall<_clawray_v1_CreateActorRequest__Output, _clawray_v1_ActorInfo>;
  
  CreatePlacementGroup: grpc.handleUnaryCall<_clawray_v1_CreatePlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo>;
  
  DrainNode: grpc.handleUnaryCall<_clawray_v1_DrainNodeRequest__Output, _clawray_v1_Empty>;
  
  GetActor: grpc.handleUnaryCall<_clawray_v1_GetActorRequest__Output, _clawray_v1_ActorInfo>;
  
  GetClusterStatus: grpc.handleUnaryCall<_clawray_v1_Empty__Output, _clawray_v1_ClusterStatus>;
  
  GetPlacementGroup: grpc.handleUnaryCall<_clawray_v1_GetPlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo>;
  
  Heartbeat: grpc.handleUnaryCall<_clawray_v1_HeartbeatRequest__Output, _clawray_v1_HeartbeatReply>;
  
  KillActor: grpc.handleUnaryCall<_clawray_v1_KillActorRequest__Output, _clawray_v1_Empty>;
  
  ListActors: grpc.handleUnaryCall<_clawray_v1_ListActorsRequest__Output, _clawray_v1_ListActorsReply>;
  
  ListPlacementGroups: grpc.handleUnaryCall<_clawray_v1_Empty__Output, _clawray_v1_ListPlacementGroupsReply>;
  
  RegisterNode: grpc.handleUnaryCall<_clawray_v1_RegisterNodeRequest__Output, _clawray_v1_RegisterNodeReply>;
  
  RemovePlacementGroup: grpc.handleUnaryCall<_clawray_v1_RemovePlacementGroupRequest__Output, _clawray_v1_Empty>;
  
  ReportActorExit: grpc.handleUnaryCall<_clawray_v1_ReportActorExitRequest__Output, _clawray_v1_Empty>;
  
}

export interface HeadServiceDefinition extends grpc.ServiceDefinition {
  CreateActor: MethodDefinition<_clawray_v1_CreateActorRequest, _clawray_v1_ActorInfo, _clawray_v1_CreateActorRequest__Output, _clawray_v1_ActorInfo__Output>
  CreatePlacementGroup: MethodDefinition<_clawray_v1_CreatePlacementGroupRequest, _clawray_v1_PlacementGroupInfo, _clawray_v1_CreatePlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo__Output>
  DrainNode: MethodDefinition<_clawray_v1_DrainNodeRequest, _clawray_v1_Empty, _clawray_v1_DrainNodeRequest__Output, _clawray_v1_Empty__Output>
  GetActor: MethodDefinition<_clawray_v1_GetActorRequest, _clawray_v1_ActorInfo, _clawray_v1_GetActorRequest__Output, _clawray_v1_ActorInfo__Output>
  GetClusterStatus: MethodDefinition<_clawray_v1_Empty, _clawray_v1_ClusterStatus, _clawray_v1_Empty__Output, _clawray_v1_ClusterStatus__Output>
  GetPlacementGroup: MethodDefinition<_clawray_v1_GetPlacementGroupRequest, _clawray_v1_PlacementGroupInfo, _clawray_v1_GetPlacementGroupRequest__Output, _clawray_v1_PlacementGroupInfo__Output>
  Heartbeat: MethodDefinition<_clawray_v1_HeartbeatRequest, _clawray_v1_HeartbeatReply, _clawray_v1_HeartbeatRequest__Output, _clawray_v1_HeartbeatReply__Output>
  KillActor: MethodDefinition<_clawray_v1_KillActorRequest, _clawray_v1_Empty, _clawray_v1_KillActorRequest__Output, _clawray_v1_Empty__Output>
  ListActors: MethodDefinition<_clawray_v1_ListActorsRequest, _clawray_v1_ListActorsReply, _clawray_v1_ListActorsRequest__Output, _clawray_v1_ListActorsReply__Output>
  ListPlacementGroups: MethodDefinition<_clawray_v1_Empty, _clawray_v1_ListPlacementGroupsReply, _clawray_v1_Empty__Output, _clawray_v1_ListPlacementGroupsReply__Output>
  RegisterNode: MethodDefinition<_clawray_v1_RegisterNodeRequest, _clawray_v1_RegisterNodeReply, _clawray_v1_RegisterNodeRequest__Output, _clawray_v1_RegisterNodeReply__Output>
  RemovePlacementGroup: MethodDefinition<_clawray_v1_RemovePlacementGroupRequest, _clawray_v1_Empty, _clawray_v1_RemovePlacementGroupRequest__Output, _clawray_v1_Empty__Output>
  ReportActorExit: MethodDefinition<_clawray_v1_ReportActorExitRequest, _clawray_v1_Empty, _clawray_v1_ReportActorExitRequest__Output, _clawray_v1_Empty__Output>
}
