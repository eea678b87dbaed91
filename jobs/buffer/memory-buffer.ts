/**
 * The trajectory buffer in memory, for the embedded cluster and tests: the same consumer-group
 * semantics as the Redis Streams buffer (entry ids `<ms>-<seq>`, per-group pending entries with
 * delivery counts, blocking reads woken by appends, dead letters, idempotent trajectory ids).
 */
import { ConfigError } from '../../common/errors.js';
import { validateBufferName } from '../../common/redis-keys.js';
import { compareEntryIds } from './entry-id.js';
import { readJsonl, writeJsonl } from './jsonl.js';
import {
  type BufferEntry,
  type BufferOptions,
  type BufferStats,
  type ClaimOptions,
  DEFAULT_CLAIM_COUNT,
  DEFAULT_MAX_DELIVERIES,
  type DeadLetter,
  type PendingEntry,
  parseTrajectoryRecord,
  type ReadOptions,
  type ReadPendingOptions,
  type TrajectoryBuffer,
  type TrajectoryRecord,
} from './types.js';

interface Stored {
  id: string;
  record: TrajectoryRecord;
}

interface PendingState {
  consumer: string;
  deliveries: number;
  lastDeliveryMs: number;
}

interface Group {
  /** Absolute index (see `base`) of the next entry never delivered to this group. */
  next: number;
  pel: Map<string, PendingState>;
  acked: number;
  dead: number;
}

export class MemoryTrajectoryBuffer implements TrajectoryBuffer {
  readonly kind = 'memory' as const;
  readonly name: string;
  private readonly maxLen: number | undefined;
  private readonly maxDeliveries: number;
  /** Entries from absolute index `base` on. */
  private log: Stored[] = [];
  private base = 0;
  private readonly byId = new Map<string, Stored>();
  private readonly idByTrajectory = new Map<string, string>();
  private readonly trained = new Set<string>();
  private readonly groups = new Map<string, Group>();
  private readonly dead: DeadLetter[] = [];
  private readonly waiters = new Set<() => void>();
  private appended = 0;
  private duplicates = 0;
  private lastMs = 0;
  private lastSeq = -1;
  private closed = false;

  constructor(options: BufferOptions = {}) {
    this.name = validateBufferName(options.name);
    this.maxLen = checkMaxLen(options.maxLen);
    this.maxDeliveries = checkMaxDeliveries(options.maxDeliveries);
  }

  async append(records: readonly TrajectoryRecord[]): Promise<string[]> {
    this.checkOpen();
    const parsed = records.map((r) => parseTrajectoryRecord(r));
    const ids: string[] = [];
    for (const record of parsed) {
      const existing = this.idByTrajectory.get(record.trajectoryId);
      if (existing !== undefined) {
        ids.push(existing);
        this.duplicates++;
        continue;
      }
      this.appended++;
      const id = this.nextId();
      const stored = { id, record };
      this.log.push(stored);
      this.byId.set(id, stored);
      this.idByTrajectory.set(record.trajectoryId, id);
      ids.push(id);
    }
    this.trim();
    if (this.waiters.size > 0) for (const wake of [...this.waiters]) wake();
    return ids;
  }

