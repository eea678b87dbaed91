/**
 * The caller's side of one actor: a persistent bidirectional stream straight to the actor's
 * process (never through the head), carrying every call this process makes to that actor,
 * pipelined and batched. When the stream breaks it asks the head what became of the actor and
 * decides each pending call's fate: resent (retries left), `ActorUnavailableError`
 * (restarting, or outcome unknown), or `ActorDiedError` (dead for good).
 */
import type http2 from 'node:http2';
import { bearer } from '../common/auth.js';
import { Backoff, sleep } from '../common/backoff.js';
import {
  ActorDiedError,
  ActorUnavailableError,
  CallCancelledError,
  ClawrayError,
  DeadlineExceededError,
  fromErrorInfo,
  NotFoundError,
  PendingCallsLimitExceededError,
} from '../common/errors.js';
import type * as m from '../proto/messages.js';
import { ActorStream } from './actor-stream.js';
import { BatchWriter, microtaskScheduler } from './batch-writer.js';
import type { CallOptions } from './call-options.js';
import { ChunkAssembler, splitPayload } from './chunks.js';
import { decode, encodeArgs, type HandleFactory } from './codec.js';
import type { HeadClient } from './head-client.js';
import { holdLoopForCall } from './loop-hold.js';
import { STREAM_CREDIT_BATCH, STREAM_WINDOW_ITEMS, StreamedCall } from './streamed-call.js';

export interface ConnectionHost {
  readonly head: HeadClient;
  readonly token: string;
  readonly callerId: string;
  /** The HTTP/2 session to an actor host, shared by every stream to that address. */
  actorSession(address: string): http2.ClientHttp2Session;
  readonly handleFactory: HandleFactory;
}

export interface CallPolicy {
  maxTaskRetries: number;
  maxPendingCalls: number;
}

interface PendingCall {
  id: number;
  method: string;
  args: Buffer;
  retriesLeft: number;
  sent: boolean;
  resolve(value: unknown): void;
  reject(err: Error): void;
  /** A streamed call: where its items go, and the credit it owes the actor. */
  stream?: { receiver: StreamedCall<unknown>; consumed: number };
}

const NO_ARGS = Buffer.alloc(0);

/** Metadata keys a caller sends when opening a stream. */
export const STREAM_METADATA = {
  actorId: 'clawray-actor-id',
  incarnation: 'clawray-incarnation',
  callerId: 'clawray-caller-id',
} as const;

export class ActorConnection {
  private readonly pending = new Map<number, PendingCall>();
  /** Calls waiting for an open stream, in submission order. */
  private waiting: PendingCall[] = [];
  private nextId = 1;
  private transport?: ActorStream;
  private writer?: BatchWriter<m.Call>;
  private readonly assembler = new ChunkAssembler();
  private recovering = false;
  private address = '';
  private incarnation = -1;
  /** The actor process accepted the current stream (it sent response headers). */
  private confirmed = false;
  private dead?: Error;
  private closed = false;

  constructor(
    private readonly host: ConnectionHost,
    readonly actorId: string,
    private readonly policy: CallPolicy,
  ) {}

  /** Calls `method`; `options` (already validated, see call-options.ts) add a deadline or signal. */
  call(method: string, args: readonly unknown[], options?: CallOptions): Promise<unknown> {
    const refused = this.refusal(method, options);
    if (refused) return Promise.reject(refused);
    return new Promise((resolve, reject) => this.submit(method, args, options, resolve, reject));
  }

  /**
   * Calls `method` as a stream (see streamed-call.ts): its items arrive as the actor's
   * generator yields them, at most STREAM_WINDOW_ITEMS ahead of the consumer. A call that has
   * delivered an item is never resent (its items would repeat): when the connection breaks
   * after one, the stream ends with the actor's fate (ActorDiedError, ActorUnavailableError).
   */
  stream(method: string, args: readonly unknown[], options?: CallOptions): StreamedCall<unknown> {
    let call: PendingCall | undefined;
    const receiver = new StreamedCall<unknown>({
      consumed: (count) => {
        if (!call || !this.pending.has(call.id)) return;
        const flow = call.stream!;
        flow.consumed += count;
        if (flow.consumed < STREAM_CREDIT_BATCH || !call.sent) return;
        this.writer?.push({ callId: call.id, method: '', args: NO_ARGS, more: false, credit: flow.consumed });
        flow.consumed = 0;
      },
      cancel: () => {
        if (call) this.abandon(call, this.closedStreamError(method), 'CALL_CANCEL_BY_CALLER');
      },
    });
    const refused = this.refusal(method, options);
    if (refused) {
      receiver.fail(refused);
      return receiver;
    }
    call = this.submit(
      method,
      args,
      options,
      (value) => receiver.finish(value),
      (err) => receiver.fail(err),
      receiver,
    );
    return receiver;
  }

