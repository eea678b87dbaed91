/**
 * The trajectory buffer over Redis Streams (Redis >= 6.2 for XAUTOCLAIM): consumer groups
 * (XGROUP CREATE … MKSTREAM, XREADGROUP, XACK), XAUTOCLAIM + XPENDING for stale entries and
 * delivery counts, a dead-letter stream, a hash trajectoryId → entry id written in the same Lua
 * script as the XADDs so an append is idempotent and atomic, and a hash of counters for
 * `stats()`. Keys come from common/redis-keys.ts.
 *
 * A batch of appends is one MULTI (one round trip): an HSET of the encoded records
 * (record-codec.ts, written straight into the command's bytes: payloads-hset.ts) into the
 * payloads hash, then the append script, which XADDs small entries
 * (trajectoryId + payload key) for the new ones and drops the duplicates' payloads. The records
 * stay out of Lua because Redis hashes every byte that enters it (see redis-scripts.ts); reads
 * fetch them with one HMGET per batch of entries.
 */
import { randomBytes } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { ConfigError, UnavailableError } from '../../common/errors.js';
import { type BufferKeys, bufferKeys } from '../../common/redis-keys.js';
import { readJsonl, writeJsonl } from './jsonl.js';
import { checkGroupName, checkMaxDeliveries, checkMaxLen } from './memory-buffer.js';
import { type PayloadsHset, payloadsHset } from './payloads-hset.js';
import { decodeRecord, entryRecord, RECORD_FIELD } from './record-codec.js';
import {
  ACK_SCRIPT,
  APPEND_SCRIPT,
  DEAD_LETTER_SCRIPT,
  READ_PENDING_SCRIPT,
  STATS_SCRIPT,
} from './redis-scripts.js';
import {
  type BufferEntry,
  type BufferOptions,
  type BufferStats,
  type ClaimOptions,
  DEFAULT_CLAIM_COUNT,
  type DeadLetter,
  type GroupStats,
  type PendingEntry,
  type ReadOptions,
  type ReadPendingOptions,
  type TrajectoryBuffer,
  type TrajectoryRecord,
} from './types.js';

/**
 * Records per append script call, and ids per ack call: keeps each script's run (which blocks
 * the Redis server) short and its argument list far below Lua's unpack limit (~8000).
 */
const APPEND_CHUNK = 256;
const ACK_CHUNK = 1000;
/** Encoding buffers kept for reuse: as many as batches usually are in flight at once. */
const SPARE_BUFFERS = 8;

type Bulk = Buffer;
type StreamEntry = [id: Bulk, fields: Bulk[] | null];
type Arg = string | number | Buffer;

/** The scripts, as `defineCommand` adds them to the connection (keys first, then ARGV). */
interface Scripts {
  clawrayBufferAck(stream: string, stats: string, ...args: Arg[]): Promise<number>;
  clawrayBufferDeadLetter(
    stream: string,
    dead: string,
    stats: string,
    payloads: string,
    ...args: Arg[]
  ): Promise<number>;
  clawrayBufferReadPendingBuffer(
    stream: string,
    dead: string,
    stats: string,
    payloads: string,
    ...args: Arg[]
  ): Promise<[Bulk, number, Bulk[]][]>;
  clawrayBufferStats(
    stream: string,
    dead: string,
    stats: string,
    trained: string,
    ...args: Arg[]
  ): Promise<[string[], (string | number)[][], number, number, number]>;
}

/** The MULTI of an append, with the append script as `defineCommand` adds it to pipelines. */
interface AppendPipeline {
  sendCommand(command: PayloadsHset['command']): AppendPipeline;
  clawrayBufferAppend(
    stream: string,
    ids: string,
    stats: string,
    payloads: string,
    ...args: Arg[]
  ): AppendPipeline;
  exec(): Promise<[Error | null, unknown][] | null>;
}

export interface RedisBufferOptions extends BufferOptions {
  /** Extra ioredis options (tests pass `lazyConnect`, retry settings...). */
  redis?: RedisOptions;
}

