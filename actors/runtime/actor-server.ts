/**
 * The actor process's gRPC server. It is bound while the process still waits in the warm pool,
 * so starting an actor costs only importing its module and running its constructor. Each
 * caller's stream gets its replies batched per event-loop turn.
 */
import * as grpc from '@grpc/grpc-js';
import { unauthenticated } from '../../common/auth.js';
import { NotFoundError, toErrorInfo, UnavailableError } from '../../common/errors.js';
import {
  bindServer,
  createServer,
  isAuthorized,
  type ServerGuard,
  shutdownServer,
} from '../../common/grpc-server.js';
import { toServiceError } from '../../common/wire-status.js';
import { protos } from '../../proto/loader.js';
import type * as m from '../../proto/messages.js';
import { STREAM_METADATA } from './actor-connection.js';
import { BatchWriter, microtaskScheduler } from './batch-writer.js';
import type { CallExecutor } from './call-executor.js';
import { ChunkAssembler, splitPayload } from './chunks.js';
import { decodeArgs, encode, type HandleFactory } from './codec.js';

export interface HostedActor {
  actorId: string;
  incarnation: number;
  executor: CallExecutor;
  handleFactory: HandleFactory;
  onCall?: (method: string, seconds: number, ok: boolean) => void;
}

type ServerStream = grpc.ServerDuplexStream<m.CallFrame__Output, m.ReplyFrame>;

export class ActorServer {
  private readonly server = createServer();
  private actor?: HostedActor;
  private readonly streams = new Set<ServerStream>();
  private accepting = true;
  port = 0;

  constructor(private readonly guard: Omit<ServerGuard, 'service'>) {
    this.server.addService(protos().clawray.v1.ActorService.service, {
      Connect: (stream: ServerStream) => this.onConnect(stream),
    });
  }

  async bind(host: string): Promise<number> {
    this.port = await bindServer(this.server, host, 0);
    return this.port;
  }

  attach(actor: HostedActor): void {
    this.actor = actor;
  }

  /** Stops taking streams, lets queued calls finish, then closes the server. */
  async drain(graceMs: number): Promise<void> {
    this.accepting = false;
    if (this.actor) {
      await Promise.race([this.actor.executor.idle(), new Promise((r) => setTimeout(r, graceMs).unref())]);
    }
    // Give the last replies a turn of the event loop to be written.
    await new Promise((r) => setImmediate(r));
    for (const stream of this.streams) stream.end();
    await shutdownServer(this.server, 500);
  }

  private onConnect(stream: ServerStream): void {
    const reject = (err: Error): void => {
      stream.emit('error', toServiceError(err));
    };
    if (!isAuthorized({ ...this.guard, service: 'ActorService' }, stream.metadata)) {
      reject(unauthenticated(this.guard.serverName()));
      return;
    }
    const actor = this.actor;
    const wantedId = String(stream.metadata.get(STREAM_METADATA.actorId)[0] ?? '');
    const wantedIncarnation = Number(stream.metadata.get(STREAM_METADATA.incarnation)[0] ?? -1);
    if (!actor || !this.accepting) {
      reject(new UnavailableError(`actor ${wantedId} is not serving at ${this.guard.serverName()}`));
      return;
    }
    if (actor.actorId !== wantedId || actor.incarnation !== wantedIncarnation) {
      // The address now belongs to another actor (or another incarnation): the caller must
      // ask the head again.
      reject(new NotFoundError(`actor ${wantedId} (incarnation ${wantedIncarnation}) is not served here`));
      return;
    }
    stream.sendMetadata(new grpc.Metadata());
    this.streams.add(stream);
    const writer = new BatchWriter<m.Reply>(
      {
        write: (replies) => stream.write({ replies }),
        onceDrain: (cb) => stream.once('drain', cb),
      },
      (r) => (r.result as Buffer | undefined)?.length ?? 64,
      microtaskScheduler,
    );
    const assembler = new ChunkAssembler();
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      this.streams.delete(stream);
      writer.close();
      assembler.clear();
    };
    stream.on('error', close);
    stream.on('cancelled', close);
    stream.on('end', () => {
      // The caller half-closed; finish the stream once replies in progress are out.
      void actor.executor.idle().then(() => setImmediate(() => stream.end()));
    });
    stream.on('close', close);
    // Chunked arguments: the method name rides on the first chunk only.
    const chunkedMethods = new Map<number, string>();
    stream.on('data', (frame: m.CallFrame__Output) => {
      for (const call of frame.calls) {
        const whole = assembler.add(call.callId, call.args, call.more);
        if (!whole) {
          if (call.method) chunkedMethods.set(call.callId, call.method);
          continue;
        }
        let method = call.method;
        if (!method) {
          method = chunkedMethods.get(call.callId) ?? '';
          chunkedMethods.delete(call.callId);
        }
        this.dispatch(actor, call.callId, method, whole, writer, () => open);
      }
    });
  }

  private dispatch(
    actor: HostedActor,
    callId: number,
    method: string,
    argBytes: Buffer,
    writer: BatchWriter<m.Reply>,
    isOpen: () => boolean,
  ): void {
    const started = actor.onCall ? performance.now() : 0;
    const reply = (result: { value: unknown } | { error: m.ErrorInfo }) => {
      actor.onCall?.(method, (performance.now() - started) / 1000, !('error' in result));
      if (!isOpen()) return;
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
    actor.executor.submit({ method, args, done: reply });
  }
}
