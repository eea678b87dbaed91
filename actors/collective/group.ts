/**
 * Ring all-reduce and broadcast between actor processes over TCP or, between ranks on the same
 * host, Unix domain sockets (see transport.ts for the choice and the measurements behind it).
 * When every rank shares one host, the all-reduce goes through shared memory instead and the
 * ring carries only its barriers (shm-allreduce.ts).
 *
 * Each rank runs a small data server; `connect()` dials the previous rank (rank-1 mod N; the
 * link this rank receives on) and accepts one connection from the next rank (the link it sends
 * on). The receiving side dials because only a dialled socket can take node:net's `onread`
 * option: every read lands straight in its destination (the caller's buffer for the all-gather,
 * the reduce kernel's input for the reduce-scatter), with no per-read Buffer and no copy out of
 * a queue of chunks; that alone takes loopback TCP from ~1 to ~2.4 GB/s on the dev box.
 * Connections start with a handshake carrying the cluster token.
 *
 * Wire: after the handshake, a stream of frames, each a 16-byte header (u32 op id, u32 step,
 * u32 sub-chunk index, u32 payload bytes; little endian) and the payload. Both ends derive the
 * same schedule from (rank, world size, buffer length), so every header is checked against the
 * frame the receiver expects next; a mismatch (ranks calling different collectives or passing
 * buffers of different lengths) fails the group. A header with step 0xffffffff is an abort: its
 * sub field is the blamed rank and its payload the reason; it travels once around the ring so
 * every rank fails its pending operation instead of hanging.
 *
 * All-reduce: reduce-scatter then all-gather, 2(N-1) steps over N chunks, each chunk cut into
 * sub-chunks (1 MiB default) that move on as soon as they are reduced, so sending one slice
 * overlaps receiving and reducing the next (the kernel keeps filling the socket buffers while
 * this process sums; the sum is a WebAssembly SIMD kernel, reduce-kernel.ts). Chunk c is summed
 * along the ring in one fixed order by a chain that ends at its owner, and the all-gather copies
 * the owner's bytes everywhere: every rank ends with bit-identical results.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import { hostname } from 'node:os';
import { ConfigError } from '../../common/errors.js';
import { type CollectiveOp, collectiveMetrics } from './collective-metrics.js';
import { CollectiveError } from './errors.js';
import { type ReduceKernel, reduceKernel } from './reduce-kernel.js';
import { type SharedMemory, type SharedRegion, sharedMemory } from './shared-memory.js';
import { partBounds, planShmAllReduce, shmRegionFloats } from './shm-allreduce.js';
import {
  chooseLink,
  formatAddress,
  hostId,
  type LinkTransport,
  type PeerAddress,
  parseAddress,
  type TransportOption,
  unixSocketPath,
  validateTransport,
} from './transport.js';

export type ReduceOp = 'sum' | 'mean';

export interface CollectiveGroupOptions {
  rank: number;
  worldSize: number;
  groupName: string;
  /** The cluster token; peers must present the same one. */
  token: string;
  /** Host to bind the data server on. Default CLAWRAY_BIND_HOST, else 127.0.0.1. */
  bindHost?: string;
  /** Host put in the returned address. Default CLAWRAY_ADVERTISE_HOST, else the bind host
   * (the machine's hostname when binding a wildcard address). */
  advertiseHost?: string;
  /** An operation (or connect) fails when nothing arrives for this long. Default 60 000 ms. */
  timeoutMs?: number;
  /** Pipelining granularity. Default 1 MiB. */
  subChunkBytes?: number;
  /**
   * How ranks reach each other: 'auto' (default; shared memory when every rank is on this host
   * and it can be mapped, else a Unix socket to a neighbour on the same host and TCP otherwise),
   * 'tcp' (always TCP), 'unix' (always a Unix socket: every rank on one host), 'shm' (shared
   * memory, or `connect` fails saying why).
   */
  transport?: TransportOption;
  /**
   * The shared-memory all-reduce's window: it moves the buffer through this many bytes at a
   * time, and the region it maps is 2·(worldSize + 1) windows. Default 16 MiB (a region of
   * 160 MiB for 4 ranks): each window costs a barrier, N − 1 hops around the ring.
   */
  shmWindowBytes?: number;
  /** Where shared regions come from (default: the host's, through koffi); tests hand a failing one. */
  sharedMemory?: SharedMemory | string;
}

export const DEFAULT_SHM_WINDOW_BYTES = 16 << 20;

const HEADER_BYTES = 16;
const ABORT_STEP = 0xffffffff;
const MAX_HELLO_BYTES = 4096;
const HELLO_MAGIC = 'clawray-collective/1';

interface Hello {
  magic: string;
  token: string;
  groupName: string;
  rank: number;
  worldSize: number;
}

interface RecvSlot {
  step: number;
  sub: number;
  /** Where the payload bytes go. */
  dest: Uint8Array;
  /** Run once the payload is in. */
  done: () => void;
}

