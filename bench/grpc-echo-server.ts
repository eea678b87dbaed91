/**
 * Child process of the baselines (see grpc-baseline.ts), serving on two ports:
 * - a bare grpc-js server, identity Buffer serializers (no protobuf, no framing of our own):
 *   `Echo` (bidi) echoes every message, `Unary` returns its request;
 * - a bare node:http2 server that answers any stream with 200 and echoes every DATA chunk.
 * Sends both ports to the parent over IPC and exits when the parent goes away.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { type EchoPorts, echoDefinition, echoHandlers } from './grpc-baseline.js';

function fail(message: string): never {
  process.stderr.write(`bench echo server: ${message}\n`);
  process.exit(1);
}

function main(): void {
  const server = new grpc.Server();
  server.addService(echoDefinition, echoHandlers());

  const h2 = http2.createServer();
  h2.on('stream', (stream) => {
    stream.respond({ ':status': 200 });
    stream.on('data', (chunk: Buffer) => stream.write(chunk));
    stream.on('end', () => stream.end());
    stream.on('error', () => {});
  });
  h2.on('sessionError', () => {});
  h2.on('error', (err) => fail(err.message));

  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, grpcPort) => {
    if (err) fail(err.message);
    h2.listen(0, '127.0.0.1', () => {
      const ports: EchoPorts = { grpcPort, http2Port: (h2.address() as AddressInfo).port };
      process.send?.(ports);
    });
  });
  const stop = (): void => {
    server.forceShutdown();
    h2.close();
    process.exit(0);
  };
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
}

main();
