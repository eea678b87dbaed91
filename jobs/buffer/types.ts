/**
 * The trajectory buffer contract: one record shape (OpenClaw-RL's per-turn sample) and one
 * consumer-group interface, implemented over Redis Streams (`redis-buffer.ts`) and in memory
 * (`memory-buffer.ts`). `buffer.contract.ts` holds the behaviour both must share.
 */
import { checkRecordRest, copyCounts, copyNumbers } from './record-rest.js';
import {
  type RecordRest,
  RecordRestSchema,
  recordError,
  recordMismatch,
  type TrajectoryRecord,
  TrajectoryRecordSchema,
} from './record-schema.js';
import { upgradeRecord } from './record-upgrade.js';

export * from './record-schema.js';

/**
 * The record's small fields as the schema outputs them, or undefined if it refuses them: the
 * hand check (record-rest.ts) for ordinary records, the schema for anything else.
 */
export function parseRecordRest(value: unknown): RecordRest | undefined {
  const fast = checkRecordRest(value);
  if (fast !== undefined) return fast;
  const rest = RecordRestSchema.safeParse(value);
  return rest.success ? rest.data : undefined;
}

/**
 * Validates one record (a schema-1 record is upgraded first, record-upgrade.ts); throws
 * ConfigError naming the first bad field, e.g.
 * `invalid trajectory record "t1": tokenIds.3: Invalid input: expected number, received string`.
 */
export function parseTrajectoryRecord(value: unknown, where?: string): TrajectoryRecord {
  const current = upgradeRecord(value, where);
  const fast = fastParse(current);
  if (fast !== undefined) return fast;
  const result = TrajectoryRecordSchema.safeParse(current);
  if (result.success) return result.data;
  throw recordError(current, result.error.issues[0]!, where);
}

export interface BufferEntry {
  /** Stream entry id, `<ms>-<seq>`, increasing in append order. */
  entryId: string;
  record: TrajectoryRecord;
  /** How many times this entry has been delivered to the group, this delivery included. */
  deliveries: number;
}

export interface ReadOptions {
  group: string;
  consumer: string;
  /** Most entries to return (default 1). */
  count?: number;
  /** Wait up to this long for a new entry when none is there (default 0: do not wait). */
  blockMs?: number;
}

export interface ClaimOptions {
  group: string;
  consumer: string;
  /** Only entries delivered at least this long ago and not acked are claimed. */
  idleMs: number;
  /** Most entries to examine (default 100). */
  count?: number;
}

export interface ReadPendingOptions {
  group: string;
  consumer: string;
  /** Most entries to return (default 100). */
  count?: number;
}

export interface PendingEntry {
  entryId: string;
  consumer: string;
  idleMs: number;
  deliveries: number;
}

export interface DeadLetter {
  /** The entry id in the main stream. */
  entryId: string;
  group: string;
  /** Deliveries made before it was given up on. */
  deliveries: number;
  deadAtMs: number;
  record: TrajectoryRecord;
}

export interface GroupStats {
  /** Entries the group acked (dead-lettered ones are counted under `deadLetters` instead). */
  acked: number;
  /** Entries delivered to one of the group's consumers and not acked yet. */
  pending: number;
  /** Entries the group gave up on after `maxDeliveries` deliveries (moved to the dead letters). */
  deadLetters: number;
  /**
   * Entries never delivered to the group: appended − acked − pending − deadLetters (exact while
   * the stream is not trimmed; job streams are not).
   */
  unread: number;
}

/** Counters for a job's trajectory accounting; one round trip on Redis, no record is read. */
export interface BufferStats {
  /** Records appended (an append of a trajectoryId already stored is not counted here). */
  appended: number;
  /** Appends of a trajectoryId already stored, answered with its existing entry id. */
  duplicates: number;
  /** Entries in the stream now (after trimming). */
  length: number;
  /** Trajectory ids marked trained (`markTrained`). */
  trained: number;
  /** Entries in the dead letters, all groups together. */
  deadLetters: number;
  /** Every group that has read, acked or been created on this buffer. */
  groups: Record<string, GroupStats>;
}

