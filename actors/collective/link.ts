/**
 * A rank's two ring links, each opened by the handshake (handshake.ts), over TCP or a Unix
 * socket (transport.ts): it dials the previous rank (rank−1 mod N), the link it receives on
 * (frame-reader.ts), and accepts one connection from the next rank, the link it sends on
 * (frame-writer.ts).
 *
 * The receiving side dials because only a dialled socket can take node:net's `onread` option:
 * every read lands straight in its destination, with no per-read Buffer and no copy out of a
 * queue of chunks; that alone takes loopback TCP from ~1 to ~2.4 GB/s on the dev box.
 */
import net from 'node:net';
import type { CollectiveError } from './errors.js';
import { encodeAbort } from './frame-codec.js';
import { type FrameEvents, FrameReader } from './frame-reader.js';
import { FrameWriter } from './frame-writer.js';
import {
  encodeMessage,
  type HandshakeReply,
  HELLO_MAGIC,
  type Hello,
  readMessage,
  refusal,
} from './handshake.js';
import {
  chooseLink,
  formatAddress,
  type LinkTransport,
  type PeerAddress,
  type TransportOption,
} from './transport.js';

export interface LinkConfig {
  rank: number;
  worldSize: number;
  groupName: string;
  token: string;
  timeoutMs: number;
  error(blamed: number, reason: string, cause?: unknown): CollectiveError;
}

/** What the links report to the group that owns them. */
export interface LinkEvents extends FrameEvents {
  /** The kernel took a frame of operation `opId`. */
  sent(opId: number): void;
  /** The link to neighbour `rank` closed or failed. */
  peerGone(rank: number, what: string): void;
}

export class RingLink {
  private outgoing?: net.Socket;
  private incoming?: net.Socket;
  private sendTransport?: LinkTransport;
  private recvTransport?: LinkTransport;
  private outgoingWaiter?: { resolve: () => void; reject: (err: Error) => void };
  private failure?: Error;
  private closed = false;
  private readonly reader: FrameReader;
  private readonly writer: FrameWriter;

  constructor(
    private readonly config: LinkConfig,
    private readonly events: LinkEvents,
  ) {
    this.reader = new FrameReader(events);
    this.writer = new FrameWriter((opId) => events.sent(opId));
  }

  private get next(): number {
    return (this.config.rank + 1) % this.config.worldSize;
  }

  private get prev(): number {
    return (this.config.rank - 1 + this.config.worldSize) % this.config.worldSize;
  }

  /** 'tcp' or 'unix' when both links are that, 'mixed' when they differ, 'none' before both are up. */
  get transport(): LinkTransport | 'mixed' | 'none' {
    if (!this.sendTransport || !this.recvTransport) return 'none';
    return this.sendTransport === this.recvTransport ? this.sendTransport : 'mixed';
  }

  /** The two links' transports, once both are up. */
  get transports(): [send: LinkTransport, recv: LinkTransport] | undefined {
    return this.sendTransport && this.recvTransport ? [this.sendTransport, this.recvTransport] : undefined;
  }

  /** Whether the next rank's connection was accepted. */
  get accepted(): boolean {
    return this.outgoing !== undefined;
  }

