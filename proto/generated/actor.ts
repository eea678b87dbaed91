import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { ActorInfo as _clawray_v1_ActorInfo, ActorInfo__Output as _clawray_v1_ActorInfo__Output } from './clawray/v1/ActorInfo.js';
import type { ActorOptions as _clawray_v1_ActorOptions, ActorOptions__Output as _clawray_v1_ActorOptions__Output } from './clawray/v1/ActorOptions.js';
import type { ActorServiceClient as _clawray_v1_ActorServiceClient, ActorServiceDefinition as _clawray_v1_ActorServiceDefinition } from './clawray/v1/ActorService.js';
import type { ActorSpec as _clawray_v1_ActorSpec, ActorSpec__Output as _clawray_v1_ActorSpec__Output } from './clawray/v1/ActorSpec.js';
import type { Call as _clawray_v1_Call, Call__Output as _clawray_v1_Call__Output } from './clawray/v1/Call.js';
import type { CallFrame as _clawray_v1_CallFrame, CallFrame__Output as _clawray_v1_CallFrame__Output } from './clawray/v1/CallFrame.js';
import type { Empty as _clawray_v1_Empty, Empty__Output as _clawray_v1_Empty__Output } from './clawray/v1/Empty.js';
import type { ErrorInfo as _clawray_v1_ErrorInfo, ErrorInfo__Output as _clawray_v1_ErrorInfo__Output } from './clawray/v1/ErrorInfo.js';
import type { GpuShare as _clawray_v1_GpuShare, GpuShare__Output as _clawray_v1_GpuShare__Output } from './clawray/v1/GpuShare.js';
import type { Reply as _clawray_v1_Reply, Reply__Output as _clawray_v1_Reply__Output } from './clawray/v1/Reply.js';
import type { ReplyFrame as _clawray_v1_ReplyFrame, ReplyFrame__Output as _clawray_v1_ReplyFrame__Output } from './clawray/v1/ReplyFrame.js';
import type { Resources as _clawray_v1_Resources, Resources__Output as _clawray_v1_Resources__Output } from './clawray/v1/Resources.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  clawray: {
    v1: {
      ActorInfo: MessageTypeDefinition<_clawray_v1_ActorInfo, _clawray_v1_ActorInfo__Output>
      ActorOptions: MessageTypeDefinition<_clawray_v1_ActorOptions, _clawray_v1_ActorOptions__Output>
      ActorService: SubtypeConstructor<typeof grpc.Client, _clawray_v1_ActorServiceClient> & { service: _clawray_v1_ActorServiceDefinition }
      ActorSpec: MessageTypeDefinition<_clawray_v1_ActorSpec, _clawray_v1_ActorSpec__Output>
      ActorState: EnumTypeDefinition
      Call: MessageTypeDefinition<_clawray_v1_Call, _clawray_v1_Call__Output>
      CallCancel: EnumTypeDefinition
      CallFrame: MessageTypeDefinition<_clawray_v1_CallFrame, _clawray_v1_CallFrame__Output>
      Empty: MessageTypeDefinition<_clawray_v1_Empty, _clawray_v1_Empty__Output>
      ErrorInfo: MessageTypeDefinition<_clawray_v1_ErrorInfo, _clawray_v1_ErrorInfo__Output>
      GpuShare: MessageTypeDefinition<_clawray_v1_GpuShare, _clawray_v1_GpuShare__Output>
      Reply: MessageTypeDefinition<_clawray_v1_Reply, _clawray_v1_Reply__Output>
      ReplyFrame: MessageTypeDefinition<_clawray_v1_ReplyFrame, _clawray_v1_ReplyFrame__Output>
      Resources: MessageTypeDefinition<_clawray_v1_Resources, _clawray_v1_Resources__Output>
    }
  }
}

