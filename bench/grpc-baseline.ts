/**
 * The baseline the actor-call numbers are judged against, measured in the same run: a bare
 * grpc-js bidi ping-pong between two processes. The child (`grpc-echo-server`) echoes each
 * message; this side writes one message, waits for its echo, and repeats, on one stream.
 */

import { type ChildProcess, fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { distEntry } from '../common/package-root.js';

const identity = (b: Buffer): Buffer => b;

/** One bidi method, bytes in and bytes out, shared by the child server and this client. */
export const echoDefinition: grpc.ServiceDefinition = {
  Echo: {
    path: '/bench.Echo/Echo',
    requestStream: true,
    responseStream: true,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function startEchoServer(): Promise<{ child: ChildProcess; port: number }> {
  const child = fork(distEntry('bench/grpc-echo-server'), [], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void =>
      reject(new Error(`grpc echo server exited with code ${code}`));
    child.once('error', reject);
    child.once('exit', onExit);
    child.once('message', (message: { port: number }) => {
      child.off('exit', onExit);
      resolve({ child, port: message.port });
    });
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/**
 * A live ping-pong: the child server and one open stream. Measure with `round(n)` between other
 * measurements so both see the same machine load (this box is often shared), then `close()`.
 */
export class GrpcPingPong {
  private onReply?: () => void;
  private failure?: Error;
  private closed = false;
  private readonly payload = Buffer.from('ping');

  private constructor(
    private readonly child: ChildProcess,
    private readonly client: grpc.Client,
    private readonly stream: grpc.ClientDuplexStream<Buffer, Buffer>,
  ) {
    stream.on('data', () => this.onReply?.());
    stream.on('error', (err: Error) => {
      this.failure = err;
      this.onReply?.();
    });
  }

  static async start(): Promise<GrpcPingPong> {
    const { child, port } = await startEchoServer();
    const Client = grpc.makeGenericClientConstructor(echoDefinition, 'Echo');
    const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const stream = (client as unknown as { Echo(): grpc.ClientDuplexStream<Buffer, Buffer> }).Echo();
    return new GrpcPingPong(child, client, stream);
  }

  /** `n` sequential write → wait-for-echo round trips; resolves with round trips per second. */
  async round(n: number): Promise<number> {
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      await new Promise<void>((resolve) => {
        this.onReply = resolve;
        this.stream.write(this.payload);
      });
      if (this.failure) throw this.failure;
    }
    return n / ((performance.now() - start) / 1000);
  }

  /** Ends the stream and stops the child; safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.onReply = undefined;
    this.stream.end();
    this.client.close();
    await stopChild(this.child);
  }
}
