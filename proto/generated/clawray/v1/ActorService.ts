// Original file: proto/actor.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CallFrame as _clawray_v1_CallFrame, CallFrame__Output as _clawray_v1_CallFrame__Output } from '../../clawray/v1/CallFrame.js';
import type { ReplyFrame as _clawray_v1_ReplyFrame, ReplyFrame__Output as _clawray_v1_ReplyFrame__Output } from '../../clawray/v1/ReplyFrame.js';

export interface ActorServiceClient extends grpc.Client {
  Connect(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_clawray_v1_CallFrame, _clawray_v1_ReplyFrame__Output>;
  Connect(options?: grpc.CallOptions): grpc.ClientDuplexStream<_clawray_v1_CallFrame, _clawray_v1_ReplyFrame__Output>;
  connect(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_clawray_v1_CallFrame, _clawray_v1_ReplyFrame__Output>;
  connect(options?: grpc.CallOptions): grpc.ClientDuplexStream<_clawray_v1_CallFrame, _clawray_v1_ReplyFrame__Output>;
  
}

export interface ActorServiceHandlers extends grpc.UntypedServiceImplementation {
  Connect: grpc.handleBidiStreamingCall<_clawray_v1_CallFrame__Output, _clawray_v1_ReplyFrame>;
  
}

export interface ActorServiceDefinition extends grpc.ServiceDefinition {
  Connect: MethodDefinition<_clawray_v1_CallFrame, _clawray_v1_ReplyFrame, _clawray_v1_CallFrame__Output, _clawray_v1_ReplyFrame__Output>
}
