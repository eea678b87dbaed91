/**
 * Ring all-reduce and broadcast between actor processes over plain TCP (node:net).
 *
 * Each rank runs a small data server; `connect()` opens one persistent connection to the next
 * rank (rank+1 mod N, used only for sending) and accepts one from the previous rank (used only
 * for receiving). Connections start with a handshake carrying the cluster token.
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
 * overlaps receiving and reducing the next. Chunk c is summed along the ring in one fixed order
 * by a chain that ends at its owner, and the all-gather copies the owner's bytes everywhere:
 * every rank ends with bit-identical results.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import { hostname } from 'node:os';
import { ConfigError } from '../../common/errors.js';
import { type CollectiveOp, collectiveMetrics } from './collective-metrics.js';
import { CollectiveError } from './errors.js';

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
}

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

function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function parseHostPort(address: string): { host: string; port: number } {
  const match = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address);
  if (!match) throw new ConfigError(`bad collective address '${address}' (want host:port)`);
  return { host: match[1]!, port: Number(match[2]) };
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

/** [start, end) of chunk c when `len` elements are cut into `n` chunks. */
function chunkBounds(len: number, n: number, c: number): [number, number] {
  return [Math.floor((c * len) / n), Math.floor(((c + 1) * len) / n)];
}

/** Sub-chunks of [start, end): at least one (possibly empty), each at most `sub` elements. */
function subRanges(start: number, end: number, sub: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let s = start; s < end; s += sub) out.push([s, Math.min(end, s + sub)]);
  if (out.length === 0) out.push([start, start]);
  return out;
}

/** dst[at + i] += src[i] for i < count (a plain top-level loop, so V8 keeps it monomorphic). */
function addInto(dst: Float32Array, at: number, src: Float32Array, count: number): void {
  for (let i = 0; i < count; i++) dst[at + i] = dst[at + i]! + src[i]!;
}

/** dst[at + i] = (dst[at + i] + src[i]) / n: the last reduce-scatter step of a mean. */
function addDivideInto(dst: Float32Array, at: number, src: Float32Array, count: number, n: number): void {
  for (let i = 0; i < count; i++) dst[at + i] = (dst[at + i]! + src[i]!) / n;
}

const bytesOf = (buf: Float32Array, start: number, end: number): Uint8Array =>
  new Uint8Array(buf.buffer, buf.byteOffset + start * 4, (end - start) * 4);

export class CollectiveGroup {
  readonly rank: number;
  readonly worldSize: number;
  readonly groupName: string;
  /** host:port of this rank's data server; hand it to the other ranks. */
  readonly address: string;

  private readonly token: string;
  private readonly timeoutMs: number;
  private readonly subFloats: number;
  private readonly scratch: Float32Array;
  private readonly scratchBytes: Uint8Array;

  private outgoing?: net.Socket;
  private incoming?: net.Socket;
  private incomingWaiter?: { resolve: () => void; reject: (err: Error) => void };
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

  // Receiving.
  private readonly chunks: Buffer[] = [];
  private chunkOffset = 0;
  private readonly header = Buffer.alloc(HEADER_BYTES);
  private headerFilled = 0;
  private frame?: { slot: RecvSlot; written: number };
  private recvPaused = false;

  private constructor(
    options: CollectiveGroupOptions,
    private readonly server: net.Server,
    address: string,
  ) {
    this.rank = options.rank;
    this.worldSize = options.worldSize;
    this.groupName = options.groupName;
    this.token = options.token;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.subFloats = Math.max(1, Math.floor((options.subChunkBytes ?? 1 << 20) / 4));
    this.scratch = new Float32Array(this.subFloats);
    this.scratchBytes = new Uint8Array(this.scratch.buffer);
    this.address = address;
    server.on('connection', (socket) => this.accept(socket));
  }

