/**
 * The trajectory buffer over Redis Streams (Redis >= 6.2 for XAUTOCLAIM): XADD with `MAXLEN ~`,
 * consumer groups (XGROUP CREATE … MKSTREAM, XREADGROUP, XACK), XAUTOCLAIM + XPENDING for stale
 * entries and delivery counts, a dead-letter stream, and a hash trajectoryId → entry id written
 * in the same Lua script as the XADD so an append is idempotent and atomic.
 * Keys come from `keys.ts`.
 */
import { Redis } from 'ioredis';
import { ConfigError, UnavailableError } from '../../common/errors.js';
import { readJsonl, writeJsonl } from './jsonl.js';
import { type BufferKeys, bufferKeys, validateBufferName } from './keys.js';
import { checkGroupName, checkMaxDeliveries, checkMaxLen } from './memory-buffer.js';
import {
  type BufferEntry,
  type BufferOptions,
  type ClaimOptions,
  DEFAULT_CLAIM_COUNT,
  type DeadLetter,
  type PendingEntry,
  parseTrajectoryRecord,
  type ReadOptions,
  type TrajectoryBuffer,
  type TrajectoryRecord,
} from './types.js';

/** KEYS: stream, ids hash. ARGV: maxLen (0 = none), then trajectoryId, record JSON pairs. */
const APPEND_SCRIPT = `
local maxlen = tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV, 2 do
  local id = redis.call('HGET', KEYS[2], ARGV[i])
  if not id then
    if maxlen > 0 then
      id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, '*', 'record', ARGV[i + 1])
    else
      id = redis.call('XADD', KEYS[1], '*', 'record', ARGV[i + 1])
    end
    redis.call('HSET', KEYS[2], ARGV[i], id)
  end
  out[#out + 1] = id
end
return out
`;

/**
 * KEYS: stream, dead. ARGV: group, deadAtMs, then entryId, deliveries pairs. Acks each entry and,
 * only if it was still pending (so two claimers never both dead-letter it), copies it to the
 * dead-letter stream. Returns how many were moved.
 */
const DEAD_LETTER_SCRIPT = `
local moved = 0
for i = 3, #ARGV, 2 do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    local e = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])
    local record = ''
    if e[1] then
      local f = e[1][2]
      for j = 1, #f, 2 do if f[j] == 'record' then record = f[j + 1] end end
    end
    redis.call('XADD', KEYS[2], '*', 'entryId', ARGV[i], 'group', ARGV[1], 'deliveries', ARGV[i + 1],
      'deadAtMs', ARGV[2], 'record', record)
    moved = moved + 1
  end
end
return moved
`;

type StreamEntry = [id: string, fields: string[] | null];

/** The two scripts, as `defineCommand` adds them to the connection. */
interface Scripts {
  clawrayBufferAppend(stream: string, ids: string, ...args: (string | number)[]): Promise<string[]>;
  clawrayBufferDeadLetter(stream: string, dead: string, ...args: (string | number)[]): Promise<number>;
}

export interface RedisBufferOptions extends BufferOptions {
  /** Extra ioredis options (tests pass `lazyConnect`, retry settings...). */
  redis?: import('ioredis').RedisOptions;
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
  private readonly maxLen: number;
  private readonly maxDeliveries: number;
  private closed = false;

  constructor(url: string, options: RedisBufferOptions = {}) {
    validateBufferName(options.name);
    this.keys = bufferKeys(options.cluster, options.name);
    this.maxLen = checkMaxLen(options.maxLen) ?? 0;
    this.maxDeliveries = checkMaxDeliveries(options.maxDeliveries);
    this.redis = new Redis(url, { maxRetriesPerRequest: 3, ...options.redis });
    this.redis.on('error', () => {}); // surfaced through the failing command instead
    this.redis.defineCommand('clawrayBufferAppend', { numberOfKeys: 2, lua: APPEND_SCRIPT });
    this.redis.defineCommand('clawrayBufferDeadLetter', { numberOfKeys: 2, lua: DEAD_LETTER_SCRIPT });
    this.scripts = this.redis as unknown as Scripts;
  }

  async append(records: readonly TrajectoryRecord[]): Promise<string[]> {
    this.checkOpen();
    if (records.length === 0) return [];
    const args: string[] = [String(this.maxLen)];
    for (const r of records) {
      const parsed = parseTrajectoryRecord(r);
      args.push(parsed.trajectoryId, JSON.stringify(parsed));
    }
    return this.call(() => this.scripts.clawrayBufferAppend(this.keys.stream, this.keys.ids, ...args));
  }