  /** Why a call cannot even be submitted (dead actor, aborted signal, too many pending). */
  private refusal(method: string, options?: CallOptions): Error | undefined {
    if (this.dead) return this.dead;
    if (options?.signal?.aborted) return this.cancelledError(method, options.signal);
    if (this.policy.maxPendingCalls >= 0 && this.pending.size >= this.policy.maxPendingCalls) {
      return new PendingCallsLimitExceededError(
        `actor ${this.actorId} already has ${this.pending.size} calls pending (maxPendingCalls ${this.policy.maxPendingCalls})`,
        { fields: { actorId: this.actorId, maxPendingCalls: this.policy.maxPendingCalls } },
      );
    }
    return undefined;
  }

  private submit(
    method: string,
    args: readonly unknown[],
    options: CallOptions | undefined,
    resolve: (value: unknown) => void,
    reject: (err: Error) => void,
    receiver?: StreamedCall<unknown>,
  ): PendingCall {
    const id = this.nextId;
    this.nextId = this.nextId >= 0xffffffff ? 1 : this.nextId + 1;
    const release = holdLoopForCall();
    const call: PendingCall = {
      id,
      method,
      args: encodeArgs(args),
      retriesLeft: this.policy.maxTaskRetries,
      sent: false,
      resolve: (value) => {
        release();
        resolve(value);
      },
      reject: (err) => {
        release();
        reject(err);
      },
      ...(receiver ? { stream: { receiver, consumed: 0 } } : {}),
    };
    this.pending.set(id, call);
    if (options) this.watch(call, options);
    if (this.confirmed) this.send(call);
    else {
      this.waiting.push(call);
      // A stream that is open but not yet accepted sends it once accepted; opening another
      // one now would orphan that stream, and with it the reply to a call already sent on it.
      if (!this.transport) this.recover();
    }
    return call;
  }

