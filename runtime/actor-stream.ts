/**
 * The caller's end of one actor call stream: a gRPC `ActorService/Connect` call made with
 * node:http2 (see grpc-framing.ts for why not grpc-js here). It reports the actor's
 * acceptance, each reply frame, and exactly one close with the reason.
 */
import http2 from 'node:http2';
import { UnavailableError } from '../common/errors.js';
import { ERROR_TRAILER, fromWireStatus } from '../common/wire-status.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';
import { binHeader, CONNECT_PATH, Deframer, framed, GRPC_CONTENT_TYPE, headerValue } from './grpc-framing.js';

export interface StreamHandlers {
  /** The actor process accepted the stream (response headers arrived). */
  onConfirmed(): void;
  onFrame(frame: m.ReplyFrame__Output): void;
  onClosed(err: Error): void;
}

/** Flow-control windows sized for multi-MiB payload chunks rather than HTTP/2's 64 KiB default. */
export const STREAM_WINDOW_BYTES = 8 * 1024 * 1024;
export const SESSION_WINDOW_BYTES = 32 * 1024 * 1024;

const KEEPALIVE_MS = 10_000;
/**
 * How long a ping may go unanswered. An actor host answers pings on its event loop, which a
 * trainer step or a model export holds for seconds at a time (as a Ray actor's compute holds
 * its thread), so this is generous: a dead process is reported by the head, not by this.
 */
const PING_TIMEOUT_MS = 30_000;

/** Opens an HTTP/2 session to an actor host, pinged while open so a vanished peer is noticed. */
export function openActorSession(
  address: string,
  onGone: () => void,
  timing: { keepaliveMs: number; pingTimeoutMs: number } = {
    keepaliveMs: KEEPALIVE_MS,
    pingTimeoutMs: PING_TIMEOUT_MS,
  },
): http2.ClientHttp2Session {
  const session = http2.connect(`http://${address}`, {
    settings: { initialWindowSize: STREAM_WINDOW_BYTES },
  });
  session.once('connect', () => session.setLocalWindowSize(SESSION_WINDOW_BYTES));
  const timer = setInterval(() => {
    if (session.closed || session.destroyed) return;
    let acked = false;
    const deadline = setTimeout(() => {
      // When this process's own loop was blocked, the ack may be read but not yet handled:
      // timers run before I/O, so decide only after the I/O phase that follows.
      setImmediate(() => {
        if (!acked) session.destroy(new Error(`actor host ${address} stopped answering pings`));
      });
    }, timing.pingTimeoutMs);
    deadline.unref();
    const done = () => {
      acked = true;
      clearTimeout(deadline);
    };
    try {
      session.ping(done);
    } catch {
      done();
    }
  }, timing.keepaliveMs);
  timer.unref();
  const gone = () => {
    clearInterval(timer);
    onGone();
  };
  session.on('error', () => {});
  session.once('close', gone);
  session.once('goaway', gone);
  session.unref();
  return session;
}

export class ActorStream {
  private readonly request?: http2.ClientHttp2Stream;
  private readonly deframer = new Deframer();
  private closed = false;
  private failure?: Error;

  constructor(
    session: http2.ClientHttp2Session,
    private readonly target: string,
    metadata: Record<string, string>,
    handlers: StreamHandlers,
  ) {
    const connect = protos().clawray.v1.ActorService.service.Connect;
    const headers = {
      ':method': 'POST',
      ':path': CONNECT_PATH,
      'content-type': GRPC_CONTENT_TYPE,
      te: 'trailers',
      ...metadata,
    };
    try {
      this.request = session.request(headers);
    } catch (err) {
      // The session is going away (GOAWAY, closing): report a closed stream, asynchronously
      // like every other close, and let the caller reconnect.
      this.closed = true;
      const failure = new UnavailableError(`${target}: ${(err as Error).message}`, {
        cause: err,
        fields: { target },
      });
      queueMicrotask(() => handlers.onClosed(failure));
      return;
    }
    const request = this.request;
    request.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) this.recordStatus(headers);
      else handlers.onConfirmed();
    });
    request.on('data', (chunk: Buffer) => {
      if (this.closed) return;
      let messages: Buffer[];
      try {
        messages = this.deframer.push(chunk);
      } catch (err) {
        this.failure = err as Error;
        request.close(http2.constants.NGHTTP2_PROTOCOL_ERROR);
        return;
      }
      for (const message of messages)
        handlers.onFrame(connect.responseDeserialize(message) as m.ReplyFrame__Output);
    });
    request.on('trailers', (trailers) => this.recordStatus(trailers));
    request.on('error', (err) => {
      this.failure ??= new UnavailableError(`${target}: ${err.message}`, { cause: err, fields: { target } });
    });
    request.once('close', () => {
      this.closed = true;
      handlers.onClosed(
        this.failure ?? new UnavailableError(`${target} closed the call stream`, { fields: { target } }),
      );
    });
  }

  /** Sends one frame; false means wait for `onceDrain`. */
  write(frame: m.CallFrame): boolean {
    if (this.closed || !this.request) return true;
    const connect = protos().clawray.v1.ActorService.service.Connect;
    let ok = true;
    for (const part of framed(connect.requestSerialize(frame))) ok = this.request.write(part) && ok;
    return ok;
  }

  onceDrain(callback: () => void): void {
    if (this.closed || !this.request) callback();
    else this.request.once('drain', callback);
  }

  cancel(): void {
    if (!this.closed) this.request?.close(http2.constants.NGHTTP2_CANCEL);
  }

  private recordStatus(headers: http2.IncomingHttpHeaders): void {
    const code = Number(headerValue(headers, 'grpc-status') || 0);
    if (code === 0) return;
    this.failure = fromWireStatus(
      {
        code,
        details: decodeURIComponent(headerValue(headers, 'grpc-message')),
        errorTrailer: binHeader(headers, ERROR_TRAILER),
      },
      this.target,
    );
  }
}
