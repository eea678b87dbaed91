/**
 * The contract between the head and a job's supervisor actor. The head creates the supervisor
 * under this name and namespace, so clients (`clawray job logs`) find it without another RPC.
 */
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
}