  /** Resolves once the next rank's connection is accepted; rejects when the group fails first. */
  whenAccepted(): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.outgoing) resolve();
      else this.outgoingWaiter = { resolve, reject };
    });
  }

  // ---- opening ------------------------------------------------------------------------------

  /** Dials the previous rank over the chosen transport; a Unix socket that is not there falls back to TCP under 'auto'. */
  async dialPrev(peer: PeerAddress, option: TransportOption): Promise<void> {
    const first = chooseLink(option, peer);
    if (option === 'unix' && peer.unix === undefined)
      throw this.config.error(
        this.prev,
        `rank ${this.prev} has no Unix socket (transport 'unix' needs one on every rank)`,
      );
    try {
      await this.dial(peer, first);
    } catch (err) {
      const unreachable = (err as CollectiveError).cause as NodeJS.ErrnoException | undefined;
      const fallBack = first === 'unix' && option === 'auto' && unreachable?.syscall === 'connect';
      if (!fallBack || this.closed || this.failure) throw err;
      await this.dial(peer, 'tcp');
    }
  }

  private async dial(peer: PeerAddress, link: LinkTransport): Promise<void> {
    const { error, timeoutMs } = this.config;
    const where = link === 'unix' ? `Unix socket ${formatAddress(peer)}` : `${peer.host}:${peer.port}`;
    const reply = this.reader.expectReply();
    const target =
      link === 'unix' ? { path: peer.unix! } : { host: peer.host, port: peer.port, noDelay: true };
    const socket = net.connect({
      ...target,
      onread: {
        buffer: () => this.reader.nextReadBuffer(),
        callback: (bytes: number) => this.reader.onRead(bytes),
      },
    });
    socket.on('error', () => {}); // reported through 'close' or the handshake
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', (err) =>
        reject(error(this.prev, `cannot connect to rank ${this.prev} at ${where}: ${err.message}`, err)),
      );
    });
    const { rank, worldSize, groupName, token } = this.config;
    const hello: Hello = { magic: HELLO_MAGIC, token, groupName, rank, worldSize };
    socket.write(encodeMessage(hello));
    let answer: HandshakeReply;
    try {
      answer = await new Promise<HandshakeReply>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no handshake reply within ${timeoutMs} ms`)),
          timeoutMs,
        );
        const closed = (): void => reject(new Error('connection closed before the handshake reply'));
        socket.once('close', closed);
        reply.then(
          (value) => {
            clearTimeout(timer);
            socket.off('close', closed);
            resolve(value);
          },
          () => {},
        );
      });
    } catch (err) {
      socket.destroy();
      throw error(
        this.prev,
        `handshake with rank ${this.prev} at ${where} failed: ${(err as Error).message}`,
        err,
      );
    }
    if (!answer?.ok) {
      socket.destroy();
      throw error(
        this.prev,
        `rank ${this.prev} at ${where} refused the connection: ${answer?.error ?? 'no reason given'}`,
      );
    }
    if (this.closed || this.failure) {
      socket.destroy();
      throw this.failure ?? error(this.config.rank, 'the group is closed');
    }
    this.incoming = socket;
    this.recvTransport = link;
    socket.on('close', () => this.events.peerGone(this.prev, 'closed its connection'));
    socket.on('error', (err) => this.events.peerGone(this.prev, `connection error (${err.message})`));
  }

  /** A connection to one of this rank's data servers: the next rank, once its hello checks out. */
  accept(socket: net.Socket, link: LinkTransport): void {
    socket.on('error', () => {});
    const from = link === 'unix' ? 'a Unix socket peer' : `${socket.remoteAddress}:${socket.remotePort}`;
    readMessage(socket, this.config.timeoutMs, 'handshake').then(
      ({ value }) => {
        const hello = value as Partial<Hello>;
        const refuse = (reason: string, failGroup: boolean): void => {
          socket.end(encodeMessage({ ok: false, error: reason }));
          if (failGroup && this.outgoingWaiter) {
            const claimed = typeof hello.rank === 'number' ? hello.rank : this.next;
            const waiter = this.outgoingWaiter;
            this.outgoingWaiter = undefined;
            waiter.reject(
              this.config.error(
                claimed,
                `refused a connection from ${from} claiming rank ${hello.rank}: ${reason}`,
              ),
            );
          }
        };
        const refused = refusal(hello, { ...this.config, next: this.next });
        if (refused) return refuse(refused.reason, refused.failGroup);
        if (this.outgoing || this.closed || this.failure)
          return refuse('this rank already has its connection to the next rank', false);
        this.outgoing = socket;
        this.sendTransport = link;
        if (link === 'tcp') socket.setNoDelay(true);
        // Nothing is read from the sending side after the handshake; keep it flowing so a
        // peer's close is seen.
        socket.on('data', () => {});
        socket.on('close', () => this.events.peerGone(this.next, 'closed its connection'));
        socket.on('error', (err) => this.events.peerGone(this.next, `connection error (${err.message})`));
        this.writer.attach(socket);
        socket.write(encodeMessage({ ok: true }));
        socket.resume();
        const waiter = this.outgoingWaiter;
        this.outgoingWaiter = undefined;
        waiter?.resolve();
        this.writer.flush();
      },
      () => socket.destroy(),
    );
  }

  // ---- failing and closing ------------------------------------------------------------------

  /**
   * The group failed with `err`: nothing more is sent or read, a connect waiting for the next
   * rank fails, and `abort` (when given) goes to the next rank as the last frame so it fails too.
   */
  fail(err: Error, abort?: { blamed: number; reason: string }): void {
    if (this.failure || this.closed) return;
    this.failure = err;
    this.reader.fail();
    const waiter = this.outgoingWaiter;
    this.outgoingWaiter = undefined;
    waiter?.reject(err);
    this.writer.stop(abort && encodeAbort(abort.blamed, abort.reason));
  }

  /** Drops both connections; a connect waiting for the next rank fails with `err`. */
  close(err?: Error): void {
    if (err) {
      this.outgoingWaiter?.reject(err);
      this.outgoingWaiter = undefined;
    }
    this.closed = true;
    this.reader.close();
    this.writer.stop();
    this.outgoing?.destroy();
    this.incoming?.destroy();
  }

  // ---- frames -------------------------------------------------------------------------------

  /** Queues a frame to the next rank; `bytes` is a view, sent as it is then. */
  send(opId: number, step: number, sub: number, bytes: Uint8Array): void {
    this.writer.send(opId, step, sub, bytes);
  }

  flush(): void {
    this.writer.flush();
  }

  /** A new operation began: places the frame that waited for it, and reads on. */
  resume(): void {
    if (this.reader.resume()) this.incoming?.resume();
  }
}
