/**
 * The SDK side of ownership (see head/owners.ts): a `Cluster` that creates actors or placement
 * groups keeps one server stream open to the head for as long as it lives. The stream is how
 * the head knows the owner is alive — the OS closes it when the process dies — and how the
 * head tells the owner about its requests that wait for resources. A stream that breaks (the
 * head restarted, the network blinked) is opened again at once with backoff: the head gives
 * the owner a grace period to come back before it releases what the owner holds.
 */
import http2 from 'node:http2';
import { hostname } from 'node:os';
import { bearer } from '../common/auth.js';
import { Backoff, HEAD_RECONNECT_MAX_MS, sleep } from '../common/backoff.js';
import { protos } from '../proto/loader.js';
import type * as m from '../proto/messages.js';
import { Deframer, framed, GRPC_CONTENT_TYPE, headerValue } from './grpc-framing.js';
import type { HeadClient } from './head-client.js';

/**
 * Statuses after which reopening cannot help: UNIMPLEMENTED (a head older than owner sessions,
 * nothing is owned there), INVALID_ARGUMENT and UNAUTHENTICATED (a wrong token: every other call
 * of this client fails with it too, which is where the user sees it).
 */
const FINAL_STATUSES = new Set([12, 3, 16]);
/** How long close() waits for the head to release what the owner holds. */
const CLOSE_DEADLINE_MS = 10_000;
const PATH = '/clawray.v1.HeadService/OpenOwnerSession';
/**
 * Pings on the session: a head that vanished without closing the connection (its host or pod
 * is gone) must be noticed well within the owner grace period, so the stream is reopened to
 * the head that replaces it before that head gives up on this owner.
 */
const PING_EVERY_MS = 5_000;
const PING_TIMEOUT_MS = 10_000;

/**
 * The stream is made with node:http2 rather than grpc-js (the wire is plain gRPC) so that its
 * session can be unref'd: an idle client never holds the process open, as with actor sessions
 * (a script that ends without close() exits, and the head then sees its owner go).
 */
export class OwnerSession {
  private session?: http2.ClientHttp2Session;
  private request?: http2.ClientHttp2Stream;
  private closed = false;
  private running = false;
  private readonly stopSleeping = new AbortController();

  constructor(
    private readonly head: HeadClient,
    private readonly token: string,
    readonly ownerId: string,
    private readonly jobId: string,
    private readonly onEvent: (event: m.OwnerEvent__Output) => void,
  ) {}

  /** Starts keeping the stream open (idempotent). */
  open(): void {
    if (this.running || this.closed) return;
    this.running = true;
    void this.loop();
  }

  /**
   * Ends the session for good: the head kills the non-detached actors and removes the
   * placement groups this owner holds before it answers.
   */
  async close(): Promise<m.CloseOwnerSessionReply__Output | undefined> {
    if (this.closed) return undefined;
    this.closed = true;
    this.stopSleeping.abort();
    if (!this.running) return undefined;
    try {
      return await this.head.call('CloseOwnerSession', this.ownerRequest(), {
        retryForMs: 0,
        deadlineMs: CLOSE_DEADLINE_MS,
      });
    } catch {
      // The head is gone or unreachable: it releases them after the grace period instead.
      return undefined;
    } finally {
      this.request?.close(http2.constants.NGHTTP2_CANCEL);
      this.session?.destroy();
    }
  }

  private ownerRequest(): m.OwnerSessionRequest {
    return { ownerId: this.ownerId, pid: process.pid, hostname: hostname(), jobId: this.jobId };
  }

  private async loop(): Promise<void> {
    const backoff = new Backoff({ initialMs: 50, maxMs: HEAD_RECONNECT_MAX_MS });
    while (!this.closed) {
      const code = await this.runOnce(() => backoff.reset());
      if (FINAL_STATUSES.has(code) || this.closed) return;
      await sleep(backoff.next(), this.stopSleeping.signal).catch(() => {});
    }
  }

  /** One stream, until it ends; resolves with its gRPC status code (-1: the connection failed). */
  private runOnce(onReady: () => void): Promise<number> {
    const method = protos().clawray.v1.HeadService.service.OpenOwnerSession;
    return new Promise((resolve) => {
      let code = -1;
      const session = http2.connect(`http://${this.head.address}`);
      this.session = session;
      session.on('error', () => {});
      session.unref();
      const pinger = setInterval(() => {
        if (session.closed || session.destroyed) return;
        let acked = false;
        const deadline = setTimeout(() => {
          // Timers run before I/O: decide after the I/O phase, in case our own loop was held.
          setImmediate(() => {
            if (!acked) session.destroy(new Error('the head stopped answering pings'));
          });
        }, PING_TIMEOUT_MS);
        deadline.unref();
        try {
          session.ping(() => {
            acked = true;
            clearTimeout(deadline);
          });
        } catch {
          clearTimeout(deadline);
        }
      }, PING_EVERY_MS);
      pinger.unref();
      let request: http2.ClientHttp2Stream;
      try {
        request = session.request({
          ':method': 'POST',
          ':path': PATH,
          'content-type': GRPC_CONTENT_TYPE,
          te: 'trailers',
          authorization: bearer(this.token),
        });
      } catch {
        session.destroy();
        resolve(-1);
        return;
      }
      this.request = request;
      const deframer = new Deframer();
      const status = (headers: http2.IncomingHttpHeaders) => {
        const value = headerValue(headers, 'grpc-status');
        if (value !== '') code = Number(value);
      };
      request.on('response', status);
      request.on('trailers', status);
      request.on('data', (chunk: Buffer) => {
        let messages: Buffer[];
        try {
          messages = deframer.push(chunk);
        } catch {
          request.close(http2.constants.NGHTTP2_PROTOCOL_ERROR);
          return;
        }
        for (const message of messages) {
          const event = method.responseDeserialize(message) as m.OwnerEvent__Output;
          if (event.kind === 'READY') onReady();
          else this.onEvent(event);
        }
      });
      request.on('error', () => {});
      request.once('close', () => {
        clearInterval(pinger);
        session.destroy();
        resolve(code);
      });
      for (const part of framed(method.requestSerialize(this.ownerRequest()))) request.write(part);
      request.end();
    });
  }
}
