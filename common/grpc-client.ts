/** One unary call on a grpc-js client with the cluster token, as a promise of a clawray result. */
import * as grpc from '@grpc/grpc-js';
import { authMetadata } from './auth.js';
import { fromServiceError } from './wire-status.js';

type UnaryFn = (
  request: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, reply: unknown) => void,
) => unknown;

export function unaryCall<Reply>(
  client: grpc.Client,
  method: string,
  request: unknown,
  token: string,
  target: string,
  deadlineMs?: number,
): Promise<Reply> {
  const metadata = authMetadata(new grpc.Metadata(), token);
  const options: grpc.CallOptions = deadlineMs ? { deadline: Date.now() + deadlineMs } : {};
  const fn = (client as unknown as Record<string, UnaryFn>)[method];
  return new Promise((resolve, reject) => {
    fn.call(client, request, metadata, options, (err, reply) =>
      err ? reject(fromServiceError(err, target)) : resolve(reply as Reply),
    );
  });
}
