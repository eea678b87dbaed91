/**
 * Ring all-reduce and broadcast between actor processes over TCP or, between ranks on the same
 * host, Unix domain sockets (see transport.ts for the choice and the measurements behind it).
 * `CollectiveGroup` is the facade; the parts live apart:
 *
 *   options.ts         what a group is created with, and its checks
 *   data-server.ts     this rank's listening sockets and the address the other ranks dial
 *   link.ts            the two ring links: dial the previous rank, accept the next one
 *   handshake.ts       the hello that opens a link (the cluster token check)
 *   frame-reader.ts    reads each frame straight into its destination (`onread`, no copy)
 *   frame-writer.ts    sends frames in order, pausing for 'drain'
 *   frame-codec.ts     the frame headers checked on arrival, and the abort frame
 *   ring-schedule.ts   which frames an operation sends and expects (pure)
 *   operation.ts       the operation in flight, built from a schedule; its no-progress timer
 *   shm-path.ts        the same-host all-reduce through shared memory (shm-allreduce.ts), the
 *                      ring carrying only its barriers
 *   reduce-kernel.ts   the WebAssembly SIMD sum of the reduce-scatter
 *
 * Operations run one at a time, in call order. Any failure (a peer gone, a mismatched or
 * unexpected frame, no progress before the timeout, an abort from the previous rank) fails the
 * group: the pending operation rejects with a CollectiveError naming the blamed rank, and an
 * abort frame goes on to the next rank so that every rank fails instead of waiting.
 */
import { ConfigError } from '../../common/errors.js';
import { type CollectiveOp, collectiveMetrics } from './collective-metrics.js';
import { type DataServers, startDataServers } from './data-server.js';
import { CollectiveError } from './errors.js';
import { RingLink } from './link.js';
import { CurrentOperation, fillRingOperation, type Operation } from './operation.js';
import { type CollectiveGroupOptions, DEFAULT_SHM_WINDOW_BYTES, validateOptions } from './options.js';
import { type ReduceKernel, reduceKernel } from './reduce-kernel.js';
import { allReduceSchedule, broadcastSchedule } from './ring-schedule.js';
import type { SharedMemory, SharedRegion } from './shared-memory.js';
import { agreeOnRegion, fillShmAllReduce } from './shm-path.js';
import { hostId, type LinkTransport, parseAddress, type TransportOption } from './transport.js';

export type ReduceOp = 'sum' | 'mean';

export { type CollectiveGroupOptions, DEFAULT_SHM_WINDOW_BYTES } from './options.js';

export class CollectiveGroup {
  readonly rank: number;
  readonly worldSize: number;
  readonly groupName: string;
  /** This rank's address (see transport.ts for its form); hand it to the other ranks. */
  readonly address: string;
  /** The transport option the group was created with. */
  readonly transportOption: TransportOption;

  private readonly timeoutMs: number;
  private readonly subFloats: number;
  private readonly kernel: ReduceKernel;
  private readonly shmWindowFloats: number;
  private readonly shmSource?: SharedMemory | string;
  /** The shared region, when this group all-reduces through shared memory. */
  private shm?: SharedRegion;
  /** Why a same-host group is not using shared memory ('auto' fell back to its sockets). */
  private shmUnavailable?: string;

  private readonly link: RingLink;
  private connected = false;
  private closed = false;
  private failure?: CollectiveError;

  private readonly current: CurrentOperation;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly metrics = collectiveMetrics();

  private constructor(
    options: CollectiveGroupOptions,
    private readonly servers: DataServers,
  ) {
    this.rank = options.rank;
    this.worldSize = options.worldSize;
    this.groupName = options.groupName;
    this.transportOption = options.transport ?? 'auto';
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.subFloats = Math.max(1, Math.floor((options.subChunkBytes ?? 1 << 20) / 4));
    this.kernel = reduceKernel(this.subFloats * 4);
    this.shmWindowFloats = (options.shmWindowBytes ?? DEFAULT_SHM_WINDOW_BYTES) / 4;
    this.shmSource = options.sharedMemory;
    this.address = servers.address;
    const { rank, worldSize, groupName, token } = options;
    const timeoutMs = this.timeoutMs;
    const current = new CurrentOperation({
      timeoutMs,
      prev: this.prev,
      next: this.next,
      stalled: (waitingOn) => {
        const reason = `no progress for ${timeoutMs} ms waiting on rank ${waitingOn}`;
        this.fail(this.error(waitingOn, reason), reason);
      },
      protocolError: (detail) => this.protocolError(detail),
    });
    this.current = current;
    const error = this.error.bind(this);
    this.link = new RingLink(
      { rank, worldSize, groupName, token, timeoutMs, error },
      {
        activity: () => current.activity(),
        place: (header, mayWait) => current.place(header, mayWait),
        received: () => current.received(),
        sent: (opId) => current.sent(opId),
        aborted: (blamed, reason) =>
          this.fail(this.error(blamed, `rank ${blamed} failed: ${reason}`), reason),
        protocolError: (detail) => this.protocolError(detail),
        peerGone: (peer, what) => this.peerGone(peer, what),
      },
    );
    servers.onConnection((socket, link) => this.link.accept(socket, link));
  }

  /** Starts this rank's data servers (TCP on port 0 of the bind host; a Unix socket unless 'tcp'). */
  static async create(options: CollectiveGroupOptions): Promise<CollectiveGroup> {
    const transport = validateOptions(options);
    const servers = await startDataServers({ ...options, transport });
    return new CollectiveGroup({ ...options, transport }, servers);
  }

