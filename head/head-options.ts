/** Options of the head (`clawray head start`), validated once with their defaults. */
import { z } from 'zod';
import { HEAD_RECONNECT_MAX_MS } from '../common/backoff.js';
import { ConfigError } from '../common/errors.js';

export const DEFAULT_HEAD_PORT = 6390;

/** Ray's `RAY_maximum_gcs_destroyed_actor_cached_count`. */
export const DEFAULT_MAX_DEAD_ACTORS = 100_000;
/**
 * Ray's job table keeps every finished job; Ant Ray caps it (`maximum_gcs_dead_job_cached_count`,
 * 300). A kept job holds up to MAX_STORED_LOG_BYTES of log, so the cap is a bound on the store.
 */
export const DEFAULT_MAX_FINISHED_JOBS = 1_000;
/**
 * How long an owner whose session broke (its process died, or its connection was lost) may
 * take to open it again before what it owns is killed: Ray Client's reconnect grace period
 * (`RAY_CLIENT_RECONNECT_GRACE_PERIOD`, 30 s). A clean `close()` does not wait.
 */
export const DEFAULT_OWNER_GRACE_MS = 30_000;
/** How often a request waiting for resources is reported to its owner (and the head's log). */
export const DEFAULT_PENDING_WARN_INTERVAL_MS = 10_000;

/**
 * Ray reads these settings from `RAY_…` variables; ours are `CLAWRAY_…`, read here, once, as
 * the default of the option (an explicit option or flag wins).
 */
function envInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    throw new ConfigError(`${name} must be a whole number ≥ 0, got ${JSON.stringify(raw)}`, {
      fields: { variable: name },
    });
  }
  return value;
}

export const headOptionsSchema = z
  .object({
    /** Address the head binds. Default 127.0.0.1. */
    host: z.string().default('127.0.0.1'),
    /** gRPC port. Default 6390; 0 picks a free port. */
    port: z.number().int().min(0).max(65535).default(DEFAULT_HEAD_PORT),
    /** `memory` (default) or a `redis://` / `rediss://` URL. */
    store: z.string().default('memory'),
    /** Separates clusters that share one Redis. Default `default`. */
    clusterName: z.string().default('default'),
    /** Serve /metrics on this port (0: any free port); omit to not serve. */
    metricsPort: z.number().int().min(0).max(65535).optional(),
    /** The cluster token; default CLAWRAY_TOKEN, then the token file, then a new one. */
    token: z.string().min(1).optional(),
    /** How often workers heartbeat. Default 500 ms. */
    heartbeatIntervalMs: z.number().int().positive().default(500),
    /** A node that has not heartbeated for this long is dead. Default 3000 ms. */
    nodeTimeoutMs: z.number().int().positive().default(3000),
    /**
     * After a restart on a durable store, a reloaded node that has not re-registered yet gets
     * this long on top of nodeTimeoutMs (counted from when the head listens) before it is
     * declared dead: the workers' longest reconnect backoff. Default 1000 ms.
     */
    reloadGraceMs: z.number().int().nonnegative().default(HEAD_RECONNECT_MAX_MS),
    /** Write the token file and head.json for local clients. Default true. */
    writeLocalFiles: z.boolean().default(true),
    /**
     * Dead actors' records kept (status, lookups, death causes); beyond it the oldest dead are
     * dropped, from the store too. Default CLAWRAY_MAX_DEAD_ACTORS, else 100 000 (Ray's).
     */
    maxDeadActors: z
      .number()
      .int()
      .nonnegative()
      .default(() => envInt('CLAWRAY_MAX_DEAD_ACTORS', DEFAULT_MAX_DEAD_ACTORS)),
    /**
     * Finished jobs' records (and stored logs) kept; beyond it the oldest finished are
     * dropped. Default CLAWRAY_MAX_FINISHED_JOBS, else 1000.
     */
    maxFinishedJobs: z
      .number()
      .int()
      .nonnegative()
      .default(() => envInt('CLAWRAY_MAX_FINISHED_JOBS', DEFAULT_MAX_FINISHED_JOBS)),
    /**
     * An owner (driver connection) whose session broke has this long to reconnect before its
     * non-detached actors and placement groups are killed. Default CLAWRAY_OWNER_GRACE_MS, else
     * 30 000 ms (Ray Client's reconnect grace period).
     */
    ownerGraceMs: z
      .number()
      .int()
      .nonnegative()
      .default(() => envInt('CLAWRAY_OWNER_GRACE_MS', DEFAULT_OWNER_GRACE_MS)),
    /** How often a request waiting for resources is reported to its owner. Default 10 000 ms. */
    pendingWarnIntervalMs: z
      .number()
      .int()
      .positive()
      .default(() => envInt('CLAWRAY_PENDING_WARN_INTERVAL_MS', DEFAULT_PENDING_WARN_INTERVAL_MS) || 1),
  })
  .strict()
  .refine((o) => o.nodeTimeoutMs >= o.heartbeatIntervalMs * 2, {
    message: 'must be at least twice heartbeatIntervalMs, or every hiccup kills a node',
    path: ['nodeTimeoutMs'],
  });

export type HeadOptions = z.input<typeof headOptionsSchema>;
export type ParsedHeadOptions = z.output<typeof headOptionsSchema>;