export class RedisTrajectoryBuffer implements TrajectoryBuffer {
  readonly kind = 'redis' as const;
  readonly keys: BufferKeys;
  private readonly redis: Redis;
  private readonly scripts: Scripts;
  /** Connections for blocking reads, so a waiting XREADGROUP never stalls other commands. */
  private readonly idleBlockers: Redis[] = [];
  private readonly busyBlockers = new Set<Redis>();
  private readonly groups = new Set<string>();
  /** Buffers of sent appends, for the next ones (see payloads-hset.ts). */
  private readonly spareBuffers: Buffer[] = [];
  private readonly maxLen: number;
  private readonly maxDeliveries: number;
  private closed = false;
  /** Payload keys are `<payloadPrefix><call>:<i>`: random per handle, so handles never collide. */
  private readonly payloadPrefix = randomBytes(9).toString('base64url');
  private appendCalls = 0;

  constructor(url: string, options: RedisBufferOptions = {}) {
    this.keys = bufferKeys(options.cluster, options.name);
    this.maxLen = checkMaxLen(options.maxLen) ?? 0;
    this.maxDeliveries = checkMaxDeliveries(options.maxDeliveries);
    // Every key is built in common/redis-keys.ts; ioredis's prefix would reach only some of them
    // (not XGROUP's, nor the pre-encoded HSET's).
    if (options.redis?.keyPrefix) {
      const message = 'trajectory buffer option redis.keyPrefix is not supported: use cluster and name';
      throw new ConfigError(message, { fields: { field: 'redis.keyPrefix' } });
    }
    this.redis = new Redis(url, { maxRetriesPerRequest: 3, ...options.redis });
    this.redis.on('error', () => {}); // surfaced through the failing command instead
    this.redis.defineCommand('clawrayBufferAppend', { numberOfKeys: 4, lua: APPEND_SCRIPT });
    this.redis.defineCommand('clawrayBufferAck', { numberOfKeys: 2, lua: ACK_SCRIPT });
    this.redis.defineCommand('clawrayBufferDeadLetter', { numberOfKeys: 4, lua: DEAD_LETTER_SCRIPT });
    this.redis.defineCommand('clawrayBufferReadPending', { numberOfKeys: 4, lua: READ_PENDING_SCRIPT });
    this.redis.defineCommand('clawrayBufferStats', { numberOfKeys: 4, lua: STATS_SCRIPT });
    this.scripts = this.redis as unknown as Scripts;
  }

  async append(records: readonly TrajectoryRecord[]): Promise<string[]> {
    this.checkOpen();
    if (records.length === 0) return [];
    // Everything is validated and encoded before anything is sent: a bad record appends nothing.
    const { payloads } = this.keys;
    const chunks: [prefix: string, hset: PayloadsHset][] = [];
    for (let start = 0; start < records.length; start += APPEND_CHUNK) {
      // Payload keys unique to this call, so a duplicate's payload never overwrites the
      // original's: this handle's random prefix and a call counter; the script builds the same keys.
      const prefix = `${this.payloadPrefix}${(this.appendCalls++).toString(36)}:`;
      const batch = records.slice(start, start + APPEND_CHUNK);
      chunks.push([prefix, payloadsHset(payloads, prefix, batch, this.spareBuffers.pop())]);
    }
    // Sent back to back on the connection: the chunks are pipelined, not awaited one by one.
    const ids = await Promise.all(
      chunks.map(([prefix, hset]) => this.call(() => this.appendChunk(prefix, hset))),
    );
    return ids.flat();
  }

  /** One MULTI: the records into the payloads hash, then the append script (see the header). */
  private async appendChunk(prefix: string, hset: PayloadsHset): Promise<string[]> {
    const { stream, ids, stats, payloads } = this.keys;
    const multi = this.redis.multi() as unknown as AppendPipeline;
    multi.sendCommand(hset.command);
    const script = [this.maxLen, prefix, ...hset.trajectoryIds];
    const replies = await multi.clawrayBufferAppend(stream, ids, stats, payloads, ...script).exec();
    if (replies === null)
      throw new UnavailableError(`trajectory buffer ${stream}: append transaction aborted`);
    for (const [err] of replies) if (err) throw err;
    // Redis has read every byte of the command: its buffer can carry the next batch.
    if (this.spareBuffers.length < SPARE_BUFFERS) this.spareBuffers.push(hset.buffer);
    return replies[1][1] as string[];
  }

  async read(options: ReadOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    return this.withGroup(options.group, () => this.readNew(options));
  }

