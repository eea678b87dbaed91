/**
 * The contract between the head and a job's supervisor actor. The head creates the supervisor
 * under this name and namespace, so clients (`clawray job logs`) find it without another RPC.
 */
export const SUPERVISOR_NAMESPACE = '_clawray_jobs';
export const supervisorName = (submissionId: string): string => `supervisor:${submissionId}`;

/** The supervisor actor's constructor argument, as the head creates it. */
export interface SupervisorConfig {
  submissionId: string;
  entrypoint: string;
  workingDirHash: string;
  /** An RLJob manifest run by the supervisor itself (the entrypoint is then only its label). */
  manifest?: { text: string; file: string; set: string[] };
}
