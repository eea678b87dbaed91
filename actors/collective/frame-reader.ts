/**
 * The receiving end of a ring link: a state machine driven by node:net's `onread` option on the
 * socket this rank dialled (link.ts), reading the handshake reply and then frames.
 *
 * node:net calls `nextReadBuffer` after every read (and once on connect) for the buffer the
 * next read fills, then `onRead` with the byte count. Every buffer handed out is exactly the
 * rest of what the current state expects (4 bytes of reply length, a 16-byte header, the rest
 * of a frame's payload), so a read never spans two frames and needs no queue, and a payload
 * lands straight in its destination (the caller's buffer for the all-gather, the reduce
 * kernel's input for the reduce-scatter): no Buffer per read and no copy.
 */
import {
  decodeHeader,
  type FrameHeader,
  HEADER_BYTES,
  isAbort,
  MAX_ABORT_REASON_BYTES,
} from './frame-codec.js';
import { decodeReply, type HandshakeReply, MAX_HANDSHAKE_BYTES } from './handshake.js';

/** What the reader asks and tells the group that owns the link. */
export interface FrameEvents {
  /** Bytes arrived from the previous rank. */
  activity(): void;
  /**
   * Where the payload of `header` goes. 'later' (only when `mayWait`): a frame of the operation
   * after the current one, whose place is asked again on `resume`; undefined: a frame nobody
   * expects (the owner reported it).
   */
  place(header: FrameHeader, mayWait: boolean): Uint8Array | 'later' | undefined;
  /** The payload last placed is in. */
  received(): void;
  /** An abort frame came: rank `blamed` failed for `reason`. */
  aborted(blamed: number, reason: string): void;
  /** Bytes came that no frame expects. */
  protocolError(detail: string): void;
}

/** Where reads go while the next operation's frame waits for this rank to start it. */
const STAGING_BYTES = 64 * 1024;

type Phase = 'reply-len' | 'reply-body' | 'header' | 'payload';

export class FrameReader {
  private phase: Phase = 'reply-len';
  private failed = false;
  private closed = false;
  /** The buffer the next read lands in (what `nextReadBuffer` last handed out). */
  private target: Uint8Array = new Uint8Array(0);
  private targetIsStaging = false;
  private readonly staging = Buffer.allocUnsafe(STAGING_BYTES);
  private readonly replyLen = Buffer.alloc(4);
  private replyBody = Buffer.alloc(0);
  private replyFilled = 0;
  private onReply?: (value: HandshakeReply) => void;
  private readonly header = Buffer.alloc(HEADER_BYTES);
  private headerFilled = 0;
  /** The header just read (one object, refilled per frame). */
  private readonly decoded: FrameHeader = { opId: 0, step: 0, sub: 0, bytes: 0 };
  /** Where the current frame's payload goes, and how much of it is in. */
  private dest?: Uint8Array;
  private written = 0;
  /** The blamed rank, while the current frame is an abort. */
  private abortFrom?: number;
  /** A header of the operation after the current one, read before this rank started it. */
  private pending?: FrameHeader;
  private paused = false;

  constructor(private readonly events: FrameEvents) {}

  /** Starts over on a new connection: its first message is the handshake reply. */
  expectReply(): Promise<HandshakeReply> {
    this.phase = 'reply-len';
    this.replyFilled = 0;
    return new Promise<HandshakeReply>((resolve) => {
      this.onReply = resolve;
    });
  }

  /** The group failed: only an abort frame is still read. */
  fail(): void {
    this.failed = true;
  }

  /** The group closed: whatever arrives is ignored. */
  close(): void {
    this.closed = true;
  }

  /**
   * A new operation began: places the frame that waited for it. True when the socket, paused
   * for that frame, should read on.
   */
  resume(): boolean {
    const pending = this.pending;
    this.pending = undefined;
    if (pending) this.startFrame(pending, false);
    if (!this.paused || this.failed) return false;
    this.paused = false;
    return true;
  }

