// Original file: proto/node.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { Empty as _clawray_v1_Empty, Empty__Output as _clawray_v1_Empty__Output } from '../../clawray/v1/Empty.js';
import type { StartActorReply as _clawray_v1_StartActorReply, StartActorReply__Output as _clawray_v1_StartActorReply__Output } from '../../clawray/v1/StartActorReply.js';
import type { StartActorRequest as _clawray_v1_StartActorRequest, StartActorRequest__Output as _clawray_v1_StartActorRequest__Output } from '../../clawray/v1/StartActorRequest.js';
import type { StopActorRequest as _clawray_v1_StopActorRequest, StopActorRequest__Output as _clawray_v1_StopActorRequest__Output } from '../../clawray/v1/StopActorRequest.js';

export interface NodeServiceClient extends grpc.Client {
  StartActor(argument: _clawray_v1_StartActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  StartActor(argument: _clawray_v1_StartActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  StartActor(argument: _clawray_v1_StartActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  StartActor(argument: _clawray_v1_StartActorRequest, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  startActor(argument: _clawray_v1_StartActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  startActor(argument: _clawray_v1_StartActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  startActor(argument: _clawray_v1_StartActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  startActor(argument: _clawray_v1_StartActorRequest, callback: grpc.requestCallback<_clawray_v1_StartActorReply__Output>): grpc.ClientUnaryCall;
  
  StopActor(argument: _clawray_v1_StopActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  StopActor(argument: _clawray_v1_StopActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  StopActor(argument: _clawray_v1_StopActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  StopActor(argument: _clawray_v1_StopActorRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  stopActor(argument: _clawray_v1_StopActorRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  stopActor(argument: _clawray_v1_StopActorRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  stopActor(argument: _clawray_v1_StopActorRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  stopActor(argument: _clawray_v1_StopActorRequest, callback: grpc.requestCallback<_clawray_v1_Empty__Output>): grpc.ClientUnaryCall;
  
}

export interface NodeServiceHandlers extends grpc.UntypedServiceImplementation {
  StartActor: grpc.handleUnaryCall<_clawray_v1_StartActorRequest__Output, _clawray_v1_StartActorReply>;
  
  StopActor: grpc.handleUnaryCall<_clawray_v1_StopActorRequest__Output, _clawray_v1_Empty>;
  
}

export interface NodeServiceDefinition extends grpc.ServiceDefinition {
  StartActor: MethodDefinition<_clawray_v1_StartActorRequest, _clawray_v1_StartActorReply, _clawray_v1_StartActorRequest__Output, _clawray_v1_StartActorReply__Output>
  StopActor: MethodDefinition<_clawray_v1_StopActorRequest, _clawray_v1_Empty, _clawray_v1_StopActorRequest__Output, _clawray_v1_Empty__Output>
}