  /** Starts this rank's data server (port 0 on the bind host). */
  static async create(options: CollectiveGroupOptions): Promise<CollectiveGroup> {
    const { rank, worldSize, groupName, token } = options;
    if (!Number.isInteger(worldSize) || worldSize < 1)
      throw new ConfigError(`collective worldSize must be a positive integer, got ${worldSize}`);
    if (!Number.isInteger(rank) || rank < 0 || rank >= worldSize)
      throw new ConfigError(`collective rank must be an integer in [0, ${worldSize}), got ${rank}`);
    if (!groupName) throw new ConfigError('collective groupName must not be empty');
    if (!token) throw new ConfigError('collective group needs the cluster token');
    const bindHost = options.bindHost ?? process.env.CLAWRAY_BIND_HOST ?? '127.0.0.1';
    const server = net.createServer({ noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, bindHost, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const port = (server.address() as net.AddressInfo).port;
    const wildcard = bindHost === '0.0.0.0' || bindHost === '::' || bindHost === '';
    const advertise =
      options.advertiseHost ?? process.env.CLAWRAY_ADVERTISE_HOST ?? (wildcard ? hostname() : bindHost);
    return new CollectiveGroup(options, server, formatHostPort(advertise, port));
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
   * on each rank). Resolves once this rank is connected to its next rank and has accepted its
   * previous rank; fails with CollectiveError on a refused handshake or after the timeout.
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
    const incoming = new Promise<void>((resolve, reject) => {
      if (this.incoming) resolve();
      else this.incomingWaiter = { resolve, reject };
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            this.error(
              this.incoming ? this.next : this.prev,
              this.incoming
                ? `rank ${this.next} did not accept the connection within ${this.timeoutMs} ms`
                : `rank ${this.prev} did not connect within ${this.timeoutMs} ms`,
            ),
          ),
        this.timeoutMs,
      );
    });
    try {
      await Promise.race([Promise.all([this.dial(addresses[this.next]!), incoming]), timeout]);
    } catch (err) {
      const failure =
        err instanceof CollectiveError ? err : this.error(this.rank, `connect failed: ${String(err)}`, err);
      this.fail(failure);
      throw failure;
    } finally {
      clearTimeout(timer);
    }
    this.connected = true;
  }

  private async dial(address: string): Promise<void> {
    const { host, port } = parseHostPort(address);
    const socket = net.connect({ host, port, noDelay: true });
    socket.on('error', () => {}); // reported through 'close' or the handshake
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', (err) =>
        reject(
          this.error(this.next, `cannot connect to rank ${this.next} at ${address}: ${err.message}`, err),
        ),
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
    let reply: { ok?: boolean; error?: string };
    try {
      reply = (await readJson(socket, this.timeoutMs, `handshake reply from rank ${this.next}`))
        .value as typeof reply;
    } catch (err) {
      socket.destroy();
      throw this.error(
        this.next,
        `handshake with rank ${this.next} at ${address} failed: ${(err as Error).message}`,
        err,
      );
    }
    if (!reply?.ok) {
      socket.destroy();
      throw this.error(
        this.next,
        `rank ${this.next} at ${address} refused the connection: ${reply?.error ?? 'no reason given'}`,
      );
    }
    if (this.closed || this.failure) {
      socket.destroy();
      throw this.failure ?? this.error(this.rank, 'the group is closed');
    }
    this.outgoing = socket;
    // Nothing is ever read from the sending side; keep it flowing so a peer's close is seen.
    socket.on('data', () => {});
    socket.on('close', () => this.peerGone(this.next, 'closed its connection'));
    socket.on('error', (err) => this.peerGone(this.next, `connection error (${err.message})`));
    socket.on('drain', () => {
      this.waitingDrain = false;
      this.pumpSend();
    });
    socket.resume();
  }

  private accept(socket: net.Socket): void {
    socket.on('error', () => {});
    const from = `${socket.remoteAddress}:${socket.remotePort}`;
    readJson(socket, this.timeoutMs, 'handshake').then(
      ({ value, rest }) => {
        const hello = value as Partial<Hello>;
        const refuse = (reason: string, failGroup: boolean): void => {
          socket.end(encodeJson({ ok: false, error: reason }));
          if (failGroup && this.incomingWaiter) {
            const claimed = typeof hello.rank === 'number' ? hello.rank : this.prev;
            const waiter = this.incomingWaiter;
            this.incomingWaiter = undefined;
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
        if (hello.rank !== this.prev)
          return refuse(`rank ${this.rank} receives from rank ${this.prev}, not rank ${hello.rank}`, true);
        if (this.incoming || this.closed || this.failure)
          return refuse('this rank already has its connection from the previous rank', false);
        this.incoming = socket;
        socket.on('data', (chunk: Buffer) => this.onData(chunk));
        socket.on('close', () => this.peerGone(this.prev, 'closed its connection'));
        socket.on('error', (err) => this.peerGone(this.prev, `connection error (${err.message})`));
        socket.write(encodeJson({ ok: true }));
        if (rest.length > 0) this.chunks.push(rest);
        socket.resume();
        const waiter = this.incomingWaiter;
        this.incomingWaiter = undefined;
        waiter?.resolve();
        this.pumpRecv();
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
    const waiter = this.incomingWaiter;
    this.incomingWaiter = undefined;
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

  /** Fails the pending operation and stops the server and connections; the group is done. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (!this.failure) {
      const err = this.error(this.rank, 'the group was closed');
      const op = this.op;
      this.op = undefined;
      op?.reject(err);
      this.incomingWaiter?.reject(err);
      this.incomingWaiter = undefined;
    }
    this.closed = true;
    this.clearTimer();
    this.outgoing?.destroy();
    this.incoming?.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** In place: every rank ends with the same (bit-identical) elementwise sum or mean. */
  allReduce(buffer: Float32Array, op: ReduceOp = 'sum'): Promise<void> {
    if (op !== 'sum' && op !== 'mean')
      return Promise.reject(new ConfigError(`unknown reduce op '${op}' (want sum or mean)`));
    return this.enqueue(() =>
      this.measured('allreduce', buffer.byteLength, () => this.runAllReduce(buffer, op)),
    );
  }

  /** In place: every rank ends with `root`'s buffer (passed along the ring, pipelined). */
  broadcast(buffer: Float32Array, root: number): Promise<void> {
    if (!Number.isInteger(root) || root < 0 || root >= this.worldSize)
      return Promise.reject(
        new ConfigError(`broadcast root must be a rank in [0, ${this.worldSize}), got ${root}`),
      );
    return this.enqueue(() =>
      this.measured('broadcast', buffer.byteLength, () => this.runBroadcast(buffer, root)),
    );
  }

  /** Counts an operation that completed; failed ones count nowhere. */
  private async measured(op: CollectiveOp, bytes: number, run: () => Promise<void>): Promise<void> {
    const started = performance.now();
    await run();
    this.metrics.observe(op, bytes, (performance.now() - started) / 1000);
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
      if (this.recvPaused) {
        this.recvPaused = false;
        this.incoming?.resume();
      }
      this.pumpSend();
      this.pumpRecv();
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
      const [s, e] = chunkBounds(len, n, c);
      return subRanges(s, e, this.subFloats);
    };
    return this.begin((op) => {
      for (let k = 0; k < steps; k++) op.sendsLeft += subs(sendChunk(k)).length;
      for (let k = 0; k < steps; k++) {
        const ranges = subs(recvChunk(k));
        for (let j = 0; j < ranges.length; j++) {
          const [s, e] = ranges[j]!;
          const forward =
            k + 1 < steps ? (): void => this.queueSend(op.id, k + 1, j, bytesOf(buffer, s, e)) : () => {};
          if (k < n - 1) {
            // Reduce-scatter: add the previous rank's partial sum into ours.
            const scratch = this.scratch;
            const divide = reduce === 'mean' && k === n - 2;
            op.recvs.push({
              step: k,
              sub: j,
              dest: this.scratchBytes.subarray(0, (e - s) * 4),
              done: () => {
                if (divide) addDivideInto(buffer, s, scratch, e - s, n);
                else addInto(buffer, s, scratch, e - s);
                forward();
              },
            });
          } else {
            // All-gather: the owner's final bytes, copied straight into place.
            op.recvs.push({ step: k, sub: j, dest: bytesOf(buffer, s, e), done: forward });
          }
        }
      }
      const first = subs(sendChunk(0));
      for (let j = 0; j < first.length; j++)
        this.queueSend(op.id, 0, j, bytesOf(buffer, first[j]![0], first[j]![1]));
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

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    if (this.op) this.touch();
    this.pumpRecv();
  }

  /** Copies up to `dest.length - at` bytes from the queued chunks into dest; returns the count. */
  private take(dest: Uint8Array, at: number): number {
    let copied = 0;
    while (at + copied < dest.length && this.chunks.length > 0) {
      const chunk = this.chunks[0]!;
      const n = Math.min(chunk.length - this.chunkOffset, dest.length - at - copied);
      dest.set(chunk.subarray(this.chunkOffset, this.chunkOffset + n), at + copied);
      copied += n;
      this.chunkOffset += n;
      if (this.chunkOffset === chunk.length) {
        this.chunks.shift();
        this.chunkOffset = 0;
      }
    }
    return copied;
  }

  private pumpRecv(): void {
    while (!this.failure && !this.closed) {
      if (!this.frame) {
        this.headerFilled += this.take(this.header, this.headerFilled);
        if (this.headerFilled < HEADER_BYTES) return;
        const opId = this.header.readUInt32LE(0);
        const step = this.header.readUInt32LE(4);
        const sub = this.header.readUInt32LE(8);
        const bytes = this.header.readUInt32LE(12);
        if (step === ABORT_STEP) {
          const reason = Buffer.alloc(Math.min(bytes, MAX_HELLO_BYTES));
          this.frame = {
            written: 0,
            slot: {
              step,
              sub,
              dest: reason,
              done: () => {
                const text = reason.toString('utf8');
                this.fail(this.error(sub, `rank ${sub} failed: ${text}`), text);
              },
            },
          };
        } else {
          const op = this.op;
          if (!op || opId !== op.id) {
            // A frame of the next operation: wait until this rank starts it (TCP flow control
            // holds the sender back meanwhile).
            if (!op || opId === (op.id + 1) >>> 0) {
              this.recvPaused = true;
              this.incoming?.pause();
              return;
            }
            this.protocolError(`frame of operation ${opId} during operation ${op.id}`);
            return;
          }
          const slot = op.recvs[op.recvIndex];
          if (!slot || slot.step !== step || slot.sub !== sub || slot.dest.length !== bytes) {
            this.protocolError(
              `got step ${step} part ${sub} (${bytes} bytes), expected ` +
                (slot ? `step ${slot.step} part ${slot.sub} (${slot.dest.length} bytes)` : 'nothing') +
                ': did every rank call the same collective with the same buffer length?',
            );
            return;
          }
          this.frame = { slot, written: 0 };
        }
      }
      const frame = this.frame;
      frame.written += this.take(frame.slot.dest, frame.written);
      if (frame.written < frame.slot.dest.length) return;
      this.frame = undefined;
      this.headerFilled = 0;
      if (frame.slot.step !== ABORT_STEP && this.op) this.op.recvIndex++;
      frame.slot.done();
      this.maybeFinish();
    }
  }

  private protocolError(detail: string): void {
    const reason = `protocol mismatch with rank ${this.prev}: ${detail}`;
    this.fail(this.error(this.prev, reason), reason);
  }
}