interface Op {
  id: number;
  recvs: RecvSlot[];
  recvIndex: number;
  sendsLeft: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

interface Outgoing {
  opId: number;
  step: number;
  sub: number;
  bytes: Uint8Array;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

function tokensEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** Length-prefixed JSON, used only for the handshake. */
function encodeJson(value: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(value));
  const out = Buffer.allocUnsafe(4 + body.length);
  out.writeUInt32LE(body.length, 0);
  body.copy(out, 4);
  return out;
}

/** Reads one length-prefixed JSON message from `socket`; resolves with it and any bytes after it. */
function readJson(
  socket: net.Socket,
  timeoutMs: number,
  what: string,
): Promise<{ value: unknown; rest: Buffer }> {
  return new Promise((resolve, reject) => {
    let acc: Buffer = Buffer.alloc(0);
    const cleanup = (): void => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.off('error', onError);
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`no ${what} within ${timeoutMs} ms`));
    }, timeoutMs);
    const onError = (err: Error): void => {
      cleanup();
      reject(err);
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error(`connection closed before the ${what}`));
    };
    const onData = (chunk: Buffer): void => {
      acc = acc.length === 0 ? chunk : Buffer.concat([acc, chunk]);
      if (acc.length < 4) return;
      const len = acc.readUInt32LE(0);
      if (len > MAX_HELLO_BYTES) {
        cleanup();
        reject(new Error(`${what} too large (${len} bytes): not a clawray collective peer`));
        return;
      }
      if (acc.length < 4 + len) return;
      cleanup();
      socket.pause();
      try {
        resolve({
          value: JSON.parse(acc.subarray(4, 4 + len).toString('utf8')),
          rest: acc.subarray(4 + len),
        });
      } catch {
        reject(new Error(`${what} is not valid JSON: not a clawray collective peer`));
      }
    };
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.on('error', onError);
    socket.resume();
  });
}

/** Sub-chunks of [start, end): at least one (possibly empty), each at most `sub` elements. */
function subRanges(start: number, end: number, sub: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let s = start; s < end; s += sub) out.push([s, Math.min(end, s + sub)]);
  if (out.length === 0) out.push([start, start]);
  return out;
}

const EMPTY = new Uint8Array(0);

const bytesOf = (buf: Float32Array, start: number, end: number): Uint8Array =>
  new Uint8Array(buf.buffer, buf.byteOffset + start * 4, (end - start) * 4);

/** Where reads go while the next operation's frame waits for this rank to start it. */
const STAGING_BYTES = 64 * 1024;

type RxPhase = 'reply-len' | 'reply-body' | 'header' | 'payload';

export class CollectiveGroup {
  readonly rank: number;
  readonly worldSize: number;
  readonly groupName: string;
  /** This rank's address (see transport.ts for its form); hand it to the other ranks. */
  readonly address: string;
  /** The transport option the group was created with. */
  readonly transportOption: TransportOption;

  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly subFloats: number;
  private readonly kernel: ReduceKernel;
  private readonly shmWindowFloats: number;
  private readonly shmSource?: SharedMemory | string;
  /** The shared region, when this group all-reduces through shared memory. */
  private shm?: SharedRegion;
  /** Why a same-host group is not using shared memory ('auto' fell back to its sockets). */
  private shmUnavailable?: string;

  private outgoing?: net.Socket;
  private incoming?: net.Socket;
  private sendLink?: LinkTransport;
  private recvLink?: LinkTransport;
  private outgoingWaiter?: { resolve: () => void; reject: (err: Error) => void };
  private connected = false;
  private closed = false;
  private failure?: CollectiveError;

  private opCounter = 0;
  private op?: Op;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly metrics = collectiveMetrics();
  private timer?: NodeJS.Timeout;

  // Sending.
  private readonly sendQueue: Outgoing[] = [];
  private sendHead = 0;
  private waitingDrain = false;

  // Receiving (a state machine driven by the incoming socket's `onread`).
  private rxPhase: RxPhase = 'reply-len';
  /** The buffer the next read lands in (what `nextReadBuffer` last handed out). */
  private rxTarget: Uint8Array = new Uint8Array(0);
  private rxTargetIsStaging = false;
  private readonly staging = Buffer.allocUnsafe(STAGING_BYTES);
  private readonly replyLen = Buffer.alloc(4);
  private replyBody = Buffer.alloc(0);
  private replyFilled = 0;
  private onReply?: (value: unknown) => void;
  private readonly header = Buffer.alloc(HEADER_BYTES);
  private headerFilled = 0;
  private frame?: { slot: RecvSlot; written: number };
  /** A header of the operation after the current one, read before this rank started it. */
  private pendingHeader?: { opId: number; step: number; sub: number; bytes: number };
  private recvPaused = false;

  private constructor(
    options: CollectiveGroupOptions,
    private readonly servers: Array<{ server: net.Server; link: LinkTransport }>,
    address: string,
  ) {
    this.rank = options.rank;
    this.worldSize = options.worldSize;
    this.groupName = options.groupName;
    this.token = options.token;
    this.transportOption = options.transport ?? 'auto';
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.subFloats = Math.max(1, Math.floor((options.subChunkBytes ?? 1 << 20) / 4));
    this.kernel = reduceKernel(this.subFloats * 4);
    this.shmWindowFloats = (options.shmWindowBytes ?? DEFAULT_SHM_WINDOW_BYTES) / 4;
    this.shmSource = options.sharedMemory;
    this.address = address;
    for (const { server, link } of servers) server.on('connection', (socket) => this.accept(socket, link));
  }