  /** Exactly the rest of what the receive state expects; undefined while the frame is unknown. */
  private currentTarget(): Uint8Array | undefined {
    switch (this.phase) {
      case 'reply-len':
        return this.replyLen.subarray(this.replyFilled);
      case 'reply-body':
        return this.replyBody.subarray(this.replyFilled);
      case 'header':
        return this.header.subarray(this.headerFilled);
      case 'payload':
        return this.dest?.subarray(this.written);
    }
  }

  nextReadBuffer(): Uint8Array {
    let target = this.currentTarget();
    // A zero-length read buffer makes libuv fail the read (ENOBUFS); every state expects at
    // least one byte, so this only guards. While the frame is unknown (the header of an
    // operation this rank has not started; reading is paused until it does), the next read
    // lands in `staging`, no longer than that frame, and is copied into place.
    this.targetIsStaging = target === undefined || target.length === 0;
    if (this.targetIsStaging) {
      const left = this.pending?.bytes ?? 1;
      target = this.staging.subarray(0, Math.max(1, Math.min(left, STAGING_BYTES)));
    }
    this.target = target!;
    return target!;
  }

  /** Returns false to pause the socket (a frame of the operation after this one, or a failure). */
  onRead(bytes: number): boolean {
    if (this.closed) return true;
    this.events.activity();
    if (this.targetIsStaging) {
      const real = this.currentTarget();
      if (!real || real.length < bytes) {
        if (!this.failed) this.events.protocolError(`${bytes} bytes arrived that no frame expects`);
        return false;
      }
      real.set(this.target.subarray(0, bytes));
    }
    switch (this.phase) {
      case 'reply-len':
        this.replyFilled += bytes;
        if (this.replyFilled === 4) {
          const len = this.replyLen.readUInt32LE(0);
          if (len > MAX_HANDSHAKE_BYTES) {
            // A refusal: the dialler drops the connection.
            this.onReply?.({ ok: false, error: `handshake reply too large (${len} bytes)` });
            return false;
          }
          this.replyBody = Buffer.alloc(len);
          this.replyFilled = 0;
          this.phase = 'reply-body';
          if (len === 0) return this.replyDone();
        }
        return true;
      case 'reply-body':
        this.replyFilled += bytes;
        if (this.replyFilled === this.replyBody.length) return this.replyDone();
        return true;
      case 'header':
        this.headerFilled += bytes;
        if (this.headerFilled < HEADER_BYTES) return true;
        this.headerFilled = 0;
        return this.onHeader();
      case 'payload':
        if (!this.dest) return false;
        this.written += bytes;
        if (this.written < this.dest.length) return true;
        return this.finishFrame();
    }
  }

  private replyDone(): boolean {
    this.phase = 'header';
    this.onReply?.(decodeReply(this.replyBody));
    this.onReply = undefined;
    return true;
  }

  private onHeader(): boolean {
    const header = decodeHeader(this.header, this.decoded);
    if (isAbort(header)) {
      const reason = Buffer.alloc(Math.min(header.bytes, MAX_ABORT_REASON_BYTES));
      if (reason.length === 0) {
        this.events.aborted(header.sub, '');
        return false;
      }
      this.abortFrom = header.sub;
      this.dest = reason;
      this.written = 0;
      this.phase = 'payload';
      return true;
    }
    if (this.failed) return false;
    return this.startFrame(header, true);
  }

  private startFrame(header: FrameHeader, mayWait: boolean): boolean {
    const dest = this.events.place(header, mayWait);
    if (dest === 'later') {
      // Flow control holds the sender back until this rank starts that operation.
      this.pending = { ...header };
      this.phase = 'payload';
      this.paused = true;
      return false;
    }
    if (!dest) return false;
    this.dest = dest;
    this.written = 0;
    this.phase = 'payload';
    if (dest.length === 0) return this.finishFrame();
    return true;
  }

  private finishFrame(): boolean {
    const dest = this.dest!;
    const abortFrom = this.abortFrom;
    this.dest = undefined;
    this.abortFrom = undefined;
    this.phase = 'header';
    if (abortFrom === undefined) this.events.received();
    else this.events.aborted(abortFrom, Buffer.from(dest).toString('utf8'));
    return !this.failed && !this.closed;
  }
}
