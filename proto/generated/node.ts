import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ActorInfo as _clawray_v1_ActorInfo, ActorInfo__Output as _clawray_v1_ActorInfo__Output } from './clawray/v1/ActorInfo.js';
import type { ActorOptions as _clawray_v1_ActorOptions, ActorOptions__Output as _clawray_v1_ActorOptions__Output } from './clawray/v1/ActorOptions.js';
import type { ActorSpec as _clawray_v1_ActorSpec, ActorSpec__Output as _clawray_v1_ActorSpec__Output } from './clawray/v1/ActorSpec.js';
import type { Empty as _clawray_v1_Empty, Empty__Output as _clawray_v1_Empty__Output } from './clawray/v1/Empty.js';
import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from './clawray/v1/ErrorInfo.js';
import type { GpuShare as _clawray_v1_GpuShare, GpuShare__Output as _clawray_v1_GpuShare__Output } from './clawray/v1/GpuShare.js';
import type { NodeServiceClient as _clawray_v1_NodeServiceClient, NodeServiceDefinition as _clawray_v1_NodeServiceDefinition } from './clawray/v1/NodeService.js';
import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from './clawray/v1/Resources.js';
import type { StartActorReply as _clawray_v1_StartActorReply, StartActorReply__Output as _clawray_v1_StartActorReply__Output } from './clawray/v1/StartActorReply.js';
import type { StartActorRequest as _clawray_v1_StartActorRequest, StartActorRequest__Output as _clawray_v1_StartActorRequest__Output } from './clawray/v1/StartActorRequest.js';
import type { StopActorRequest as _clawray_v1_StopActorRequest, StopActorRequest__Output as _clawray_v1_StopActorRequest__Output } from './clawray/v1/StopActorRequest.js';

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
      Empty: MessageTypeDefinition<_clawray_v1_Empty, _clawray_v1_Empty__Output>
      ErrorInfo: MessageTypeDefinition<_clawray_v1_ErrorInfo, _clawray_v1_ErrorInfo__Output>
      GpuShare: MessageTypeDefinition<_clawray_v1_GpuShare, _clawray_v1_GpuShare__Output>
      NodeService: SubtypeConstructor<typeof grpc.Client, _clawray_v1_NodeServiceClient> & { service: _clawray_v1_NodeServiceDefinition }
      Resources: MessageTypeDefinition<_clawray_v1_Resources, _clawray_v1_Resources__Output>
      StartActorReply: MessageTypeDefinition<_clawray_v1_StartActorReply, _clawray_v1_StartActorReply__Output>
      StartActorRequest: MessageTypeDefinition<_clawray_v1_StartActorRequest, _clawray_v1_StartActorRequest__Output>
      StopActorRequest: MessageTypeDefinition<_clawray_v1_StopActorRequest, _clawray_v1_StopActorRequest__Output>
    }
  }
}

