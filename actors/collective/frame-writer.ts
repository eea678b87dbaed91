/**
 * The sending end of a ring link (the socket the next rank dialled, link.ts): frames go out in
 * the order they were queued, as fast as the kernel takes them, and wait for 'drain' when its
 * buffer is full. A payload is a view of the caller's buffer, never copied in JS.
 */
import type net from 'node:net';
import { encodeHeader } from './frame-codec.js';

interface Outgoing {
  opId: number;
  step: number;
  sub: number;
  bytes: Uint8Array;
}

export class FrameWriter {
  private socket?: net.Socket;
  private readonly queue: Outgoing[] = [];
  private head = 0;
  private waitingDrain = false;
  private stopped = false;

  /** `sent(opId)` runs once the kernel took a frame of operation `opId`. */
  constructor(private readonly sent: (opId: number) => void) {}

  /** Starts writing to `socket` (the accepted link); frames queued before go out now. */
  attach(socket: net.Socket): void {
    this.socket = socket;
    socket.on('drain', () => {
      this.waitingDrain = false;
      this.flush();
    });
  }

  send(opId: number, step: number, sub: number, bytes: Uint8Array): void {
    this.queue.push({ opId, step, sub, bytes });
    this.flush();
  }

  flush(): void {
    const socket = this.socket;
    if (!socket || this.stopped) return;
    while (!this.waitingDrain && this.head < this.queue.length) {
      const frame = this.queue[this.head++]!;
      const header = encodeHeader(frame.opId, frame.step, frame.sub, frame.bytes.length);
      const sent = (err?: Error | null): void => {
        if (err) return; // 'error'/'close' fail the group
        this.sent(frame.opId);
      };
      // The kernel copies the payload out of the caller's buffer (writev of header and payload).
      let ok: boolean;
      if (frame.bytes.length === 0) ok = socket.write(header, sent);
      else {
        socket.cork();
        socket.write(header);
        ok = socket.write(frame.bytes, sent);
        socket.uncork();
      }
      if (!ok) this.waitingDrain = true;
    }
    if (this.head === this.queue.length) {
      this.queue.length = 0;
      this.head = 0;
    }
  }

  /**
   * Nothing more is sent, except `last` (an abort frame) in place of whatever was queued; the
   * socket then ends.
   */
  stop(last?: Buffer): void {
    this.stopped = true;
    const out = this.socket;
    if (!out || out.destroyed || !last) return;
    this.queue.length = 0;
    this.head = 0;
    out.write(last);
    out.end();
    // If the next rank does not read (it is stuck too), do not keep the socket forever.
    setTimeout(() => out.destroy(), 2000).unref();
  }
}