  /**
   * Arms a call's deadline and signal. Either one rejects the call at once and, when it was
   * sent, sends a cancel frame so the actor's method sees its AbortSignal fire.
   */
  private watch(call: PendingCall, options: CallOptions): void {
    const { deadlineMs, signal } = options;
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () =>
      this.abandon(call, this.cancelledError(call.method, signal!), 'CALL_CANCEL_BY_CALLER');
    if (deadlineMs !== undefined) {
      timer = setTimeout(() => {
        const err = new DeadlineExceededError(
          `call ${call.method} to actor ${this.actorId} exceeded its deadline of ${deadlineMs} ms`,
          { fields: { actorId: this.actorId, method: call.method, deadlineMs } },
        );
        this.abandon(call, err, 'CALL_CANCEL_DEADLINE');
      }, deadlineMs);
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    const stop = () => {
      if (timer) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const { resolve, reject } = call;
    call.resolve = (value) => {
      stop();
      resolve(value);
    };
    call.reject = (err) => {
      stop();
      reject(err);
    };
  }

  /** Gives up on a call: the caller stops waiting and the actor is told to stop. */
  private abandon(call: PendingCall, err: Error, why: NonNullable<m.Call['cancel']>): void {
    if (!this.pending.delete(call.id)) return;
    const waitingAt = this.waiting.indexOf(call);
    if (waitingAt >= 0) this.waiting.splice(waitingAt, 1);
    if (call.sent)
      this.writer?.push({ callId: call.id, method: '', args: NO_ARGS, more: false, cancel: why });
    call.reject(err);
  }

  private closedStreamError(method: string): CallCancelledError {
    return new CallCancelledError(
      `the stream of ${method} from actor ${this.actorId} was closed by its consumer`,
      {
        fields: { actorId: this.actorId, method },
      },
    );
  }

  private cancelledError(method: string, signal: AbortSignal): CallCancelledError {
    const reason: unknown = signal.reason;
    return new CallCancelledError(`call ${method} to actor ${this.actorId} was cancelled by its signal`, {
      cause: reason,
      fields: { actorId: this.actorId, method },
    });
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  close(): void {
    this.closed = true;
    this.teardownStream();
    this.failAll(
      new ActorUnavailableError('the cluster client was closed', { fields: { actorId: this.actorId } }),
    );
  }

  private send(call: PendingCall): void {
    call.sent = true;
    const chunks = splitPayload(call.args);
    for (let i = 0; i < chunks.length; i++) {
      this.writer!.push({
        callId: call.id,
        method: i === 0 ? call.method : '',
        args: chunks[i],
        more: i < chunks.length - 1,
        // The method name, the stream flag and the window ride on the first chunk only.
        ...(i === 0 && call.stream ? { stream: true, credit: STREAM_WINDOW_ITEMS } : {}),
      });
    }
    // A resent stream starts with a fresh window.
    if (call.stream) call.stream.consumed = 0;
  }

  private openStream(address: string, incarnation: number): void {
    this.address = address;
    this.incarnation = incarnation;
    this.confirmed = false;
    const stream: ActorStream = new ActorStream(
      this.host.actorSession(address),
      `actor ${this.actorId} at ${address}`,
      {
        authorization: bearer(this.host.token),
        [STREAM_METADATA.actorId]: this.actorId,
        [STREAM_METADATA.incarnation]: String(incarnation),
        [STREAM_METADATA.callerId]: this.host.callerId,
      },
      {
        // Calls go out only once the actor process has accepted the stream, so a stream to
        // an address that turns out stale does not use up their retries.
        onConfirmed: () => {
          if (this.transport !== stream) return;
          this.confirmed = true;
          const waiting = this.waiting;
          this.waiting = [];
          for (const call of waiting) if (this.pending.has(call.id)) this.send(call);
        },
        onFrame: (frame) => {
          if (this.transport === stream) this.onReplies(frame);
        },
        onClosed: (err) => {
          if (this.transport !== stream) return;
          this.teardownStream();
          if (!this.closed) this.onBroken(err);
        },
      },
    );
    this.transport = stream;
    this.writer = new BatchWriter<m.Call>(
      {
        write: (calls) => stream.write({ calls }),
        onceDrain: (cb) => stream.onceDrain(cb),
      },
      (c) => (c.args as Buffer).length + 32,
      microtaskScheduler,
    );
  }

  private onReplies(frame: m.ReplyFrame__Output): void {
    for (const reply of frame.replies) {
      const bytes = this.assembler.add(reply.callId, reply.result, reply.more);
      if (bytes === undefined) continue;
      const call = this.pending.get(reply.callId);
      if (!call) continue;
      if (reply.item) {
        if (call.stream) this.onItem(call, bytes);
        continue;
      }
      this.pending.delete(reply.callId);
      if (reply.error?.name) {
        call.reject(fromErrorInfo(reply.error));
        continue;
      }
      try {
        call.resolve(decode(bytes, this.host.handleFactory));
      } catch (err) {
        call.reject(err as Error);
      }
    }
  }

  private onItem(call: PendingCall, bytes: Buffer): void {
    // Items have reached the caller: resending the call would repeat them.
    call.retriesLeft = 0;
    let item: unknown;
    try {
      item = decode(bytes, this.host.handleFactory);
    } catch (err) {
      this.abandon(call, err as Error, 'CALL_CANCEL_BY_CALLER');
      return;
    }
    call.stream!.receiver.push(item);
  }

  private teardownStream(): void {
    const stream = this.transport;
    this.transport = undefined;
    this.confirmed = false;
    this.writer?.close();
    this.writer = undefined;
    this.assembler.clear();
    stream?.cancel();
  }

  /** The stream broke: calls that were on it have an unknown outcome. */
  private onBroken(err?: Error): void {
    const inFlight = [...this.pending.values()].filter((c) => c.sent);
    const unknown: PendingCall[] = [];
    for (const call of inFlight) {
      call.sent = false;
      if (call.retriesLeft !== 0) {
        if (call.retriesLeft > 0) call.retriesLeft--;
        this.waiting.push(call);
      } else {
        unknown.push(call);
      }
    }
    this.waiting.sort((a, b) => a.id - b.id);
    this.recover(unknown, err);
  }

  /**
   * Finds where the actor lives now and reopens the stream. `unknown` are calls that were in
   * flight without retries left: they fail once the head tells what happened to the actor.
   */
  private recover(unknown: PendingCall[] = [], cause?: Error): void {
    if (unknown.length > 0) void this.settleUnknown(unknown, this.incarnation, cause);
    if (this.recovering || this.closed) return;
    this.recovering = true;
    void this.recoverLoop().finally(() => {
      this.recovering = false;
      if (!this.writer && !this.dead && !this.closed && this.waiting.length > 0) this.recover();
    });
  }

  private async recoverLoop(): Promise<void> {
    const backoff = new Backoff({ initialMs: 20, maxMs: 500 });
    const staleAddress = this.address;
    const staleIncarnation = this.incarnation;
    while (!this.closed && !this.dead) {
      let info: m.ActorInfo__Output;
      try {
        info = await this.host.head.call('GetActor', { actorId: this.actorId });
      } catch (err) {
        if (err instanceof ClawrayError && !err.retryable) return this.markDead(this.goneError(err));
        await sleep(backoff.next());
        continue;
      }
      if (info.state === 'DEAD') return this.markDead(this.deathError(info));
      if (info.state === 'ALIVE') {
        const sameAsBroken = info.address === staleAddress && info.incarnation === staleIncarnation;
        // The head may not have noticed yet that the process we lost is gone; a stream that
        // immediately breaks again brings us back here after a pause.
        if (sameAsBroken) await sleep(backoff.next());
        if (this.closed || this.dead) return;
        this.openStream(info.address, info.incarnation);
        return;
      }
      await sleep(backoff.next());
    }
  }

  private async settleUnknown(calls: PendingCall[], brokenIncarnation: number, cause?: Error): Promise<void> {
    let error: Error | undefined;
    while (!error && !this.closed) {
      try {
        const info = await this.host.head.call('GetActor', { actorId: this.actorId });
        if (info.state === 'DEAD') error = this.deathError(info);
        else if (info.state !== 'ALIVE' || info.incarnation !== brokenIncarnation || this.confirmed) {
          error = new ActorUnavailableError(
            `actor ${this.actorId} became unavailable (${info.state.toLowerCase()}) while the call was in flight; ` +
              'it may or may not have run (set maxTaskRetries to retry such calls)',
            { cause, fields: { actorId: this.actorId, state: info.state } },
          );
        } else await sleep(100);
      } catch (err) {
        error = err instanceof ClawrayError && !err.retryable ? this.goneError(err) : undefined;
        if (!error) await sleep(200);
      }
    }
    for (const call of calls) {
      if (this.pending.delete(call.id))
        call.reject(error ?? new ActorUnavailableError('the cluster client was closed'));
    }
  }

  private deathError(info: m.ActorInfo__Output): ActorDiedError {
    const cause = info.deathCause?.name ? fromErrorInfo(info.deathCause) : undefined;
    return new ActorDiedError(
      `actor ${info.spec?.className ?? ''} (${this.actorId}) is dead${cause ? `: ${cause.message}` : ''}`,
      { cause, fields: { actorId: this.actorId } },
    );
  }

  /**
   * The head no longer knows the actor: it died long enough ago that its record was dropped
   * (the head keeps a bounded number of dead actors, as Ray's GCS does).
   */
  private goneError(err: ClawrayError): Error {
    if (!(err instanceof NotFoundError)) return err;
    return new ActorDiedError(
      `actor ${this.actorId} is dead (the head no longer keeps its record, so its death cause is unknown)`,
      { cause: err, fields: { actorId: this.actorId } },
    );
  }

  private markDead(err: Error): void {
    this.dead = err;
    this.failAll(err);
  }

  private failAll(err: Error): void {
    const calls = [...this.pending.values()];
    this.pending.clear();
    this.waiting = [];
    for (const call of calls) call.reject(err);
  }
}
