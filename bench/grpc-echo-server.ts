/**
 * Child process of the gRPC baseline: a bare grpc-js server with one bidi method that echoes
 * every message back, with identity Buffer serializers (no protobuf, no framing of our own).
 * Sends its port to the parent over IPC and exits when the parent goes away.
 */
import * as grpc from '@grpc/grpc-js';
import { echoDefinition } from './grpc-baseline.js';

function main(): void {
  const server = new grpc.Server();
  server.addService(echoDefinition, {
    Echo: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (chunk: Buffer) => call.write(chunk));
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
    if (err) {
      process.stderr.write(`grpc echo server: ${err.message}\n`);
      process.exit(1);
    }
    process.send?.({ port });
  });
  const stop = (): void => {
    server.forceShutdown();
    process.exit(0);
  };
  process.on('disconnect', stop);
  process.on('SIGTERM', stop);
}

main();