export interface BufferOptions {
  /** Cluster name: keys live under `clawray:{cluster}:` (default `default`). */
  cluster?: string;
  /** Buffer (stream) name within the cluster (default `trajectories`). */
  name?: string;
  /** Approximate cap on the stream length: at least this many newest entries are kept. */
  maxLen?: number;
  /** An entry delivered this many times and still not acked goes to the dead letters (default 3). */
  maxDeliveries?: number;
}

export const DEFAULT_MAX_DELIVERIES = 3;
export const DEFAULT_CLAIM_COUNT = 100;

/**
 * A stream of trajectory records read through consumer groups. Each group sees every entry;
 * within a group each entry goes to one consumer and stays pending until acked. Groups are
 * created on first use and start at the beginning of the stream.
 */
export interface TrajectoryBuffer {
  readonly kind: 'memory' | 'redis';
  /** Appends validated records; a trajectoryId already stored returns its existing entry id. */
  append(records: readonly TrajectoryRecord[]): Promise<string[]>;
  /** New entries (never delivered to this group) for this consumer. */
  read(options: ReadOptions): Promise<BufferEntry[]>;
  /** Returns how many of the entries were pending and are now acked. */
  ack(group: string, entryIds: readonly string[]): Promise<number>;
  /**
   * Re-delivers to `consumer` the entries pending longer than `idleMs`; those already delivered
   * `maxDeliveries` times go to the dead letters instead and are acked.
   */
  claimStale(options: ClaimOptions): Promise<BufferEntry[]>;
  /**
   * Re-delivers to `consumer` the entries it was delivered and has not acked, oldest id first
   * (XREADGROUP with id 0, plus claimStale's rules: the delivery count goes up, an entry already
   * delivered `maxDeliveries` times goes to the dead letters instead). A restarted driver calls
   * it under its previous consumer name before it reads new entries; to take over the entries of
   * every consumer of the group instead, call `claimStale` with `idleMs: 0`.
   */
  readPending(options: ReadPendingOptions): Promise<BufferEntry[]>;
  deadLetters(): Promise<DeadLetter[]>;
  /** The group's delivered-but-unacked entries, oldest id first. */
  pending(group: string): Promise<PendingEntry[]>;
  /** Entries in the stream (after trimming). */
  length(): Promise<number>;
  /** Appended, acked / pending / dead-lettered / unread per group, trained, dead letters. */
  stats(): Promise<BufferStats>;
  /** Marks trajectories as trained; returns how many were not marked before. */
  markTrained(trajectoryIds: readonly string[]): Promise<number>;
  /** True once markTrained saw the id: a redelivered entry must then be skipped. */
  wasTrained(trajectoryId: string): Promise<boolean>;
  /** Writes every record in the stream, oldest first, one JSON object per line; returns the count. */
  exportJsonl(file: string): Promise<number>;
  /** Validates and appends every line of a JSONL file; returns the entry ids. */
  importJsonl(file: string): Promise<string[]>;
  close(): Promise<void>;
  /**
   * Deletes the buffer for good (on Redis every key of it: stream, dead letters, ids, trained
   * set, counters) and closes it; for a job that is deleted. Other handles on the same name see
   * an empty buffer afterwards.
   */
  destroy(): Promise<void>;
}

/**
 * The long number arrays checked by hand while they are copied (zod costs ~60 µs on a
 * 200-token record), the rest by `parseRecordRest`. Returns undefined when anything is off, so the full
 * parse reports the error.
 */
function fastParse(value: unknown): TrajectoryRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  const promptTokenIds = copyCounts(v.promptTokenIds);
  const tokenIds = copyCounts(v.tokenIds);
  const logprobs = copyNumbers(v.logprobs);
  if (promptTokenIds === undefined || tokenIds === undefined || logprobs === undefined) return undefined;
  // The rest schema strips unknown keys (the arrays among them) as the full schema would.
  const rest = parseRecordRest(v);
  if (rest === undefined) return undefined;
  const record = { ...rest, promptTokenIds, tokenIds, logprobs };
  return recordMismatch(record) === undefined ? record : undefined;
}
