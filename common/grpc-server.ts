/**
 * Glue between clawray's async handlers and grpc-js: every handler (unary and streaming alike)
 * checks the cluster token, records its duration and turns thrown errors into gRPC statuses
 * (the only place that does).
 */
import * as grpc from '@grpc/grpc-js';
import type { Histogram } from 'prom-client';
import { AUTH_HEADER, tokenMatches, unauthenticated } from './auth.js';
import type { Logger } from './logger.js';
import { toServiceError } from './wire-status.js';

export interface ServerGuard {
  /** The cluster token every call must carry. */
  token: string;
  /** Names this server in error messages, e.g. `head 127.0.0.1:6380`. */
  serverName: () => string;
  service: string;
  rpcDuration?: Histogram<'service' | 'method' | 'code'>;
  logger?: Logger;
}

export function isAuthorized(guard: ServerGuard, metadata: grpc.Metadata): boolean {
  return tokenMatches(metadata.get(AUTH_HEADER)[0], guard.token);
}

type AsyncUnary<Req, Res> = (request: Req, call: grpc.ServerUnaryCall<Req, Res>) => Promise<Res>;

export function unary<Req, Res>(
  guard: ServerGuard,
  method: string,
  fn: AsyncUnary<Req, Res>,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => answer(guard, method, call.metadata, () => fn(call.request, call), callback);
}

/**
 * A client-streaming handler: the token is checked before a message is read (an unauthorized
 * upload ends at once with UNAUTHENTICATED), then as `unary`.
 */
export function clientStream<Req, Res>(
  guard: ServerGuard,
  method: string,
  fn: (call: grpc.ServerReadableStream<Req, Res>) => Promise<Res>,
): grpc.handleClientStreamingCall<Req, Res> {
  return (call, callback) => answer(guard, method, call.metadata, () => fn(call), callback);
}

/** One reply (or status) for a unary or client-streaming call. */
function answer<Res>(
  guard: ServerGuard,
  method: string,
  metadata: grpc.Metadata,
  run: () => Promise<Res>,
  callback: grpc.sendUnaryData<Res>,
): void {
  const started = performance.now();
  const finish = (code: grpc.status) =>
    guard.rpcDuration?.observe(
      { service: guard.service, method, code: grpc.status[code] },
      (performance.now() - started) / 1000,
    );
  if (!isAuthorized(guard, metadata)) {
    finish(grpc.status.UNAUTHENTICATED);
    callback(toServiceError(unauthenticated(guard.serverName())));
    return;
  }
  run().then(
    (reply) => {
      finish(grpc.status.OK);
      callback(null, reply);
    },
    (err: unknown) => {
      const status = toServiceError(err);
      finish(status.code ?? grpc.status.UNKNOWN);
      if (status.code === grpc.status.INTERNAL) guard.logger?.error({ err, method }, 'request failed');
      callback(status);
    },
  );
}

type ServerStreamCall<Req, Res> = grpc.ServerWritableStream<Req, Res>;

/**
 * A server-streaming handler. An unauthorized call ends at once with UNAUTHENTICATED before
 * `fn` sees it; an error `fn` throws (or rejects with) ends the stream with its status. `fn`
 * ends the stream itself when it is done, or keeps it open (an owner session) for as long as
 * it likes. Refusals and failures are timed; a stream that ends well is not, since its
 * duration is the client's, not the server's.
 */
export function serverStream<Req, Res>(
  guard: ServerGuard,
  method: string,
  fn: (call: ServerStreamCall<Req, Res>) => Promise<void> | void,
): grpc.handleServerStreamingCall<Req, Res> {
  return (call) => {
    const started = performance.now();
    const fail = (err: unknown) => {
      const status = toServiceError(err);
      guard.rpcDuration?.observe(
        { service: guard.service, method, code: grpc.status[status.code ?? grpc.status.UNKNOWN] },
        (performance.now() - started) / 1000,
      );
      if (status.code === grpc.status.INTERNAL) guard.logger?.error({ err, method }, 'request failed');
      failStream(call, err);
    };
    if (!isAuthorized(guard, call.metadata)) {
      fail(unauthenticated(guard.serverName()));
      return;
    }
    try {
      const done = fn(call);
      if (done) done.catch(fail);
    } catch (err) {
      fail(err);
    }
  };
}

/**
 * Ends a server stream with `err` as its status. grpc-js sends the status of a writable server
 * stream from its `error` event; `destroy(err)` tears the stream down without ever sending one,
 * which leaves the client (and the server's call) waiting for good.
 */
export function failStream<Req, Res>(call: ServerStreamCall<Req, Res>, err: unknown): void {
  if (call.cancelled || call.destroyed || call.writableEnded) return;
  call.emit('error', toServiceError(err));
}

export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // Large typed arrays travel chunked; these caps only bound a single frame.
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
  'grpc.max_send_message_length': 64 * 1024 * 1024,
  'grpc.keepalive_time_ms': 10_000,
  // gRPC's default: a process whose loop a long computation holds must not drop its channels.
  'grpc.keepalive_timeout_ms': 20_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.enable_retries': 0,
};

export function createServer(): grpc.Server {
  return new grpc.Server({
    ...CHANNEL_OPTIONS,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.http2.min_ping_interval_without_data_ms': 5_000,
  } as grpc.ServerOptions);
}

/** Binds `host:port` (0 picks a free port) and resolves with the bound port. */
export function bindServer(server: grpc.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const target = host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
    server.bindAsync(target, grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
}

/** Graceful shutdown with a deadline, after which open streams are cut. */
export function shutdownServer(server: grpc.Server, graceMs = 2000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export function formatAddress(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