  private async readNew(options: ReadOptions): Promise<BufferEntry[]> {
    const count = options.count ?? 1;
    const blockMs = options.blockMs ?? 0;
    const args: Arg[] = ['GROUP', options.group, options.consumer, 'COUNT', count];
    let reply: [Bulk, StreamEntry[]][] | null;
    if (blockMs > 0) {
      let conn = this.idleBlockers.pop();
      if (!conn) {
        conn = this.redis.duplicate();
        conn.on('error', () => {}); // once per connection: a reused one already has it
      }
      this.busyBlockers.add(conn);
      try {
        reply = (await this.call(() =>
          conn.callBuffer('XREADGROUP', ...args, 'BLOCK', blockMs, 'STREAMS', this.keys.stream, '>'),
        )) as typeof reply;
      } finally {
        this.busyBlockers.delete(conn);
        if (this.closed) conn.disconnect();
        else this.idleBlockers.push(conn);
      }
    } else {
      reply = (await this.call(() =>
        this.redis.callBuffer('XREADGROUP', ...args, 'STREAMS', this.keys.stream, '>'),
      )) as typeof reply;
    }
    const entries = (reply?.[0]?.[1] ?? []).filter((e): e is [Bulk, Bulk[]] => e[1] !== null);
    const records = await this.resolve(entries.map(([, fields]) => fields));
    return entries.flatMap(([id], i) => {
      const record = records[i];
      return record === undefined ? [] : [{ entryId: id.toString(), record, deliveries: 1 }];
    });
  }

  async ack(group: string, entryIds: readonly string[]): Promise<number> {
    this.checkOpen();
    if (entryIds.length === 0) return 0;
    const { stream, stats } = this.keys;
    return this.withGroup(group, async () => {
      const chunks: Promise<number>[] = [];
      for (let start = 0; start < entryIds.length; start += ACK_CHUNK) {
        const ids = entryIds.slice(start, start + ACK_CHUNK);
        chunks.push(this.call(() => this.scripts.clawrayBufferAck(stream, stats, group, ...ids)));
      }
      return (await Promise.all(chunks)).reduce((a, b) => a + b, 0);
    });
  }

  async claimStale(options: ClaimOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    return this.withGroup(options.group, () => this.claim(options));
  }

  private async claim(options: ClaimOptions): Promise<BufferEntry[]> {
    const count = options.count ?? DEFAULT_CLAIM_COUNT;
    const reply = (await this.call(() =>
      this.redis.callBuffer(
        'XAUTOCLAIM',
        this.keys.stream,
        options.group,
        options.consumer,
        Math.max(0, Math.floor(options.idleMs)),
        '0-0',
        'COUNT',
        count,
      ),
    )) as [Bulk, StreamEntry[], Bulk[]?];
    const claimed = reply[1]
      .filter((e): e is [Bulk, Bulk[]] => e !== null && e[1] !== null)
      .map(([id, fields]) => [id.toString(), fields] as const);
    if (claimed.length === 0) return [];
    // Delivery counts (XAUTOCLAIM has just incremented them) for what this consumer now holds.
    const counts = new Map<string, number>();
    const pel = (await this.call(() =>
      this.redis.call(
        'XPENDING',
        this.keys.stream,
        options.group,
        claimed[0][0],
        claimed[claimed.length - 1][0],
        claimed.length,
        options.consumer,
      ),
    )) as [string, string, number, number][];
    for (const [id, , , deliveries] of pel) counts.set(id, Number(deliveries));
    const live: [string, Bulk[], number][] = [];
    const dead: Arg[] = [];
    for (const [entryId, fields] of claimed) {
      const deliveries = counts.get(entryId);
      if (deliveries === undefined) continue; // acked or claimed by someone else meanwhile
      if (deliveries > this.maxDeliveries) dead.push(entryId, deliveries - 1);
      else live.push([entryId, fields, deliveries]);
    }
    if (dead.length > 0) {
      const { stream, stats, payloads } = this.keys;
      await this.call(() =>
        this.scripts.clawrayBufferDeadLetter(
          stream,
          this.keys.dead,
          stats,
          payloads,
          options.group,
          Date.now(),
          ...dead,
        ),
      );
    }
    const records = await this.resolve(live.map(([, fields]) => fields));
    return live.flatMap(([entryId, , deliveries], i) => {
      const record = records[i];
      return record === undefined ? [] : [{ entryId, record, deliveries }];
    });
  }