  async read(options: ReadOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    await this.ensureGroup(options.group);
    const count = options.count ?? 1;
    const blockMs = options.blockMs ?? 0;
    const args: (string | number)[] = ['GROUP', options.group, options.consumer, 'COUNT', count];
    let reply: [string, StreamEntry[]][] | null;
    if (blockMs > 0) {
      const conn = this.idleBlockers.pop() ?? this.redis.duplicate();
      conn.on('error', () => {});
      this.busyBlockers.add(conn);
      try {
        reply = (await this.call(() =>
          conn.call('XREADGROUP', ...args, 'BLOCK', blockMs, 'STREAMS', this.keys.stream, '>'),
        )) as typeof reply;
      } finally {
        this.busyBlockers.delete(conn);
        if (this.closed) conn.disconnect();
        else this.idleBlockers.push(conn);
      }
    } else {
      reply = (await this.call(() =>
        this.redis.call('XREADGROUP', ...args, 'STREAMS', this.keys.stream, '>'),
      )) as typeof reply;
    }
    const entries = reply?.[0]?.[1] ?? [];
    return entries.flatMap(([entryId, fields]) =>
      fields === null ? [] : [{ entryId, record: decodeRecord(fields), deliveries: 1 }],
    );
  }

  async ack(group: string, entryIds: readonly string[]): Promise<number> {
    this.checkOpen();
    if (entryIds.length === 0) return 0;
    await this.ensureGroup(group);
    return this.call(() => this.redis.xack(this.keys.stream, group, ...entryIds));
  }

  async claimStale(options: ClaimOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    await this.ensureGroup(options.group);
    const count = options.count ?? DEFAULT_CLAIM_COUNT;
    const reply = (await this.call(() =>
      this.redis.call(
        'XAUTOCLAIM',
        this.keys.stream,
        options.group,
        options.consumer,
        Math.max(0, Math.floor(options.idleMs)),
        '0-0',
        'COUNT',
        count,
      ),
    )) as [string, StreamEntry[], string[]?];
    const claimed = reply[1].filter((e): e is [string, string[]] => e !== null && e[1] !== null);
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
    const out: BufferEntry[] = [];
    const dead: (string | number)[] = [];
    for (const [entryId, fields] of claimed) {
      const deliveries = counts.get(entryId);
      if (deliveries === undefined) continue; // acked or claimed by someone else meanwhile
      if (deliveries > this.maxDeliveries) dead.push(entryId, deliveries - 1);
      else out.push({ entryId, record: decodeRecord(fields), deliveries });
    }
    if (dead.length > 0) {
      await this.call(() =>
        this.scripts.clawrayBufferDeadLetter(
          this.keys.stream,
          this.keys.dead,
          options.group,
          Date.now(),
          ...dead,
        ),
      );
    }
    return out;
  }

  async deadLetters(): Promise<DeadLetter[]> {
    this.checkOpen();
    const entries = (await this.call(() => this.redis.xrange(this.keys.dead, '-', '+'))) as [
      string,
      string[],
    ][];
    return entries.map(([, fields]) => {
      const f = fieldMap(fields);
      return {
        entryId: f.entryId,
        group: f.group,
        deliveries: Number(f.deliveries),
        deadAtMs: Number(f.deadAtMs),
        record: parseTrajectoryRecord(JSON.parse(f.record)),
      };
    });
  }

  async pending(group: string): Promise<PendingEntry[]> {
    this.checkOpen();
    await this.ensureGroup(group);
    const summary = (await this.call(() => this.redis.xpending(this.keys.stream, group))) as [
      number,
      ...unknown[],
    ];
    const total = Number(summary[0]);
    if (total === 0) return [];
    const rows = (await this.call(() =>
      this.redis.call('XPENDING', this.keys.stream, group, '-', '+', total),
    )) as [string, string, number, number][];
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
    return writeJsonl(
      file,
      (async function* () {
        let start = '-';
        for (;;) {
          const page = (await call(() => redis.xrange(stream, start, '+', 'COUNT', 1000))) as [
            string,
            string[],
          ][];
          if (page.length === 0) return;
          yield page.map(([, fields]) => decodeRecord(fields));
          start = `(${page[page.length - 1][0]}`;
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
      // A group deleted behind our back: forget it so the next call recreates it.
      if (err instanceof Error && err.message.startsWith('NOGROUP')) this.groups.clear();
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

function fieldMap(fields: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) out[fields[i]] = fields[i + 1];
  return out;
}

function decodeRecord(fields: string[]): TrajectoryRecord {
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'record') return JSON.parse(fields[i + 1]) as TrajectoryRecord;
  }
  throw new ConfigError('stream entry without a record field');
}
