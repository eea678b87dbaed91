/**
 * The actor process's call server: gRPC `ActorService/Connect` served with node:http2 (see
 * grpc-framing.ts for why). It is bound while the process still waits in the warm pool, so
 * starting an actor costs only importing its module and running its constructor. Each
 * caller's stream gets its replies batched per turn of the event loop.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tokenMatches, unauthenticated } from '../common/auth.js';
import { NotFoundError, toErrorInfo, UnavailableError } from '../common/errors.js';
import { ERROR_TRAILER, toWireStatus } from '../common/wire-status.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';
import { STREAM_METADATA } from './actor-connection.js';
import { SESSION_WINDOW_BYTES, STREAM_WINDOW_BYTES } from './actor-stream.js';
import { BatchWriter, microtaskScheduler } from './batch-writer.js';
import type { CallExecutor, StreamSink } from './call-executor.js';
import { CallScope, cancelError } from './call-scope.js';
import { ChunkAssembler, splitPayload } from './chunks.js';
import { decodeArgs, encode, type HandleFactory } from './codec.js';
import { CONNECT_PATH, Deframer, framed, GRPC_CONTENT_TYPE, headerValue } from './grpc-framing.js';

export interface HostedActor {
  actorId: string;
  incarnation: number;
  executor: CallExecutor;
  handleFactory: HandleFactory;
  onCall?: (method: string, seconds: number, ok: boolean) => void;
}

export interface ActorServerGuard {
  token: string;
  serverName: () => string;
}

const GRPC_UNIMPLEMENTED = 12;

/** Ends a stream with only headers carrying the error's gRPC status (trailers-only). */
function respondWithError(stream: http2.ServerHttp2Stream, err: Error): void {
  const status = toWireStatus(err);
  if (stream.headersSent || stream.destroyed) {
    stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
    return;
  }
  stream.respond(
    {
      ':status': 200,
      'content-type': GRPC_CONTENT_TYPE,
      'grpc-status': String(status.code),
      'grpc-message': encodeURIComponent(status.details),
      [ERROR_TRAILER]: status.errorTrailer.toString('base64'),
    },
    { endStream: true },
  );
}

export class ActorServer {
  private readonly server = http2.createServer({ settings: { initialWindowSize: STREAM_WINDOW_BYTES } });
  private readonly sessions = new Set<http2.Http2Session>();
  private readonly streams = new Set<http2.ServerHttp2Stream>();
  private actor?: HostedActor;
  private accepting = true;
  port = 0;

  constructor(private readonly guard: ActorServerGuard) {
    this.server.on('session', (session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
      session.on('error', () => {});
      session.setLocalWindowSize(SESSION_WINDOW_BYTES);
    });
    this.server.on('stream', (stream, headers) => this.onStream(stream, headers));
  }

