/**
 * The baselines the actor numbers are judged against, measured in the same run against one
 * child process (`grpc-echo-server`) that serves, on two ports:
 *
 * - a grpc-js server with a bidi `Echo` method (echoes each message) and a unary `Unary` method
 *   (returns the request), both with identity Buffer serializers;
 * - a bare node:http2 server that echoes every DATA chunk of a POST stream back on it.
 *
 * Ping-pongs write one message, wait for its echo, and repeat, on one stream. The unary
 * measurement keeps a fixed number of calls in flight for a fixed time.
 */

import { type ChildProcess, fork } from 'node:child_process';
import { once } from 'node:events';
import http2 from 'node:http2';
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { distEntry } from '../common/package-root.js';

const identity = (b: Buffer): Buffer => b;

/** Bytes in and bytes out, shared by the child server and this client. */
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
  Unary: {
    path: '/bench.Echo/Unary',
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};

/** Path of the node:http2 echo stream (any path is echoed; this one is what the client asks). */
export const HTTP2_ECHO_PATH = '/echo';

/** What the child sends over IPC once both servers listen. */
export interface EchoPorts {
  grpcPort: number;
  http2Port: number;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function startEchoServer(): Promise<{ child: ChildProcess; ports: EchoPorts }> {
  const child = fork(distEntry('bench/grpc-echo-server'), [], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void =>
      reject(new Error(`grpc echo server exited with code ${code}`));
    child.once('error', reject);
    child.once('exit', onExit);
    child.once('message', (ports: EchoPorts) => {
      child.off('exit', onExit);
      resolve({ child, ports });
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

/** A sequential ping-pong: `round(n)` does n write → wait-for-echo trips, resolves with trips/s. */
export interface PingPong {
  round(n: number): Promise<number>;
}

/** Bidi grpc-js stream; each message is echoed as one message. */
class GrpcPingPong implements PingPong {
  private onReply?: () => void;
  private failure?: Error;
  private readonly payload = Buffer.from('ping');

  constructor(readonly stream: grpc.ClientDuplexStream<Buffer, Buffer>) {
    stream.on('data', () => this.onReply?.());
    stream.on('error', (err: Error) => {
      this.failure = err;
      this.onReply?.();
    });
  }

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

  close(): void {
    this.onReply = undefined;
    this.stream.end();
  }
}

/**
 * One POST stream on a node:http2 session; a 10-byte DATA write counts as answered once 10
 * bytes came back (the echo may in principle arrive split or merged).
 */
class Http2PingPong implements PingPong {
  private onReply?: () => void;
  private failure?: Error;
  private awaiting = 0;
  private readonly payload = Buffer.alloc(10, 0x70);

  private constructor(
    private readonly session: http2.ClientHttp2Session,
    private readonly stream: http2.ClientHttp2Stream,
  ) {
    stream.on('data', (chunk: Buffer) => {
      this.awaiting -= chunk.length;
      if (this.awaiting <= 0) this.onReply?.();
    });
    const fail = (err: Error): void => {
      this.failure ??= err;
      this.onReply?.();
    };
    stream.on('error', fail);
    session.on('error', fail);
    stream.on('close', () => fail(new Error('http2 echo stream closed')));
  }

  static async open(port: number): Promise<Http2PingPong> {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    await once(session, 'connect');
    const stream = session.request({ ':method': 'POST', ':path': HTTP2_ECHO_PATH });
    await once(stream, 'response');
    return new Http2PingPong(session, stream);
  }

  async round(n: number): Promise<number> {
    const start = performance.now();
    for (let i = 0; i < n; i++) {
      await new Promise<void>((resolve) => {
        this.onReply = resolve;
        this.awaiting = this.payload.length;
        this.stream.write(this.payload);
      });
      if (this.failure) throw this.failure;
    }
    return n / ((performance.now() - start) / 1000);
  }

  close(): void {
    this.onReply = undefined;
    this.failure ??= new Error('closed');
    this.stream.end();
    this.session.close();
  }
}

/**
 * `inFlight` loops, each issuing one unary call and the next when it returns, for `seconds`;
 * resolves with completed calls per second. Works against any client with the `Unary` method.
 */
export async function unaryRate(client: grpc.Client, seconds: number, inFlight: number): Promise<number> {
  const payload = Buffer.from('ping');
  const { path } = echoDefinition.Unary;
  const call = (): Promise<void> =>
    new Promise((resolve, reject) => {
      client.makeUnaryRequest(path, identity, identity, payload, (err) => (err ? reject(err) : resolve()));
    });
  // Warm-up: the channel, the server's handler path, the JIT.
  for (let i = 0; i < 200; i++) await call();
  let done = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      await call();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, loop));
  return done / ((performance.now() - start) / 1000);
}

/** A grpc-js server with the echo service inside this process, for the in-process unary rate. */
export async function inProcessUnaryRate(seconds: number, inFlight: number): Promise<number> {
  const server = new grpc.Server();
  server.addService(echoDefinition, echoHandlers());
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  const client = new EchoClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    return await unaryRate(client, seconds, inFlight);
  } finally {
    client.close();
    server.forceShutdown();
  }
}

/** Handlers of the echo service, for the child server and the in-process one. */
export function echoHandlers(): grpc.UntypedServiceImplementation {
  return {
    Echo: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (chunk: Buffer) => call.write(chunk));
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
    Unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
      callback(null, call.request);
    },
  };
}

const EchoClient = grpc.makeGenericClientConstructor(echoDefinition, 'Echo');

/**
 * The live baselines: the child process, a grpc-js channel to it with one open bidi stream, and
 * one open node:http2 stream. Measure between other measurements so all see the same machine
 * load (this box is often shared), then `close()`.
 */
export class Baselines {
  private closed = false;

  private constructor(
    private readonly child: ChildProcess,
    private readonly client: grpc.Client,
    private readonly grpcPingPong: GrpcPingPong,
    private readonly http2PingPong: Http2PingPong,
  ) {}

  /** The grpc-js bidi ping-pong. */
  get grpc(): PingPong {
    return this.grpcPingPong;
  }

  /** The bare node:http2 ping-pong. */
  get http2(): PingPong {
    return this.http2PingPong;
  }

  static async start(): Promise<Baselines> {
    const { child, ports } = await startEchoServer();
    try {
      const client = new EchoClient(`127.0.0.1:${ports.grpcPort}`, grpc.credentials.createInsecure());
      const stream = (client as unknown as { Echo(): grpc.ClientDuplexStream<Buffer, Buffer> }).Echo();
      const h2 = await Http2PingPong.open(ports.http2Port);
      return new Baselines(child, client, new GrpcPingPong(stream), h2);
    } catch (err) {
      await stopChild(child);
      throw err;
    }
  }

  /** Unary calls/s through grpc-js to the child with `inFlight` calls outstanding. */
  unary(seconds: number, inFlight: number): Promise<number> {
    return unaryRate(this.client, seconds, inFlight);
  }

  /** Ends the streams, closes the channel and stops the child; safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.grpcPingPong.close();
    this.http2PingPong.close();
    this.client.close();
    await stopChild(this.child);
  }
}
