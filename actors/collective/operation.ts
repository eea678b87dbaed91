/**
 * The collective operation in flight on a rank (one at a time): the frames it still expects, in
 * order (where each one's payload lands and what runs once it is in), and how many of its sends
 * the kernel has yet to take. It completes when both run out, and fails when neither moves for
 * the group's timeout. `fillRingOperation` builds one from a ring schedule (ring-schedule.ts);
 * the shared-memory all-reduce builds its own (shm-path.ts).
 */
import { type ExpectedFrame, type FrameHeader, headerMismatch } from './frame-codec.js';
import type { ReduceKernel } from './reduce-kernel.js';
import type { RingSchedule } from './ring-schedule.js';

export interface RecvSlot extends ExpectedFrame {
  /** Where the payload bytes go (`bytes` long). */
  dest: Uint8Array;
  /** Run once the payload is in. */
  done: () => void;
}

export interface Operation {
  id: number;
  recvs: RecvSlot[];
  recvIndex: number;
  sendsLeft: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** Queues one frame to the next rank; `bytes` is sent as it is then (a view, not a copy). */
export type SendFrame = (opId: number, step: number, sub: number, bytes: Uint8Array) => void;

export const EMPTY = new Uint8Array(0);

const bytesOf = (buf: Float32Array, start: number, end: number): Uint8Array =>
  new Uint8Array(buf.buffer, buf.byteOffset + start * 4, (end - start) * 4);

/**
 * Fills `op` from `schedule` over `buffer` and queues its first sends. A reduced frame lands in
 * the kernel's input and is added into the buffer (divided by `divideBy` on the last addition:
 * a mean); a copied one is read straight into place. Either is sent on from the buffer.
 */
export function fillRingOperation(
  op: Operation,
  schedule: RingSchedule,
  buffer: Float32Array,
  send: SendFrame,
  kernel?: ReduceKernel,
  divideBy = 1,
): void {
  op.sendsLeft += schedule.sends;
  for (const { step, sub, start: s, end: e, kind, forward } of schedule.receives) {
    const bytes = (e - s) * 4;
    if (kind === 'copy') {
      const dest = bytesOf(buffer, s, e);
      const done = forward >= 0 ? (): void => send(op.id, forward, sub, dest) : () => {};
      op.recvs.push({ step, sub, bytes, dest, done });
      continue;
    }
    // The previous rank's partial sum lands in the kernel's input and is added into ours.
    const k = kernel!;
    const divide = kind === 'reduce-last' && divideBy !== 1;
    const sendOn = forward >= 0 ? (): void => send(op.id, forward, sub, bytesOf(buffer, s, e)) : () => {};
    op.recvs.push({
      step,
      sub,
      bytes,
      dest: k.src.subarray(0, bytes),
      done: () => {
        if (divide) k.addDivideInto(buffer, s, e - s, divideBy);
        else k.addInto(buffer, s, e - s);
        sendOn();
      },
    });
  }
  for (const { step, sub, start, end } of schedule.initial)
    send(op.id, step, sub, bytesOf(buffer, start, end));
}

export interface OperationHooks {
  timeoutMs: number;
  /** The previous and the next rank: a stalled operation waits on one of them. */
  prev: number;
  next: number;
  /** Nothing moved for `timeoutMs`: the operation waits on rank `waitingOn`. */
  stalled(waitingOn: number): void;
  /** A frame the operation does not expect came. */
  protocolError(detail: string): void;
}

export class CurrentOperation {
  private counter = 0;
  private op?: Operation;
  /** The slot the frame being read belongs to. */
  private receiving?: RecvSlot;
  private timer?: NodeJS.Timeout;

  constructor(private readonly hooks: OperationHooks) {}

  /**
   * Starts the next operation: `build` fills it and queues its first sends, `started` runs once
   * it is current. Resolves once every frame is in and every send taken.
   */
  start(build: (op: Operation) => void, started: () => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const op: Operation = {
        id: ++this.counter >>> 0,
        recvs: [],
        recvIndex: 0,
        sendsLeft: 0,
        resolve,
        reject,
      };
      this.op = op;
      build(op);
      this.touch();
      started();
      this.maybeFinish();
    });
  }

  /** Rejects the operation in flight (if any) with `err`; nothing more of it runs. */
  abort(err: Error): void {
    this.clearTimer();
    const op = this.op;
    this.op = undefined;
    op?.reject(err);
  }

  /** Bytes arrived: the operation moves. */
  activity(): void {
    if (this.op) this.touch();
  }

  /**
   * Where the payload of `header` goes: the next slot, when the header matches it; 'later' (when
   * `mayWait`) for a frame of the next operation, which waits until this rank starts it (flow
   * control holds the sender back meanwhile).
   */
  place(header: FrameHeader, mayWait: boolean): Uint8Array | 'later' | undefined {
    const op = this.op;
    if (mayWait && (!op || header.opId !== op.id)) {
      if (!op || header.opId === (op.id + 1) >>> 0) return 'later';
      this.hooks.protocolError(`frame of operation ${header.opId} during operation ${op.id}`);
      return undefined;
    }
    const slot = op && op.id === header.opId ? op.recvs[op.recvIndex] : undefined;
    const mismatch = headerMismatch(header, slot);
    if (mismatch) {
      this.hooks.protocolError(mismatch);
      return undefined;
    }
    this.receiving = slot;
    return slot!.dest;
  }

  /** The payload `place` placed is in. */
  received(): void {
    const slot = this.receiving!;
    this.receiving = undefined;
    if (this.op) this.op.recvIndex++;
    slot.done();
    this.maybeFinish();
  }

  /** The kernel took a frame of operation `opId`. */
  sent(opId: number): void {
    const op = this.op;
    if (op && op.id === opId) {
      op.sendsLeft--;
      this.touch();
      this.maybeFinish();
    }
  }

  private touch(): void {
    this.clearTimer();
    if (!this.op) return;
    this.timer = setTimeout(() => {
      const { prev, next } = this.hooks;
      this.hooks.stalled(this.op && this.op.recvIndex < this.op.recvs.length ? prev : next);
    }, this.hooks.timeoutMs);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private maybeFinish(): void {
    const op = this.op;
    if (!op || op.recvIndex < op.recvs.length || op.sendsLeft > 0) return;
    this.op = undefined;
    this.clearTimer();
    op.resolve();
  }
}