  /** Starts this rank's data servers (TCP on port 0 of the bind host; a Unix socket unless 'tcp'). */
  static async create(options: CollectiveGroupOptions): Promise<CollectiveGroup> {
    const { rank, worldSize, groupName, token } = options;
    if (!Number.isInteger(worldSize) || worldSize < 1)
      throw new ConfigError(`collective worldSize must be a positive integer, got ${worldSize}`);
    if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize)
      throw new ConfigError(`collective rank must be an integer in [0, ${worldSize}), got ${rank}`);
    if (!groupName) throw new ConfigError('collective groupName must not be empty');
    if (!token) throw new ConfigError('collective group needs the cluster token');
    const transport = validateTransport(options.transport);
    if (
      options.subChunkBytes !== undefined &&
      (!Number.isInteger(options.subChunkBytes) || options.subChunkBytes < 4)
    )
      throw new ConfigError(`collective subChunkBytes must be an integer ≥ 4, got ${options.subChunkBytes}`);
    const window = options.shmWindowBytes;
    if (window !== undefined && !(Number.isInteger(window) && window >= 16 && window % 4 === 0))
      throw new ConfigError(`collective shmWindowBytes must be a multiple of 4 ≥ 16, got ${window}`);
    if ((transport === 'tcp' || transport === 'unix') && (window !== undefined || options.sharedMemory))
      throw new ConfigError(
        `collective shmWindowBytes applies to transport 'auto' or 'shm'; transport '${transport}' never uses shared memory`,
      );
    const bindHost = options.bindHost ?? process.env.CLAWRAY_BIND_HOST ?? '127.0.0.1';
    const listen = (server: net.Server, where: () => void): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.once('listening', () => {
          server.off('error', reject);
          resolve();
        });
        where();
      });
    const tcp = net.createServer({ noDelay: true });
    await listen(tcp, () => tcp.listen(0, bindHost));
    const servers: Array<{ server: net.Server; link: LinkTransport }> = [{ server: tcp, link: 'tcp' }];
    const peer: PeerAddress = { host: '', port: (tcp.address() as net.AddressInfo).port };
    if (transport !== 'tcp') {
      const unix = net.createServer();
      const path = unixSocketPath(rank);
      try {
        await listen(unix, () => unix.listen(path));
        servers.push({ server: unix, link: 'unix' });
        peer.unix = path;
        peer.hostId = hostId();
      } catch (err) {
        if (transport === 'unix') {
          tcp.close();
          throw new ConfigError(
            `collective transport 'unix': cannot listen on a Unix socket: ${String(err)}`,
          );
        }
        // 'auto': TCP only.
      }
    }
    const wildcard = bindHost === '0.0.0.0' || bindHost === '::' || bindHost === '';
    peer.host =
      options.advertiseHost ?? process.env.CLAWRAY_ADVERTISE_HOST ?? (wildcard ? hostname() : bindHost);
    return new CollectiveGroup({ ...options, transport }, servers, formatAddress(peer));
  }

  /**
   * How this rank all-reduces: 'shm' through shared memory; else what its two ring links are
   * ('tcp' or 'unix' when both are that, 'mixed' when they differ); 'none' for a group of one
   * or before `connect`.
   */
  get transport(): LinkTransport | 'shm' | 'mixed' | 'none' {
    return this.shm ? 'shm' : this.links;
  }

  /** What this rank's two ring links are (broadcasts and the shared-memory barriers use them). */
  private get links(): LinkTransport | 'mixed' | 'none' {
    if (!this.sendLink || !this.recvLink) return 'none';
    return this.sendLink === this.recvLink ? this.sendLink : 'mixed';
  }

  /**
   * Why a group whose ranks share this host all-reduces over its sockets and not shared memory
   * (undefined when it uses shared memory or its ranks span hosts).
   */
  get sharedMemoryUnavailable(): string | undefined {
    return this.shmUnavailable;
  }

  /** Which loop sums the reduce-scatter: 'wasm-simd' or 'js'. */
  get reduceKernelKind(): 'wasm-simd' | 'js' {
    return this.kernel.kind;
  }

  private get next(): number {
    return (this.rank + 1) % this.worldSize;
  }

  private get prev(): number {
    return (this.rank - 1 + this.worldSize) % this.worldSize;
  }

  private error(blamed: number, reason: string, cause?: unknown): CollectiveError {
    return new CollectiveError(
      `collective group '${this.groupName}' (rank ${this.rank} of ${this.worldSize}): ${reason}`,
      { cause, fields: { rank: blamed, groupName: this.groupName } },
    );
  }

  /**
   * Opens the ring. `addresses` are all ranks' addresses in rank order (what `create` returned
   * on each rank). Resolves once this rank is connected to its previous rank and has accepted
   * its next rank; fails with CollectiveError on a refused handshake or after the timeout.
   */
  async connect(addresses: string[]): Promise<void> {
    if (this.failure) throw this.failure;
    if (this.closed) throw this.error(this.rank, 'the group is closed');
    if (this.connected) throw new ConfigError(`collective group '${this.groupName}' is already connected`);
    if (addresses.length !== this.worldSize)
      throw new ConfigError(
        `collective connect needs ${this.worldSize} addresses (one per rank), got ${addresses.length}`,
      );
    if (this.worldSize === 1) {
      this.connected = true;
      return;
    }
    const peers = addresses.map(parseAddress);
    const sameHost = peers.every((p) => p.unix !== undefined && p.hostId === hostId());
    if (this.transportOption === 'shm' && !sameHost)
      throw new ConfigError(
        `collective transport 'shm' needs every rank on one host: ${addresses.join(', ')} are not`,
      );
    const prevAddress = peers[this.prev]!;
    const outgoing = new Promise<void>((resolve, reject) => {
      if (this.outgoing) resolve();
      else this.outgoingWaiter = { resolve, reject };
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            this.error(
              this.outgoing ? this.prev : this.next,
              this.outgoing
                ? `rank ${this.prev} did not accept the connection within ${this.timeoutMs} ms`
                : `rank ${this.next} did not connect within ${this.timeoutMs} ms`,
            ),
          ),
        this.timeoutMs,
      );
    });
    try {
      await Promise.race([Promise.all([this.dialPrev(prevAddress), outgoing]), timeout]);
    } catch (err) {
      const failure =
        err instanceof CollectiveError ? err : this.error(this.rank, `connect failed: ${String(err)}`, err);
      this.fail(failure);
      throw failure;
    } finally {
      clearTimeout(timer);
    }
    this.connected = true;
    this.metrics.links(this.sendLink!, 1);
    this.metrics.links(this.recvLink!, 1);
    if (sameHost && this.transportOption !== 'tcp' && this.transportOption !== 'unix')
      await this.setUpSharedMemory();
  }

  /**
   * Rank 0 creates the region and hands its path around the ring; every rank maps it; an
   * all-reduce of the failures decides, the same way on every rank, whether the group uses it.
   * Under 'auto' a group that cannot falls back to its sockets; under 'shm', connect fails.
   */
  private async setUpSharedMemory(): Promise<void> {
    const bytes = shmRegionFloats(this.worldSize, this.shmWindowFloats) * 4;
    const source = this.shmSource ?? (await sharedMemory());
    let region: SharedRegion | undefined;
    let reason: string | undefined;
    const offer = new Float32Array(256);
    const offerBytes = new Uint8Array(offer.buffer);
    if (this.rank === 0) {
      try {
        if (typeof source === 'string') throw new Error(source);
        region = source.create(bytes, `clawray-collective-${this.groupName}`);
        offerBytes.set(Buffer.from(JSON.stringify({ path: region.path })));
      } catch (err) {
        // The offer travels in a 1 KiB buffer.
        reason = `rank 0 cannot create ${bytes} bytes of shared memory: ${(err as Error).message}`;
        reason = reason.slice(0, 900);
        offerBytes.set(Buffer.from(JSON.stringify({ error: reason })));
      }
    }
    const failed = new Float32Array(1);
    try {
      await this.enqueue(() => this.runBroadcast(offer, 0));
      if (this.rank !== 0) {
        const text = Buffer.from(offerBytes).toString('utf8').replace(/\0+$/, '');
        const { path, error } = JSON.parse(text) as { path?: string; error?: string };
        try {
          if (typeof source === 'string') throw new Error(source);
          if (path === undefined) throw new Error(error ?? 'no region offered');
          region = source.open(path, bytes);
        } catch (err) {
          reason =
            path === undefined
              ? error
              : `rank ${this.rank} cannot map rank 0's shared memory: ${(err as Error).message}`;
        }
      }
      failed[0] = region ? 0 : 1;
      await this.enqueue(() => this.runAllReduce(failed, 'sum'));
    } catch (err) {
      // A rank died or the group closed while setting up: the ring's failure is the error.
      region?.close();
      throw err;
    }
    if (failed[0] === 0) {
      this.shm = region;
      region!.seal();
      return;
    }
    region?.close();
    this.shmUnavailable = reason ?? `${failed[0]} rank(s) could not map the group's shared memory`;
    if (this.transportOption === 'shm') {
      const failure = this.error(this.rank, `transport 'shm': ${this.shmUnavailable}`);
      this.fail(failure, this.shmUnavailable);
      throw failure;
    }
  }

  /** Dials the previous rank over the chosen transport; a Unix socket that is not there falls back to TCP under 'auto'. */
  private async dialPrev(peer: PeerAddress): Promise<void> {
    const first = chooseLink(this.transportOption, peer);
    if (this.transportOption === 'unix' && peer.unix === undefined)
      throw this.error(
        this.prev,
        `rank ${this.prev} has no Unix socket (transport 'unix' needs one on every rank)`,
      );
    try {
      await this.dial(peer, first);
    } catch (err) {
      const unreachable = (err as CollectiveError).cause as NodeJS.ErrnoException | undefined;
      const fallBack =
        first === 'unix' && this.transportOption === 'auto' && unreachable?.syscall === 'connect';
      if (!fallBack || this.closed || this.failure) throw err;
      await this.dial(peer, 'tcp');
    }
  }

  private async dial(peer: PeerAddress, link: LinkTransport): Promise<void> {
    const where = link === 'unix' ? `Unix socket ${formatAddress(peer)}` : `${peer.host}:${peer.port}`;
    this.rxPhase = 'reply-len';
    this.replyFilled = 0;
    const reply = new Promise<unknown>((resolve) => {
      this.onReply = resolve;
    });
    const target =
      link === 'unix' ? { path: peer.unix! } : { host: peer.host, port: peer.port, noDelay: true };
    const socket = net.connect({
      ...target,
      onread: {
        buffer: () => this.nextReadBuffer(),
        callback: (bytes: number) => this.onRead(bytes),
      },
    });
    socket.on('error', () => {}); // reported through 'close' or the handshake
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', (err) =>
        reject(this.error(this.prev, `cannot connect to rank ${this.prev} at ${where}: ${err.message}`, err)),
      );
    });
    const hello: Hello = {
      magic: HELLO_MAGIC,
      token: this.token,
      groupName: this.groupName,
      rank: this.rank,
      worldSize: this.worldSize,
    };
    socket.write(encodeJson(hello));
    let answer: { ok?: boolean; error?: string };
    try {
      answer = (await new Promise<unknown>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no handshake reply within ${this.timeoutMs} ms`)),
          this.timeoutMs,
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
      })) as typeof answer;
    } catch (err) {
      socket.destroy();
      throw this.error(
        this.prev,
        `handshake with rank ${this.prev} at ${where} failed: ${(err as Error).message}`,
        err,
      );
    }
    if (!answer?.ok) {
      socket.destroy();
      throw this.error(
        this.prev,
        `rank ${this.prev} at ${where} refused the connection: ${answer?.error ?? 'no reason given'}`,
      );
    }
    if (this.closed || this.failure) {
      socket.destroy();
      throw this.failure ?? this.error(this.rank, 'the group is closed');
    }
    this.incoming = socket;
    this.recvLink = link;
    socket.on('close', () => this.peerGone(this.prev, 'closed its connection'));
    socket.on('error', (err) => this.peerGone(this.prev, `connection error (${err.message})`));
  }

  private accept(socket: net.Socket, link: LinkTransport): void {
    socket.on('error', () => {});
    const from = link === 'unix' ? 'a Unix socket peer' : `${socket.remoteAddress}:${socket.remotePort}`;
    readJson(socket, this.timeoutMs, 'handshake').then(
      ({ value }) => {
        const hello = value as Partial<Hello>;
        const refuse = (reason: string, failGroup: boolean): void => {
          socket.end(encodeJson({ ok: false, error: reason }));
          if (failGroup && this.outgoingWaiter) {
            const claimed = typeof hello.rank === 'number' ? hello.rank : this.next;
            const waiter = this.outgoingWaiter;
            this.outgoingWaiter = undefined;
            waiter.reject(
              this.error(claimed, `refused a connection from ${from} claiming rank ${hello.rank}: ${reason}`),
            );
          }
        };
        if (hello?.magic !== HELLO_MAGIC) return refuse('not a clawray collective handshake', false);
        if (typeof hello.token !== 'string' || !tokensEqual(hello.token, this.token))
          return refuse('wrong cluster token', true);
        if (hello.groupName !== this.groupName)
          return refuse(`group name '${hello.groupName}' is not '${this.groupName}'`, true);
        if (hello.worldSize !== this.worldSize)
          return refuse(`world size ${hello.worldSize} is not ${this.worldSize}`, true);
        if (hello.rank !== this.next)
          return refuse(`rank ${this.rank} sends to rank ${this.next}, not rank ${hello.rank}`, true);
        if (this.outgoing || this.closed || this.failure)
          return refuse('this rank already has its connection to the next rank', false);
        this.outgoing = socket;
        this.sendLink = link;
        if (link === 'tcp') socket.setNoDelay(true);
        // Nothing is read from the sending side after the handshake; keep it flowing so a
        // peer's close is seen.
        socket.on('data', () => {});
        socket.on('close', () => this.peerGone(this.next, 'closed its connection'));
        socket.on('error', (err) => this.peerGone(this.next, `connection error (${err.message})`));
        socket.on('drain', () => {
          this.waitingDrain = false;
          this.pumpSend();
        });
        socket.write(encodeJson({ ok: true }));
        socket.resume();
        const waiter = this.outgoingWaiter;
        this.outgoingWaiter = undefined;
        waiter?.resolve();
        this.pumpSend();
      },
      () => socket.destroy(),
    );
  }

  private peerGone(rank: number, what: string): void {
    if (this.closed || this.failure) return;
    this.fail(this.error(rank, `rank ${rank} ${what}`), `rank ${rank} ${what}`);
  }

  /**
   * Marks the group failed: rejects the pending operation and tells the next rank (which tells
   * its next, around the ring) so no rank waits for data that will never come.
   */
  private fail(err: CollectiveError, reason?: string): void {
    if (this.failure || this.closed) return;
    this.failure = err;
    this.clearTimer();
    const op = this.op;
    this.op = undefined;
    op?.reject(err);
    const waiter = this.outgoingWaiter;
    this.outgoingWaiter = undefined;
    waiter?.reject(err);
    const out = this.outgoing;
    if (out && !out.destroyed && reason !== undefined) {
      const payload = Buffer.from(`${reason} (reported by rank ${this.rank})`);
      const header = Buffer.alloc(HEADER_BYTES);
      header.writeUInt32LE(0, 0);
      header.writeUInt32LE(ABORT_STEP, 4);
      header.writeUInt32LE(Number(err.fields.rank ?? this.rank), 8);
      header.writeUInt32LE(payload.length, 12);
      this.sendQueue.length = 0;
      this.sendHead = 0;
      out.write(Buffer.concat([header, payload]));
      out.end();
      // If the next rank does not read (it is stuck too), do not keep the socket forever.
      setTimeout(() => out.destroy(), 2000).unref();
    }
  }

  /** Fails the pending operation and stops the servers and connections; the group is done. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (!this.failure) {
      const err = this.error(this.rank, 'the group was closed');
      const op = this.op;
      this.op = undefined;
      op?.reject(err);
      this.outgoingWaiter?.reject(err);
      this.outgoingWaiter = undefined;
    }
    if (this.connected && this.sendLink && this.recvLink) {
      this.metrics.links(this.sendLink, -1);
      this.metrics.links(this.recvLink, -1);
    }
    this.closed = true;
    this.clearTimer();
    this.outgoing?.destroy();
    this.incoming?.destroy();
    // Nothing runs an operation's work after `closed` is set, so nothing reads the pages now.
    this.shm?.close();
    this.shm = undefined;
    // Closing a Unix server on a file path removes the file (libuv unlinks it).
    await Promise.all(
      this.servers.map(({ server }) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
  }

  /** In place: every rank ends with the same (bit-identical) elementwise sum or mean. */
  allReduce(buffer: Float32Array, op: ReduceOp = 'sum'): Promise<void> {
    if (op !== 'sum' && op !== 'mean')
      return Promise.reject(new ConfigError(`unknown reduce op '${op}' (want sum or mean)`));
    return this.enqueue(() =>
      this.measured('allreduce', buffer.byteLength, () =>
        this.shm ? this.runShmAllReduce(this.shm, buffer, op) : this.runAllReduce(buffer, op),
      ),
    );
  }

  /** In place: every rank ends with `root`'s buffer (passed along the ring, pipelined). */
  broadcast(buffer: Float32Array, root: number): Promise<void> {
    if (!Number.isInteger(root) || root < 0 || root >= this.worldSize)
      return Promise.reject(
        new ConfigError(`broadcast root must be a rank in [0, ${this.worldSize}), got ${root}`),
      );
    return this.enqueue(() =>
      this.measured('broadcast', buffer.byteLength, () => this.runBroadcast(buffer, root), this.links),
    );
  }

  /** Counts an operation that completed; failed ones count nowhere. */
  private async measured(
    op: CollectiveOp,
    bytes: number,
    run: () => Promise<void>,
    transport: string = this.transport,
  ): Promise<void> {
    const started = performance.now();
    await run();
    this.metrics.observe(op, transport, bytes, (performance.now() - started) / 1000);
  }

  private enqueue(run: () => Promise<void>): Promise<void> {
    const result = this.tail.then(run);
    this.tail = result.catch(() => {});
    return result;
  }

  private begin(build: (op: Op) => void): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(this.error(this.rank, 'the group is closed'));
    if (!this.connected)
      return Promise.reject(new ConfigError(`collective group '${this.groupName}' is not connected yet`));
    return new Promise<void>((resolve, reject) => {
      const op: Op = { id: ++this.opCounter >>> 0, recvs: [], recvIndex: 0, sendsLeft: 0, resolve, reject };
      this.op = op;
      build(op);
      this.touch();
      const pending = this.pendingHeader;
      this.pendingHeader = undefined;
      if (pending) this.startFrame(pending.opId, pending.step, pending.sub, pending.bytes);
      if (this.recvPaused && !this.failure) {
        this.recvPaused = false;
        this.incoming?.resume();
      }
      this.pumpSend();
      this.maybeFinish();
    });
  }

  private runAllReduce(buffer: Float32Array, reduce: ReduceOp): Promise<void> {
    const n = this.worldSize;
    if (n === 1) return this.failure ? Promise.reject(this.failure) : Promise.resolve();
    const r = this.rank;
    const len = buffer.length;
    const mod = (x: number): number => ((x % n) + n) % n;
    const sendChunk = (k: number): number => (k < n - 1 ? mod(r - k) : mod(r + 1 - (k - (n - 1))));
    const recvChunk = (k: number): number => (k < n - 1 ? mod(r - k - 1) : mod(r - (k - (n - 1))));
    const steps = 2 * (n - 1);
    const subs = (c: number): Array<[number, number]> => {
      const [s, e] = partBounds(len, n, c);
      return subRanges(s, e, this.subFloats);
    };
    const kernel = this.kernel;
    return this.begin((op) => {
      for (let k = 0; k < steps; k++) op.sendsLeft += subs(sendChunk(k)).length;
      for (let k = 0; k < steps; k++) {
        const ranges = subs(recvChunk(k));
        for (let j = 0; j < ranges.length; j++) {
          const [s, e] = ranges[j]!;
          const forward =
            k + 1 < steps ? (): void => this.queueSend(op.id, k + 1, j, bytesOf(buffer, s, e)) : () => {};
          if (k < n - 1) {
            // Reduce-scatter: the previous rank's partial sum lands in the kernel's input and is
            // added into ours.
            const divide = reduce === 'mean' && k === n - 2;
            op.recvs.push({
              step: k,
              sub: j,
              dest: kernel.src.subarray(0, (e - s) * 4),
              done: () => {
                if (divide) kernel.addDivideInto(buffer, s, e - s, n);
                else kernel.addInto(buffer, s, e - s);
                forward();
              },
            });
          } else {
            // All-gather: the owner's final bytes, read straight into place.
            op.recvs.push({ step: k, sub: j, dest: bytesOf(buffer, s, e), done: forward });
          }
        }
      }
      const first = subs(sendChunk(0));
      for (let j = 0; j < first.length; j++)
        this.queueSend(op.id, 0, j, bytesOf(buffer, first[j]![0], first[j]![1]));
    });
  }

  /**
   * The shared-memory all-reduce: barriers of N−1 empty frames around the ring (a rank forwards
   * one only after entering the barrier itself, so the last frame arriving means every rank has
   * entered), the plan's work done between them. Each frame carries the buffer's length, which
   * the receiver checks against its own.
   */
  private runShmAllReduce(region: SharedRegion, buffer: Float32Array, reduce: ReduceOp): Promise<void> {
    const n = this.worldSize;
    const plan = planShmAllReduce({
      region: region.floats,
      rank: this.rank,
      worldSize: n,
      windowFloats: this.shmWindowFloats,
      buffer,
      kernel: this.kernel,
      divideBy: reduce === 'mean' ? n : 1,
    });
    const hops = n - 1;
    const length = buffer.length >>> 0;
    const work = (b: number): void => {
      if (!this.closed && !this.failure) plan.work(b);
    };
    return this.begin((op) => {
      op.sendsLeft = plan.barriers * hops;
      for (let b = 0; b < plan.barriers; b++) {
        for (let k = 0; k < hops; k++) {
          const step = b * hops + k;
          op.recvs.push({
            step,
            sub: length,
            dest: EMPTY,
            done:
              k + 1 < hops
                ? () => this.queueSend(op.id, step + 1, length, EMPTY)
                : () => {
                    work(b + 1);
                    if (b + 1 < plan.barriers) this.queueSend(op.id, step + 1, length, EMPTY);
                  },
          });
        }
      }
      work(0);
      this.queueSend(op.id, 0, length, EMPTY);
    });
  }

  private runBroadcast(buffer: Float32Array, root: number): Promise<void> {
    if (this.worldSize === 1) return this.failure ? Promise.reject(this.failure) : Promise.resolve();
    const ranges = subRanges(0, buffer.length, this.subFloats);
    return this.begin((op) => {
      if (this.rank === root) {
        op.sendsLeft = ranges.length;
        for (let j = 0; j < ranges.length; j++) this.queueSend(op.id, 0, j, bytesOf(buffer, ...ranges[j]!));
        return;
      }
      const forward = this.next !== root;
      if (forward) op.sendsLeft = ranges.length;
      for (let j = 0; j < ranges.length; j++) {
        const dest = bytesOf(buffer, ...ranges[j]!);
        op.recvs.push({
          step: 0,
          sub: j,
          dest,
          done: forward ? () => this.queueSend(op.id, 0, j, dest) : () => {},
        });
      }
    });
  }

  private touch(): void {
    this.clearTimer();
    if (!this.op) return;
    this.timer = setTimeout(() => {
      const waitingOn = this.op && this.op.recvIndex < this.op.recvs.length ? this.prev : this.next;
      const reason = `no progress for ${this.timeoutMs} ms waiting on rank ${waitingOn}`;
      this.fail(this.error(waitingOn, reason), reason);
    }, this.timeoutMs);
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

  // ---- sending ------------------------------------------------------------------------------

  private queueSend(opId: number, step: number, sub: number, bytes: Uint8Array): void {
    this.sendQueue.push({ opId, step, sub, bytes });
    this.pumpSend();
  }

  private pumpSend(): void {
    const socket = this.outgoing;
    if (!socket || this.failure || this.closed) return;
    while (!this.waitingDrain && this.sendHead < this.sendQueue.length) {
      const frame = this.sendQueue[this.sendHead++]!;
      const header = Buffer.allocUnsafe(HEADER_BYTES);
      header.writeUInt32LE(frame.opId, 0);
      header.writeUInt32LE(frame.step, 4);
      header.writeUInt32LE(frame.sub, 8);
      header.writeUInt32LE(frame.bytes.length, 12);
      const sent = (err?: Error | null): void => {
        if (err) return; // 'error'/'close' fail the group
        const op = this.op;
        if (op && op.id === frame.opId) {
          op.sendsLeft--;
          this.touch();
          this.maybeFinish();
        }
      };
      // The payload is a view of the caller's buffer: the kernel copies it out of it (writev of
      // header and payload), no copy in JS.
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
    if (this.sendHead === this.sendQueue.length) {
      this.sendQueue.length = 0;
      this.sendHead = 0;
    }
  }

  // ---- receiving ----------------------------------------------------------------------------
  //
  // node:net calls `nextReadBuffer` after every read (and once on connect) for the buffer the
  // next read fills, then `onRead` with the byte count. Every buffer handed out is exactly the
  // rest of what the current state expects (4 bytes of reply length, a 16-byte header, the rest
  // of a frame's payload), so a read never spans two frames and needs no queue.

  /** Exactly the rest of what the receive state expects; undefined while the frame is unknown. */
  private currentTarget(): Uint8Array | undefined {
    switch (this.rxPhase) {
      case 'reply-len':
        return this.replyLen.subarray(this.replyFilled);
      case 'reply-body':
        return this.replyBody.subarray(this.replyFilled);
      case 'header':
        return this.header.subarray(this.headerFilled);
      case 'payload':
        return this.frame?.slot.dest.subarray(this.frame.written);
    }
  }

  private nextReadBuffer(): Uint8Array {
    let target = this.currentTarget();
    // A zero-length read buffer makes libuv fail the read (ENOBUFS); every state expects at
    // least one byte, so this only guards. While the frame is unknown (the header of an
    // operation this rank has not started; reading is paused until it does), the next read
    // lands in `staging`, no longer than that frame, and is copied into place.
    this.rxTargetIsStaging = target === undefined || target.length === 0;
    if (this.rxTargetIsStaging) {
      const left = this.pendingHeader?.bytes ?? 1;
      target = this.staging.subarray(0, Math.max(1, Math.min(left, STAGING_BYTES)));
    }
    this.rxTarget = target!;
    return target!;
  }

  /** Returns false to pause the socket (a frame of the operation after this one). */
  private onRead(bytes: number): boolean {
    if (this.closed) return true;
    if (this.op) this.touch();
    if (this.rxTargetIsStaging) {
      const real = this.currentTarget();
      if (!real || real.length < bytes) {
        if (!this.failure) this.protocolError(`${bytes} bytes arrived that no frame expects`);
        return false;
      }
      real.set(this.rxTarget.subarray(0, bytes));
    }
    switch (this.rxPhase) {
      case 'reply-len':
        this.replyFilled += bytes;
        if (this.replyFilled === 4) {
          const len = this.replyLen.readUInt32LE(0);
          if (len > MAX_HELLO_BYTES) {
            this.incoming?.destroy();
            this.onReply?.({ ok: false, error: `handshake reply too large (${len} bytes)` });
            return false;
          }
          this.replyBody = Buffer.alloc(len);
          this.replyFilled = 0;
          this.rxPhase = 'reply-body';
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
        return this.onPayload(bytes);
    }
  }

  private replyDone(): boolean {
    this.rxPhase = 'header';
    let value: unknown;
    try {
      value = JSON.parse(this.replyBody.toString('utf8'));
    } catch {
      value = { ok: false, error: 'handshake reply is not valid JSON: not a clawray collective peer' };
    }
    this.onReply?.(value);
    this.onReply = undefined;
    return true;
  }

  private onHeader(): boolean {
    const opId = this.header.readUInt32LE(0);
    const step = this.header.readUInt32LE(4);
    const sub = this.header.readUInt32LE(8);
    const bytes = this.header.readUInt32LE(12);
    if (step === ABORT_STEP) {
      const reason = Buffer.alloc(Math.min(bytes, MAX_HELLO_BYTES));
      const done = (): void => {
        const text = reason.toString('utf8');
        this.fail(this.error(sub, `rank ${sub} failed: ${text}`), text);
      };
      if (reason.length === 0) {
        done();
        return false;
      }
      this.frame = { written: 0, slot: { step, sub, dest: reason, done } };
      this.rxPhase = 'payload';
      return true;
    }
    if (this.failure) return false;
    const op = this.op;
    if (!op || opId !== op.id) {
      // A frame of the next operation: wait until this rank starts it (flow control holds the
      // sender back meanwhile).
      if (!op || opId === (op.id + 1) >>> 0) {
        this.pendingHeader = { opId, step, sub, bytes };
        this.rxPhase = 'payload';
        this.recvPaused = true;
        return false;
      }
      this.protocolError(`frame of operation ${opId} during operation ${op.id}`);
      return false;
    }
    return this.startFrame(opId, step, sub, bytes);
  }

  /** Matches a header against the frame the current operation expects next. */
  private startFrame(opId: number, step: number, sub: number, bytes: number): boolean {
    const op = this.op;
    const slot = op && op.id === opId ? op.recvs[op.recvIndex] : undefined;
    if (!slot || slot.step !== step || slot.sub !== sub || slot.dest.length !== bytes) {
      this.protocolError(
        `got step ${step} part ${sub} (${bytes} bytes), expected ` +
          (slot ? `step ${slot.step} part ${slot.sub} (${slot.dest.length} bytes)` : 'nothing') +
          ': did every rank call the same collective with the same buffer length?',
      );
      return false;
    }
    this.frame = { slot, written: 0 };
    this.rxPhase = 'payload';
    if (bytes === 0) return this.finishFrame();
    return true;
  }

  private onPayload(bytes: number): boolean {
    const frame = this.frame;
    if (!frame) return false;
    frame.written += bytes;
    if (frame.written < frame.slot.dest.length) return true;
    return this.finishFrame();
  }

  private finishFrame(): boolean {
    const frame = this.frame!;
    this.frame = undefined;
    this.rxPhase = 'header';
    if (frame.slot.step !== ABORT_STEP && this.op) this.op.recvIndex++;
    frame.slot.done();
    this.maybeFinish();
    return !this.failure && !this.closed;
  }

  private protocolError(detail: string): void {
    const reason = `protocol mismatch with rank ${this.prev}: ${detail}`;
    this.fail(this.error(this.prev, reason), reason);
  }
}
