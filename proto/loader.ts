import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { packageRoot } from '../common/package-root.js';
import type { ProtoGrpcType as ActorProto } from './generated/actor.js';
import type { ProtoGrpcType as HeadProto } from './generated/head.js';
import type { ProtoGrpcType as NodeProto } from './generated/node.js';
import loaderOptions from './loader-options.json' with { type: 'json' };

export type ClawrayProto = HeadProto & NodeProto & ActorProto;

let cached: ClawrayProto | undefined;

/** The gRPC services and messages of proto/*.proto, loaded once per process. */
export function protos(): ClawrayProto {
  if (cached) return cached;
  const dir = join(packageRoot(), 'proto');
  const definition = protoLoader.loadSync(['head.proto', 'node.proto', 'actor.proto'], {
    ...(loaderOptions as unknown as protoLoader.Options),
    longs: Number,
    enums: String,
    includeDirs: [dir],
  });
  cached = grpc.loadPackageDefinition(definition) as unknown as ClawrayProto;
  return cached;
}
