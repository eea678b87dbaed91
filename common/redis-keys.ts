/**
 * Every Redis key clawray writes is built here (BullMQ's `queue-keys.ts` is the model), so a
 * grep for a key name lands in one file and two clusters sharing one Redis can never collide:
 *
 *   clawray:{cluster}:table:{table}            the cluster store's tables (head/store)
 *   clawray:{cluster}:buffer:{name}:{part}     a trajectory buffer (jobs/buffer)
 *
 * A job's streams are buffers named by `jobStreamName(submissionId, stage)`.
 */
import { ConfigError, InternalError } from './errors.js';

export const DEFAULT_CLUSTER = 'default';

export const TABLES = ['nodes', 'actors', 'placementGroups', 'jobs', 'packages'] as const;

/** `packages` holds job working dirs in ≤ 1 MiB chunks (`HASH/N`) under a `HASH` manifest. */
export type TableName = (typeof TABLES)[number];

// Restricted so a name can never smuggle in a `:` or a glob character (`*`, `?`, `[`) that
// would let one cluster's key pattern match another cluster's keys (or one buffer's another's).
const NAME = /^[A-Za-z0-9._-]+$/;

/** Returns the cluster name (the default when absent), or throws ConfigError if it is malformed. */
export function validateCluster(cluster: string | undefined): string {
  const name = cluster ?? DEFAULT_CLUSTER;
  if (!NAME.test(name)) {
    throw new ConfigError(
      `invalid cluster name ${JSON.stringify(name)}: use letters, digits, '-', '_' and '.' only`,
      { fields: { cluster: name } },
    );
  }
  return name;
}

export function isTableName(table: unknown): table is TableName {
  return typeof table === 'string' && (TABLES as readonly string[]).includes(table);
}

/** `clawray:{cluster}:`; every key of the cluster starts with it. */
export function clusterPrefix(cluster: string): string {
  return `clawray:${validateCluster(cluster)}:`;
}

/** The Redis hash holding one table: field = record id, value = the record as JSON text. */
export function tableKey(cluster: string, table: TableName): string {
  if (!isTableName(table)) throw new InternalError(`unknown store table ${JSON.stringify(table)}`);
  return `${clusterPrefix(cluster)}table:${table}`;
}

// ---- trajectory buffers -------------------------------------------------------------------

export const DEFAULT_BUFFER_NAME = 'trajectories';

export interface BufferKeys {
  /** The stream of entries: `t` = trajectoryId, `p` = the record's field in `payloads`. */
  stream: string;
  /** Hash payload key → encoded record (kept out of the stream entries: see redis-buffer.ts). */
  payloads: string;
  /** The dead-letter stream. */
  dead: string;
  /** Hash trajectoryId → entry id (idempotent append). */
  ids: string;
  /** Set of trajectory ids already trained on. */
  trained: string;
  /** Hash of counters: `appended`, `duplicates`, `acked:{group}`, `dead:{group}`. */
  stats: string;
}

export function validateBufferName(name: string | undefined): string {
  const n = name ?? DEFAULT_BUFFER_NAME;
  if (!NAME.test(n)) {
    throw new ConfigError(
      `invalid buffer name ${JSON.stringify(n)}: use letters, digits, '-', '_' and '.' only`,
      { fields: { name: n } },
    );
  }
  return n;
}

/** `clawray:{cluster}:buffer:{name}:…` */
export function bufferKeys(cluster: string | undefined, name: string | undefined): BufferKeys {
  const base = `${clusterPrefix(cluster ?? DEFAULT_CLUSTER)}buffer:${validateBufferName(name)}:`;
  return {
    stream: `${base}stream`,
    payloads: `${base}payloads`,
    dead: `${base}dead`,
    ids: `${base}ids`,
    trained: `${base}trained`,
    stats: `${base}stats`,
  };
}

/** The two streams of an RL job: turns as rolled out, and the same turns once judged. */
export const JOB_STREAM_STAGES = ['rollouts', 'judged'] as const;
export type JobStreamStage = (typeof JOB_STREAM_STAGES)[number];

/**
 * The buffer name of one of a job's streams, `job.{submissionId}.{stage}`: keyed by submission,
 * so a restarted driver of the same submission finds its streams and two runs never share them.
 */
export function jobStreamName(submissionId: string, stage: JobStreamStage): string {
  if (!(JOB_STREAM_STAGES as readonly string[]).includes(stage)) {
    throw new InternalError(
      `unknown job stream stage ${JSON.stringify(stage)}: expected ${JOB_STREAM_STAGES.join(' or ')}`,
    );
  }
  if (typeof submissionId !== 'string' || !NAME.test(submissionId)) {
    throw new ConfigError(
      `invalid submission id ${JSON.stringify(submissionId)} for a job stream: use letters, digits, '-', '_' and '.' only`,
      { fields: { submissionId } },
    );
  }
  return validateBufferName(`job.${submissionId}.${stage}`);
}
