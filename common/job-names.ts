/**
 * The contract between the head and a job's supervisor actor. The head creates the supervisor
 * under this name and namespace, so clients (`clawray job logs`) find it without another RPC.
 * Also what a submission must be, checked alike by the CLI and the head's SubmitJob.
 */
import { ConfigError, registerErrorClass } from './errors.js';
import { checkPathId } from './path-ids.js';

export const SUPERVISOR_NAMESPACE = '_clawray_jobs';
export const supervisorName = (submissionId: string): string => `supervisor:${submissionId}`;

/** SIGTERM → SIGKILL grace of a stopped job that sets none (Ray's default). */
export const DEFAULT_STOP_GRACE_MS = 3000;
/** The longest stop grace a job may ask for. */
export const MAX_STOP_GRACE_MS = 3_600_000;
/** The most restarts a job may ask for (RayJob's backoffLimit has no cap; a loop needs one). */
export const MAX_JOB_RETRIES = 100;
/** The tail of a finished job's log the cluster keeps (the head serves it after the job). */
export const MAX_STORED_LOG_BYTES = 8 * 1024 * 1024;

/**
 * The longest entrypoint (the whole command line, in UTF-8 bytes) a job may have. The
 * supervisor runs it as one argument of `/bin/sh -c`, and Linux refuses any single argument
 * over MAX_ARG_STRLEN (128 KiB) with E2BIG, and all arguments plus the environment over
 * ARG_MAX; half of the per-argument limit leaves the environment room. A longer script belongs
 * in a file of the working dir.
 */
export const MAX_ENTRYPOINT_BYTES = 64 * 1024;

/** An entrypoint longer than MAX_ENTRYPOINT_BYTES was refused (INVALID_ARGUMENT on the wire). */
export class EntrypointTooLargeError extends ConfigError {}
registerErrorClass(EntrypointTooLargeError);

/**
 * Returns `entrypoint` when it is a command the supervisor can start; throws ConfigError for an
 * empty one and EntrypointTooLargeError for one past MAX_ENTRYPOINT_BYTES.
 */
export function checkEntrypoint(entrypoint: string): string {
  if (!entrypoint.trim()) throw new ConfigError('a job needs an entrypoint command');
  const bytes = Buffer.byteLength(entrypoint, 'utf8');
  if (bytes > MAX_ENTRYPOINT_BYTES) {
    throw new EntrypointTooLargeError(
      `the entrypoint is ${bytes} bytes; a job's entrypoint (the command and its arguments) is at most ` +
        `${MAX_ENTRYPOINT_BYTES} bytes (${MAX_ENTRYPOINT_BYTES / 1024} KiB), or the OS refuses to start it: ` +
        'put the script in a file in the working dir (--working-dir) and make the entrypoint run that file',
      { fields: { entrypointBytes: bytes, maxBytes: MAX_ENTRYPOINT_BYTES } },
    );
  }
  return entrypoint;
}

/**
 * Returns `submissionId` when it may name the job's files (its log, its checkpoint folder);
 * throws InvalidIdError naming `field`, the way the user gave it.
 */
export function checkSubmissionId(submissionId: string, field = 'submission id'): string {
  return checkPathId(submissionId, field);
}

/**
 * An entrypoint that exits with this code asks to be started again (EX_TEMPFAIL: the RL driver
 * lost its trainer state and continues from its checkpoint); it counts against max_retries
 * like a lost driver. Any other non-zero exit is final.
 */
export const EXIT_RESTART = 75;

/**
 * Where an entrypoint finds the cluster store (an RL driver keeps its trajectory streams
 * there), set only when the store is durable (Redis): `CLAWRAY_STORE_URL`, `CLAWRAY_CLUSTER_NAME`.
 */
export interface DriverStore {
  url: string;
  cluster: string;
}

/** The supervisor actor's constructor argument, as the head creates it. */
export interface SupervisorConfig {
  submissionId: string;
  entrypoint: string;
  workingDirHash: string;
  /** Which start of the entrypoint this is, 1-based (CLAWRAY_JOB_ATTEMPT). */
  attempt: number;
  stopGraceMs: number;
  /** Why the previous attempt was replaced (attempt > 1), for the head of the new log. */
  restartReason?: string;
  store?: DriverStore;
  /**
   * A secret the head makes for this attempt and gives only to its supervisor: StoreJobLog of
   * the job is accepted only with it (see JobManager.storeLog). Absent from a head older than
   * the check.
   */
  supervisorKey?: string;
}