  async read(options: ReadOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    const count = options.count ?? 1;
    const group = this.group(options.group);
    const deadline = Date.now() + (options.blockMs ?? 0);
    for (;;) {
      const start = Math.max(group.next - this.base, 0);
      if (start < this.log.length) {
        const now = Date.now();
        const batch = this.log.slice(start, start + count);
        group.next = this.base + start + batch.length;
        return batch.map((s) => {
          group.pel.set(s.id, { consumer: options.consumer, deliveries: 1, lastDeliveryMs: now });
          return { entryId: s.id, record: cloneRecord(s.record), deliveries: 1 };
        });
      }
      const left = deadline - Date.now();
      if (left <= 0 || this.closed) return [];
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        this.waiters.add(wake);
      });
    }
  }

  async ack(group: string, entryIds: readonly string[]): Promise<number> {
    this.checkOpen();
    const g = this.group(group);
    let n = 0;
    for (const id of entryIds) if (g.pel.delete(id)) n++;
    g.acked += n;
    return n;
  }

  async claimStale(options: ClaimOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    const g = this.group(options.group);
    const now = Date.now();
    const count = options.count ?? DEFAULT_CLAIM_COUNT;
    const out: BufferEntry[] = [];
    let examined = 0;
    for (const id of [...g.pel.keys()].sort(compareEntryIds)) {
      if (examined >= count) break;
      if (now - g.pel.get(id)!.lastDeliveryMs < options.idleMs) continue;
      examined++;
      const entry = this.redeliver(options.group, g, id, options.consumer, now);
      if (entry !== undefined) out.push(entry);
    }
    return out;
  }

  async readPending(options: ReadPendingOptions): Promise<BufferEntry[]> {
    this.checkOpen();
    const g = this.group(options.group);
    const now = Date.now();
    const count = options.count ?? DEFAULT_CLAIM_COUNT;
    const mine = [...g.pel.entries()]
      .filter(([, p]) => p.consumer === options.consumer)
      .map(([id]) => id)
      .sort(compareEntryIds)
      .slice(0, count);
    const out: BufferEntry[] = [];
    for (const id of mine) {
      const entry = this.redeliver(options.group, g, id, options.consumer, now);
      if (entry !== undefined) out.push(entry);
    }
    return out;
  }

  async deadLetters(): Promise<DeadLetter[]> {
    this.checkOpen();
    return structuredClone(this.dead);
  }

  async pending(group: string): Promise<PendingEntry[]> {
    this.checkOpen();
    const now = Date.now();
    return [...this.group(group).pel.entries()]
      .sort(([a], [b]) => compareEntryIds(a, b))
      .map(([entryId, p]) => ({
        entryId,
        consumer: p.consumer,
        idleMs: now - p.lastDeliveryMs,
        deliveries: p.deliveries,
      }));
  }

  async length(): Promise<number> {
    this.checkOpen();
    return this.log.length;
  }

  async stats(): Promise<BufferStats> {
    this.checkOpen();
    const groups: BufferStats['groups'] = {};
    for (const name of [...this.groups.keys()].sort()) {
      const g = this.groups.get(name)!;
      const pending = g.pel.size;
      groups[name] = {
        acked: g.acked,
        pending,
        deadLetters: g.dead,
        unread: Math.max(0, this.appended - g.acked - pending - g.dead),
      };
    }
    return {
      appended: this.appended,
      duplicates: this.duplicates,
      length: this.log.length,
      trained: this.trained.size,
      deadLetters: this.dead.length,
      groups,
    };
  }

  async markTrained(trajectoryIds: readonly string[]): Promise<number> {
    this.checkOpen();
    let n = 0;
    for (const id of trajectoryIds) {
      if (!this.trained.has(id)) {
        this.trained.add(id);
        n++;
      }
    }
    return n;
  }

  async wasTrained(trajectoryId: string): Promise<boolean> {
    this.checkOpen();
    return this.trained.has(trajectoryId);
  }

  async exportJsonl(file: string): Promise<number> {
    this.checkOpen();
    const snapshot = this.log.map((s) => s.record);
    return writeJsonl(
      file,
      (async function* () {
        for (let i = 0; i < snapshot.length; i += 1000) yield snapshot.slice(i, i + 1000);
      })(),
    );
  }

  async importJsonl(file: string): Promise<string[]> {
    const ids: string[] = [];
    for await (const page of readJsonl(file)) ids.push(...(await this.append(page)));
    return ids;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of [...this.waiters]) wake();
  }

  async destroy(): Promise<void> {
    this.checkOpen();
    this.log = [];
    this.byId.clear();
    this.idByTrajectory.clear();
    this.trained.clear();
    this.groups.clear();
    this.dead.length = 0;
    await this.close();
  }

  /**
   * Delivers pending entry `id` again to `consumer`, or, once it has had `maxDeliveries`
   * deliveries, moves it to the dead letters; an entry trimmed away leaves the pending list
   * (as XAUTOCLAIM drops deleted entries).
   */
  private redeliver(
    group: string,
    g: Group,
    id: string,
    consumer: string,
    now: number,
  ): BufferEntry | undefined {
    const p = g.pel.get(id)!;
    const stored = this.byId.get(id);
    if (stored === undefined) {
      g.pel.delete(id);
      return undefined;
    }
    if (p.deliveries >= this.maxDeliveries) {
      g.pel.delete(id);
      g.dead++;
      this.dead.push({
        entryId: id,
        group,
        deliveries: p.deliveries,
        deadAtMs: now,
        record: cloneRecord(stored.record),
      });
      return undefined;
    }
    p.consumer = consumer;
    p.deliveries++;
    p.lastDeliveryMs = now;
    return { entryId: id, record: cloneRecord(stored.record), deliveries: p.deliveries };
  }

  private nextId(): string {
    const now = Date.now();
    if (now > this.lastMs) {
      this.lastMs = now;
      this.lastSeq = 0;
    } else {
      this.lastSeq++;
    }
    return `${this.lastMs}-${this.lastSeq}`;
  }

  private trim(): void {
    if (this.maxLen === undefined || this.log.length <= this.maxLen) return;
    const drop = this.log.length - this.maxLen;
    for (let i = 0; i < drop; i++) this.byId.delete(this.log[i].id);
    this.log = this.log.slice(drop);
    this.base += drop;
  }

  private group(name: string): Group {
    let g = this.groups.get(name);
    if (g === undefined) {
      checkGroupName(name);
      g = { next: this.base, pel: new Map(), acked: 0, dead: 0 };
      this.groups.set(name, g);
    }
    return g;
  }

  private checkOpen(): void {
    if (this.closed) throw new ConfigError(`trajectory buffer ${this.name} is closed`);
  }
}