  /**
   * How this rank all-reduces: 'shm' through shared memory; else what its two ring links are
   * ('tcp' or 'unix' when both are that, 'mixed' when they differ); 'none' for a group of one
   * or before `connect`.
   */
  get transport(): LinkTransport | 'shm' | 'mixed' | 'none' {
    return this.shm ? 'shm' : this.link.transport;
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
    const accepted = this.link.whenAccepted();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const dialled = this.link.accepted;
        const reason = dialled
          ? `rank ${this.prev} did not accept the connection within ${this.timeoutMs} ms`
          : `rank ${this.next} did not connect within ${this.timeoutMs} ms`;
        reject(this.error(dialled ? this.prev : this.next, reason));
      }, this.timeoutMs);
    });
    try {
      await Promise.race([
        Promise.all([this.link.dialPrev(peers[this.prev]!, this.transportOption), accepted]),
        timeout,
      ]);
    } catch (err) {
      const failure =
        err instanceof CollectiveError ? err : this.error(this.rank, `connect failed: ${String(err)}`, err);
      this.fail(failure);
      throw failure;
    } finally {
      clearTimeout(timer);
    }
    this.connected = true;
    for (const link of this.link.transports!) this.metrics.links(link, 1);
    if (sameHost && this.transportOption !== 'tcp' && this.transportOption !== 'unix') {
      const agreed = await agreeOnRegion({
        rank: this.rank,
        worldSize: this.worldSize,
        groupName: this.groupName,
        windowFloats: this.shmWindowFloats,
        source: this.shmSource,
        broadcast: (buffer) => this.enqueue(() => this.runBroadcast(buffer, 0)),
        allReduce: (buffer) => this.enqueue(() => this.runAllReduce(buffer, 'sum')),
      });
      if ('region' in agreed) this.shm = agreed.region;
      else {
        this.shmUnavailable = agreed.unavailable;
        if (this.transportOption === 'shm') {
          const failure = this.error(this.rank, `transport 'shm': ${this.shmUnavailable}`);
          this.fail(failure, this.shmUnavailable);
          throw failure;
        }
      }
    }
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
      this.measured(
        'broadcast',
        buffer.byteLength,
        () => this.runBroadcast(buffer, root),
        this.link.transport,
      ),
    );
  }

  /** Fails the pending operation and stops the servers and connections; the group is done. */
  async close(): Promise<void> {
    if (this.closed) return;
    let err: CollectiveError | undefined;
    if (!this.failure) {
      err = this.error(this.rank, 'the group was closed');
      this.current.abort(err);
    }
    if (this.connected) for (const link of this.link.transports ?? []) this.metrics.links(link, -1);
    this.closed = true;
    this.link.close(err);
    // Nothing runs an operation's work after `closed` is set, so nothing reads the pages now.
    this.shm?.close();
    this.shm = undefined;
    await this.servers.close();
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

  private begin(build: (op: Operation) => void): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(this.error(this.rank, 'the group is closed'));
    if (!this.connected)
      return Promise.reject(new ConfigError(`collective group '${this.groupName}' is not connected yet`));
    return this.current.start(build, () => {
      this.link.resume();
      this.link.flush();
    });
  }

  private runAllReduce(buffer: Float32Array, reduce: ReduceOp): Promise<void> {
    const n = this.worldSize;
    if (n === 1) return this.failure ? Promise.reject(this.failure) : Promise.resolve();
    const schedule = allReduceSchedule(this.rank, n, buffer.length, this.subFloats);
    const divideBy = reduce === 'mean' ? n : 1;
    return this.begin((op) => fillRingOperation(op, schedule, buffer, this.send, this.kernel, divideBy));
  }

  private runShmAllReduce(region: SharedRegion, buffer: Float32Array, reduce: ReduceOp): Promise<void> {
    return this.begin((op) =>
      fillShmAllReduce(op, {
        region,
        rank: this.rank,
        worldSize: this.worldSize,
        windowFloats: this.shmWindowFloats,
        buffer,
        kernel: this.kernel,
        divideBy: reduce === 'mean' ? this.worldSize : 1,
        send: this.send,
        live: () => !this.closed && !this.failure,
      }),
    );
  }

  private runBroadcast(buffer: Float32Array, root: number): Promise<void> {
    if (this.worldSize === 1) return this.failure ? Promise.reject(this.failure) : Promise.resolve();
    const schedule = broadcastSchedule(this.rank, this.worldSize, buffer.length, this.subFloats, root);
    return this.begin((op) => fillRingOperation(op, schedule, buffer, this.send));
  }

  private readonly send = (opId: number, step: number, sub: number, bytes: Uint8Array): void =>
    this.link.send(opId, step, sub, bytes);

  // ---- failure ------------------------------------------------------------------------------

  private protocolError(detail: string): void {
    const reason = `protocol mismatch with rank ${this.prev}: ${detail}`;
    this.fail(this.error(this.prev, reason), reason);
  }

  private peerGone(rank: number, what: string): void {
    if (this.closed || this.failure) return;
    this.fail(this.error(rank, `rank ${rank} ${what}`), `rank ${rank} ${what}`);
  }

  /**
   * Marks the group failed: rejects the pending operation and, when there is a `reason`, tells
   * the next rank (which tells its next, around the ring) so no rank waits for data that will
   * never come.
   */
  private fail(err: CollectiveError, reason?: string): void {
    if (this.failure || this.closed) return;
    this.failure = err;
    this.current.abort(err);
    const blamed = Number(err.fields.rank ?? this.rank);
    this.link.fail(
      err,
      reason === undefined ? undefined : { blamed, reason: `${reason} (reported by rank ${this.rank})` },
    );
  }
}