  async readPending(options: ReadPendingOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    const count = options.count ?? DEFAULT_CLAIM_COUNT;
    const { stream, dead, stats, payloads } = this.keys;
    const rows = await this.withGroup(options.group, () =>
      this.scripts.clawrayBufferReadPendingBuffer(
        stream,
        dead,
        stats,
        payloads,
        options.group,
        options.consumer,
        count,
        this.maxDeliveries,
        Date.now(),
      ),
    );
    const records = await this.resolve(rows.map(([, , fields]) => fields));
    return rows.flatMap(([id, deliveries], i) => {
      const record = records[i];
      return record === undefined ? [] : [{ entryId: id.toString(), record, deliveries: Number(deliveries) }];
    });
  }

  async deadLetters(): Promise<DeadLetter[]> {
    this.checkOpen();
    const entries = (await this.call(() => this.redis.callBuffer('XRANGE', this.keys.dead, '-', '+'))) as [
      Bulk,
      Bulk[],
    ][];
    return entries.map(([, fields]) => {
      const f = new Map<string, Bulk>();
      for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i].toString('latin1'), fields[i + 1]);
      const text = (name: string) => f.get(name)?.toString() ?? '';
      return {
        entryId: text('entryId'),
        group: text('group'),
        deliveries: Number(text('deliveries')),
        deadAtMs: Number(text('deadAtMs')),
        record: inlineRecord(fields),
      };
    });
  }

  async pending(group: string): Promise<PendingEntry[]> {
    this.checkOpen();
    const rows = await this.withGroup(group, async () => {
      const summary = (await this.call(() => this.redis.xpending(this.keys.stream, group))) as [
        number,
        ...unknown[],
      ];
      const total = Number(summary[0]);
      if (total === 0) return [];
      return (await this.call(() =>
        this.redis.call('XPENDING', this.keys.stream, group, '-', '+', total),
      )) as [string, string, number, number][];
    });
    return rows.map(([entryId, consumer, idleMs, deliveries]) => ({
      entryId,
      consumer,
      idleMs: Number(idleMs),
      deliveries: Number(deliveries),
    }));
  }

  async length(): Promise<number> {
    this.checkOpen();
    return this.call(() => this.redis.xlen(this.keys.stream));
  }

  async stats(): Promise<BufferStats> {
    this.checkOpen();
    const { stream, dead, stats, trained } = this.keys;
    const [counters, groups, length, deadLetters, trainedCount] = await this.call(() =>
      this.scripts.clawrayBufferStats(stream, dead, stats, trained),
    );
    const c = new Map<string, number>();
    for (let i = 0; i + 1 < counters.length; i += 2) c.set(counters[i], Number(counters[i + 1]));
    const appended = c.get('appended') ?? 0;
    const names = new Set<string>();
    const pending = new Map<string, number>();
    for (const g of groups) {
      const info = new Map<string, string | number>();
      for (let i = 0; i + 1 < g.length; i += 2) info.set(String(g[i]), g[i + 1]);
      const name = String(info.get('name'));
      names.add(name);
      pending.set(name, Number(info.get('pending') ?? 0));
    }
    for (const key of c.keys()) {
      const m = /^(?:acked|dead):(.*)$/s.exec(key);
      if (m) names.add(m[1]);
    }
    const out: Record<string, GroupStats> = {};
    for (const name of [...names].sort()) {
      const acked = c.get(`acked:${name}`) ?? 0;
      const deadOf = c.get(`dead:${name}`) ?? 0;
      const p = pending.get(name) ?? 0;
      out[name] = {
        acked,
        pending: p,
        deadLetters: deadOf,
        unread: Math.max(0, appended - acked - p - deadOf),
      };
    }
    return {
      appended,
      duplicates: c.get('duplicates') ?? 0,
      length: Number(length),
      trained: Number(trainedCount),
      deadLetters: Number(deadLetters),
      groups: out,
    };
  }

  async markTrained(trajectoryIds: readonly string[]): Promise<number> {
    this.checkOpen();
    if (trajectoryIds.length === 0) return 0;
    return this.call(() => this.redis.sadd(this.keys.trained, ...trajectoryIds));
  }

  async wasTrained(trajectoryId: string): Promise<boolean> {
    this.checkOpen();
    return (await this.call(() => this.redis.sismember(this.keys.trained, trajectoryId))) === 1;
  }

  async exportJsonl(file: string): Promise<number> {
    this.checkOpen();
    const redis = this.redis;
    const stream = this.keys.stream;
    const call = this.call.bind(this);
    const resolve = this.resolve.bind(this);
    return writeJsonl(
      file,
      (async function* () {
        let start = '-';
        for (;;) {
          const page = (await call(() => redis.callBuffer('XRANGE', stream, start, '+', 'COUNT', 1000))) as [
            Bulk,
            Bulk[],
          ][];
          if (page.length === 0) return;
          const records = await resolve(page.map(([, fields]) => fields));
          yield records.filter((r): r is TrajectoryRecord => r !== undefined);
          start = `(${page[page.length - 1][0].toString()}`;
        }
      })(),
    );
  }

  async importJsonl(file: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const page of readJsonl(file)) ids.push(...(await this.append(page)));
    return ids;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.busyBlockers) c.disconnect();
    await Promise.all(this.idleBlockers.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  async destroy(): Promise<void> {
    this.checkOpen();
    const { stream, payloads, dead, ids, trained, stats } = this.keys;
    await this.call(() => this.redis.del(stream, payloads, dead, ids, trained, stats));
    await this.close();
  }

  /**
   * The records of stream entries, fetched from the payloads hash with one HMGET (or read
   * inline from old entries); undefined for an entry whose payload is gone (trimmed meanwhile).
   */
  private async resolve(entries: readonly Bulk[][]): Promise<(TrajectoryRecord | undefined)[]> {
    const refs = entries.map((fields) => entryRecord(fields));
    const keys: string[] = [];
    for (const r of refs) if ('payloadKey' in r) keys.push(r.payloadKey);
    const values =
      keys.length === 0 ? [] : await this.call(() => this.redis.hmgetBuffer(this.keys.payloads, ...keys));
    let k = 0;
    return refs.map((r) => {
      if (!('payloadKey' in r)) return decodeRecord(r.field, r.value);
      const value = values[k++];
      return value === null ? undefined : decodeRecord(RECORD_FIELD, value);
    });
  }

  /**
   * Runs `fn` once the group exists; if the group vanished meanwhile (the buffer destroyed
   * through another handle), recreates it and runs `fn` once more.
   */
  private async withGroup<T>(group: string, fn: () => Promise<T>): Promise<T> {
    await this.ensureGroup(group);
    try {
      return await fn();
    } catch (err) {
      if (!isNoGroup(err)) throw err;
      await this.ensureGroup(group);
      return fn();
    }
  }

  /** XGROUP CREATE at the start of the stream; an existing group (BUSYGROUP) is fine. */
  private async ensureGroup(group: string): Promise<void> {
    if (this.groups.has(group)) return;
    checkGroupName(group);
    try {
      await this.redis.xgroup('CREATE', this.keys.stream, group, '0', 'MKSTREAM');
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('BUSYGROUP'))) throw this.wrap(err);
    }
    this.groups.add(group);
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      // A group deleted behind our back (or the whole buffer destroyed): forget the groups so
      // the next call recreates them.
      if (isNoGroup(err)) this.groups.clear();
      throw this.wrap(err);
    }
  }

  private wrap(err: unknown): Error {
    if (err instanceof ConfigError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new UnavailableError(`trajectory buffer ${this.keys.stream}: redis: ${message}`, { cause: err });
  }

  private checkOpen(): void {
    if (this.closed) throw new ConfigError(`trajectory buffer ${this.keys.stream} is closed`);
  }
}

/** A dead letter's record, which its entry carries inline. */
function inlineRecord(fields: readonly Bulk[]): TrajectoryRecord {
  const r = entryRecord(fields);
  if ('payloadKey' in r) throw new ConfigError('dead-letter entry without an inline record');
  return decodeRecord(r.field, r.value);
}

function isNoGroup(err: unknown): boolean {
  return err instanceof Error && err.message.includes('NOGROUP');
}