  bind(host: string): Promise<number> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, host, () => {
        this.port = (this.server.address() as AddressInfo).port;
        resolve(this.port);
      });
    });
  }

  attach(actor: HostedActor): void {
    this.actor = actor;
  }

  /** Stops taking streams, lets queued calls finish, then closes every stream and session. */
  async drain(graceMs: number): Promise<void> {
    this.accepting = false;
    if (this.actor) {
      await Promise.race([this.actor.executor.idle(), new Promise((r) => setTimeout(r, graceMs).unref())]);
    }
    // Give the last replies a turn of the event loop to be written.
    await new Promise((r) => setImmediate(r));
    for (const stream of this.streams) if (!stream.destroyed) stream.end();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 500);
      timer.unref();
      this.server.close(() => {
        clearTimeout(timer);
        resolve();
      });
      for (const session of this.sessions) session.close();
    });
  }

  private onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    stream.on('error', () => {});
    if (headers[':path'] !== CONNECT_PATH) {
      const err = new NotFoundError(`unknown method ${headers[':path']}`);
      const status = toWireStatus(err);
      stream.respond(
        {
          ':status': 200,
          'content-type': GRPC_CONTENT_TYPE,
          'grpc-status': String(GRPC_UNIMPLEMENTED),
          'grpc-message': encodeURIComponent(status.details),
        },
        { endStream: true },
      );
      return;
    }
    if (!tokenMatches(headerValue(headers, 'authorization'), this.guard.token)) {
      respondWithError(stream, unauthenticated(this.guard.serverName()));
      return;
    }
    const actor = this.actor;
    const wantedId = headerValue(headers, STREAM_METADATA.actorId);
    const wantedIncarnation = Number(headerValue(headers, STREAM_METADATA.incarnation) || -1);
    if (!actor || !this.accepting) {
      respondWithError(
        stream,
        new UnavailableError(`actor ${wantedId} is not serving at ${this.guard.serverName()}`),
      );
      return;
    }
    if (actor.actorId !== wantedId || actor.incarnation !== wantedIncarnation) {
      // The address now belongs to another actor (or another incarnation): the caller must
      // ask the head again.
      respondWithError(
        stream,
        new NotFoundError(`actor ${wantedId} (incarnation ${wantedIncarnation}) is not served here`),
      );
      return;
    }
    stream.respond({ ':status': 200, 'content-type': GRPC_CONTENT_TYPE }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
    this.streams.add(stream);
    const connect = protos().clawray.v1.ActorService.service.Connect;
    const writer = new BatchWriter<m.Reply>(
      {
        write: (replies) => {
          let ok = true;
          for (const part of framed(connect.responseSerialize({ replies }))) ok = stream.write(part) && ok;
          return ok;
        },
        onceDrain: (cb) => stream.once('drain', cb),
      },
      (r) => (r.result as Buffer | undefined)?.length ?? 64,
      microtaskScheduler,
    );
    const deframer = new Deframer();
    const assembler = new ChunkAssembler();
    // Chunked arguments: the method name (and a stream's window) ride on the first chunk only.
    const chunkedMethods = new Map<number, { method: string; stream: number }>();
    // Calls of this stream that have not replied yet, for cancel frames and a caller that leaves.
    const inFlight = new Map<number, CallScope>();
    // Streamed calls of this stream that have not ended, for the caller's credit frames.
    const flows = new Map<number, StreamFlow>();
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      this.streams.delete(stream);
      writer.close();
      assembler.clear();
      // The caller is gone (died, closed its client, or lost the connection): nobody waits for
      // these calls any more.
      for (const scope of inFlight.values()) scope.cancel(cancelError('caller-gone', scope, actor.actorId));
      inFlight.clear();
      flows.clear();
    };
    stream.once('close', close);
    stream.once('aborted', close);
    stream.once('end', () => {
      // The caller half-closed; finish the stream once replies in progress are out.
      void actor.executor.idle().then(() => setImmediate(() => open && !stream.destroyed && stream.end()));
    });
    stream.on('data', (chunk: Buffer) => {
      let messages: Buffer[];
      try {
        messages = deframer.push(chunk);
      } catch {
        close();
        stream.close(http2.constants.NGHTTP2_PROTOCOL_ERROR);
        return;
      }
      for (const message of messages) {
        const frame = connect.requestDeserialize(message) as m.CallFrame__Output;
        for (const call of frame.calls) {
          if (call.cancel !== 'CALL_CANCEL_NONE') {
            const scope = inFlight.get(call.callId);
            const why = call.cancel === 'CALL_CANCEL_DEADLINE' ? 'deadline' : 'caller';
            scope?.cancel(cancelError(why, scope, actor.actorId));
            continue;
          }
          if (!call.stream && call.credit > 0 && !call.method && call.args.length === 0) {
            flows.get(call.callId)?.grant(call.credit);
            continue;
          }
          const whole = assembler.add(call.callId, call.args, call.more);
          if (!whole) {
            if (call.method)
              chunkedMethods.set(call.callId, { method: call.method, stream: call.stream ? call.credit : 0 });
            continue;
          }
          let method = call.method;
          let window = call.stream ? call.credit : 0;
          if (!method) {
            const first = chunkedMethods.get(call.callId);
            method = first?.method ?? '';
            window = first?.stream ?? 0;
            chunkedMethods.delete(call.callId);
          }
          const scope = new CallScope(method, call.callId);
          inFlight.set(call.callId, scope);
          let flow: StreamFlow | undefined;
          if (window > 0) {
            flow = new StreamFlow(window, scope);
            flows.set(call.callId, flow);
          }
          this.dispatch(
            actor,
            scope,
            whole,
            writer,
            () => {
              inFlight.delete(call.callId);
              flows.delete(call.callId);
              return open && !scope.cancelled;
            },
            flow && { flow, wanted: () => open && !scope.cancelled },
          );
        }
      }
    });
  }

  /**
   * Runs one call; `settle` is told when it replies and says whether the reply is wanted. A
   * streamed call (`streamed`) sends each item as it comes, within the caller's credit.
   */
  private dispatch(
    actor: HostedActor,
    scope: CallScope,
    argBytes: Buffer,
    writer: BatchWriter<m.Reply>,
    settle: () => boolean,
    streamed?: { flow: StreamFlow; wanted: () => boolean },
  ): void {
    const { method, callId } = scope;
    const started = actor.onCall ? performance.now() : 0;
    const reply = (result: { value: unknown } | { error: m.ErrorInfo }) => {
      actor.onCall?.(method, (performance.now() - started) / 1000, !('error' in result));
      // A cancelled call's caller has stopped waiting: its reply would only cost bandwidth.
      if (!settle()) return;
      if ('error' in result) {
        writer.push({ callId, result: Buffer.alloc(0), more: false, error: result.error });
        return;
      }
      let bytes: Buffer;
      try {
        bytes = encode(result.value);
      } catch (err) {
        const error = new TypeError(`the result of ${method} cannot be sent back: ${(err as Error).message}`);
        writer.push({ callId, result: Buffer.alloc(0), more: false, error: toErrorInfo(error) });
        return;
      }
      const chunks = splitPayload(bytes);
      for (let i = 0; i < chunks.length; i++) {
        writer.push({ callId, result: chunks[i], more: i < chunks.length - 1 });
      }
    };
    let args: unknown[];
    try {
      args = decodeArgs(argBytes, actor.handleFactory);
    } catch (err) {
      reply({
        error: toErrorInfo(
          new TypeError(`cannot decode the arguments of ${method}: ${(err as Error).message}`),
        ),
      });
      return;
    }
    const stream: StreamSink | undefined = streamed && {
      item: (value) => {
        if (!streamed.wanted()) return;
        let bytes: Buffer;
        try {
          bytes = encode(value);
        } catch (err) {
          throw new TypeError(`an item of ${method} cannot be sent back: ${(err as Error).message}`);
        }
        const chunks = splitPayload(bytes);
        for (let i = 0; i < chunks.length; i++) {
          writer.push({ callId, result: chunks[i], more: i < chunks.length - 1, item: true });
        }
        return streamed.flow.spend();
      },
    };
    actor.executor.submit({ method, args, done: reply, scope, ...(stream ? { stream } : {}) });
  }
}

/**
 * The credit of one streamed call: items the actor may still send before the caller takes
 * more. Spending the last one makes the executor wait (it stops pulling from the generator)
 * until credit comes back or the call is cancelled.
 */
class StreamFlow {
  private waiter?: () => void;

  constructor(
    private credit: number,
    private readonly scope: CallScope,
  ) {}

  /** One item sent; resolves when the next one may be pulled. */
  spend(): Promise<void> | undefined {
    this.credit--;
    if (this.credit > 0 || this.scope.cancelled) return undefined;
    return new Promise<void>((resolve) => {
      const signal = this.scope.signal;
      const done = () => {
        signal.removeEventListener('abort', done);
        this.waiter = undefined;
        resolve();
      };
      this.waiter = done;
      signal.addEventListener('abort', done, { once: true });
    });
  }

  grant(count: number): void {
    this.credit += count;
    if (this.credit > 0) this.waiter?.();
  }
}