/**
 * A copy the caller may change freely, as a Redis read would give. The long number arrays are
 * sliced (structuredClone of a whole record costs ~10× more), the small nested parts cloned.
 */
function cloneRecord(r: TrajectoryRecord): TrajectoryRecord {
  const copy: TrajectoryRecord = {
    ...r,
    messages: structuredClone(r.messages),
    promptTokenIds: r.promptTokenIds.slice(),
    tokenIds: r.tokenIds.slice(),
    logprobs: r.logprobs.slice(),
    nextState: r.nextState === null ? null : structuredClone(r.nextState),
    votes: r.votes.slice(),
    sampling: { ...r.sampling },
    group: { ...r.group },
    episode: r.episode.finalMessages === null ? { ...r.episode } : structuredClone(r.episode),
    task: r.task === null ? null : structuredClone(r.task),
    judgement: r.judgement === null ? null : structuredClone(r.judgement),
    teacher: r.teacher === null ? null : structuredClone(r.teacher),
  };
  if (r.extra !== undefined) copy.extra = structuredClone(r.extra);
  return copy;
}

export function checkMaxLen(maxLen: number | undefined): number | undefined {
  if (maxLen !== undefined && (!Number.isInteger(maxLen) || maxLen < 1)) {
    throw new ConfigError(`buffer maxLen must be a positive integer, got ${maxLen}`, { fields: { maxLen } });
  }
  return maxLen;
}

export function checkMaxDeliveries(maxDeliveries: number | undefined): number {
  const n = maxDeliveries ?? DEFAULT_MAX_DELIVERIES;
  if (!Number.isInteger(n) || n < 1) {
    throw new ConfigError(`buffer maxDeliveries must be a positive integer, got ${n}`, {
      fields: { maxDeliveries: n },
    });
  }
  return n;
}

export function checkGroupName(group: string): void {
  if (typeof group !== 'string' || group.length === 0) {
    throw new ConfigError('consumer group name must be a non-empty string');
  }
}
