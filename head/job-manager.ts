/**
 * The head's jobs: one record per submission in the cluster store, and one JobSupervisor actor
 * per job that runs the entrypoint. The head creates the supervisor (not the submitting
 * client) so a submission is one request: a client that goes away after `--no-wait` leaves
 * nothing half-done, and the record and its supervisor can never disagree about who owns the
 * job. The head knows jobs, not what they run: an RL job is the entrypoint `clawray rljob run`.
 *
 * Lifetime, as Ray's and RayJob's: statuses only move forward; a job that reaches a final
 * status releases every actor and placement group it owns (its supervisor included), after
 * the supervisor has stored the job's log here. A supervisor that dies before the job ended
 * (its node lost, it or the entrypoint SIGKILLed) is replaced by a new one on any node, up to
 * `maxRetries` times (RayJob's backoffLimit), after which the job is FAILED; an entrypoint
 * that exits with a code is never restarted.
 */

import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { AlreadyExistsError, ConfigError, NotFoundError, PermissionDeniedError } from '../common/errors.js';
import { newId } from '../common/ids.js';
import {
  checkEntrypoint,
  checkSubmissionId,
  DEFAULT_STOP_GRACE_MS,
  type DriverStore,
  MAX_JOB_RETRIES,
  MAX_STOP_GRACE_MS,
  MAX_STORED_LOG_BYTES,
  SUPERVISOR_NAMESPACE,
  type SupervisorConfig,
  supervisorName,
} from '../common/job-names.js';
import type { Logger } from '../common/logger.js';
import { JOB_SUPERVISOR_MODULE } from '../common/system-modules.js';
import { checkPackageHash } from '../jobs/package/working-dir.js';
import type { JobInfo } from '../proto/generated/clawray/v1/JobInfo.js';
import type { JobLogChunk } from '../proto/generated/clawray/v1/JobLogChunk.js';
import type { ReportJobInfoRequest__Output } from '../proto/generated/clawray/v1/ReportJobInfoRequest.js';
import type { StoreJobLogRequest__Output } from '../proto/generated/clawray/v1/StoreJobLogRequest.js';
import type { SubmitJobRequest__Output } from '../proto/generated/clawray/v1/SubmitJobRequest.js';
import type { UpdateJobRequest__Output } from '../proto/generated/clawray/v1/UpdateJobRequest.js';
import type * as m from '../proto/messages.js';
import { Cluster, encodeArgs } from '../runtime/index.js';
import type { ActorDirectory } from './actor-directory.js';
import { JobLogs } from './job-logs.js';
import type { ActorRecord } from './model.js';
import type { PlacementGroups } from './placement-groups.js';
import type { ClusterStore } from './store/types.js';

export const JOB_STATUSES = ['PENDING', 'RUNNING', 'STOPPED', 'SUCCEEDED', 'FAILED'] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

const RANK: Record<JobStatus, number> = { PENDING: 0, RUNNING: 1, STOPPED: 2, SUCCEEDED: 2, FAILED: 2 };

export const isTerminal = (status: string): boolean => RANK[status as JobStatus] === 2;

export interface JobRecord {
  submissionId: string;
  entrypoint: string;
  status: JobStatus;
  message: string;
  createdAtMs: number;
  startedAtMs?: number;
  endedAtMs?: number;
  workingDirHash?: string;
  metadata?: Record<string, string>;
  supervisorActorId: string;
  exitCode?: number;
  pid?: number;
  nodeId?: string;
  /** Which start of the entrypoint runs now, 1-based (absent in records of older heads: 1). */
  attempt?: number;
  maxRetries?: number;
  stopGraceMs?: number;
  /** A stop was asked for: a supervisor lost now ends the job STOPPED, not restarted. */
  stopRequested?: boolean;
  /** What the job's process reported about itself (ReportJobInfo). */
  info?: Record<string, string>;
  /**
   * sha256 (hex) of the current attempt's supervisor key (SupervisorConfig.supervisorKey): the
   * head keeps only the hash. Absent in records of older heads (their supervisors send none).
   */
  supervisorKeySha256?: string;
}

/** Bounds of a job's reported info: it is shown by `job status` and kept in the store. */
export const MAX_JOB_INFO_KEYS = 32;
export const MAX_JOB_INFO_VALUE_CHARS = 1024;
const INFO_KEY = /^[A-Za-z][A-Za-z0-9_.-]{0,63}$/;

export function jobInfo(r: JobRecord): JobInfo {
  return {
    submissionId: r.submissionId,
    entrypoint: r.entrypoint,
    status: r.status,
    message: r.message,
    createdAtMs: r.createdAtMs,
    startedAtMs: r.startedAtMs ?? 0,
    endedAtMs: r.endedAtMs ?? 0,
    workingDirHash: r.workingDirHash ?? '',
    metadata: r.metadata ?? {},
    supervisorActorId: r.supervisorActorId,
    hasExitCode: r.exitCode !== undefined,
    exitCode: r.exitCode ?? 0,
    pid: r.pid ?? 0,
    nodeId: r.nodeId ?? '',
    attempt: r.attempt ?? 1,
    maxRetries: r.maxRetries ?? 0,
    stopGraceMs: r.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
    info: r.info ?? {},
  };
}

export interface JobManagerDeps {
  store: ClusterStore;
  actors: ActorDirectory;
  groups: PlacementGroups;
  logger: Logger;
  /** The cluster store as drivers reach it; absent when it is the head's memory. */
  driverStore?: DriverStore;
  /** The head's own address and token, for calling supervisors. */
  self(): { address: string; token: string };
  /** Finished jobs kept (records and stored logs); beyond it the oldest finished are dropped. */
  maxFinishedJobs: number;
}

export class JobManager {
  private readonly jobs = new Map<string, JobRecord>();
  private readonly logs: JobLogs;
  private client?: Cluster;
  /** Finished jobs' records dropped since this head started. */
  droppedFinished = 0;

  constructor(private readonly d: JobManagerDeps) {
    this.logs = new JobLogs(d.store);
  }

  restore(records: JobRecord[]): void {
    for (const r of records) this.jobs.set(r.submissionId, r);
  }

  /**
   * After the actors are restored: a live job whose supervisor is gone lost its driver, and a
   * job that ended while the head went down before releasing its actors releases them now.
   */
  async resumeAfterRestore(): Promise<void> {
    await this.trimFinished();
    for (const r of this.jobs.values()) {
      if (isTerminal(r.status)) {
        await this.release(r.submissionId);
        continue;
      }
      const actor = this.d.actors.list().find((a) => a.actorId === r.supervisorActorId);
      if (!actor || actor.state === 'DEAD') {
        await this.supervisorLost(
          r,
          `the job's supervisor died: ${actor?.deathCause?.message ?? 'it is gone'}`,
        );
      }
    }
  }

  get(submissionId: string): JobRecord {
    const r = this.jobs.get(submissionId);
    if (!r)
      throw new NotFoundError(`no job with submission id '${submissionId}'`, { fields: { submissionId } });
    return r;
  }

  list(): JobRecord[] {
    return [...this.jobs.values()].sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  async submit(req: SubmitJobRequest__Output): Promise<JobRecord> {
    // The id names the job's log file and its RL checkpoint folder: never `..` or `a/b`.
    const submissionId = checkSubmissionId(
      req.submissionId || newId('job').replace('_', '-'),
      'submission_id',
    );
    // Refused here rather than by the OS (E2BIG) once the supervisor starts it.
    checkEntrypoint(req.entrypoint);
    if (req.workingDirHash) checkPackageHash(req.workingDirHash, 'working_dir_hash');
    if (!Number.isInteger(req.maxRetries) || req.maxRetries < 0 || req.maxRetries > MAX_JOB_RETRIES) {
      throw new ConfigError(
        `max_retries must be a whole number from 0 to ${MAX_JOB_RETRIES}, got ${req.maxRetries}`,
        { fields: { maxRetries: req.maxRetries } },
      );
    }
    if (!Number.isFinite(req.stopGraceMs) || req.stopGraceMs < 0 || req.stopGraceMs > MAX_STOP_GRACE_MS) {
      throw new ConfigError(
        `stop_grace_ms must be from 0 (the default, ${DEFAULT_STOP_GRACE_MS} ms) to ${MAX_STOP_GRACE_MS}, got ${req.stopGraceMs}`,
        { fields: { stopGraceMs: req.stopGraceMs } },
      );
    }
    if (this.jobs.has(submissionId)) {
      throw new AlreadyExistsError(`a job with submission id '${submissionId}' already exists`, {
        fields: { submissionId },
      });
    }
    if (req.workingDirHash && !(await this.d.store.get('packages', req.workingDirHash))) {
      throw new NotFoundError(`no uploaded package ${req.workingDirHash}; upload the working dir first`, {
        fields: { hash: req.workingDirHash },
      });
    }
    const record: JobRecord = {
      submissionId,
      entrypoint: req.entrypoint,
      status: 'PENDING',
      message: 'waiting for the job supervisor to start',
      createdAtMs: Date.now(),
      workingDirHash: req.workingDirHash || undefined,
      metadata: Object.keys(req.metadata).length ? { ...req.metadata } : undefined,
      supervisorActorId: newId('actor'),
      attempt: 1,
      maxRetries: req.maxRetries,
      stopGraceMs: req.stopGraceMs || DEFAULT_STOP_GRACE_MS,
    };
    const key = newSupervisorKey(record);
    this.jobs.set(submissionId, record);
    await this.save(record);
    this.startSupervisor(record, key);
    return record;
  }

  async update(req: UpdateJobRequest__Output): Promise<JobRecord> {
    const r = this.get(req.submissionId);
    // A supervisor the head has already replaced speaks for nothing.
    if (req.attempt && req.attempt !== (r.attempt ?? 1)) return r;
    let next = req.status as JobStatus;
    if (!(next in RANK)) throw new ConfigError(`unknown job status '${req.status}'`);
    // Retried and late updates (the head already failed or stopped the job) change nothing.
    if (RANK[next] <= RANK[r.status] && !(next === r.status && next === 'RUNNING')) return r;
    let message = req.message;
    if (next === 'FAILED' && req.restartable) {
      if (r.stopRequested) next = 'STOPPED';
      else if (this.canRestart(r)) {
        await this.restart(r, req.message);
        return r;
      } else message = this.noRestartsLeft(r, message);
    }
    r.status = next;
    r.message = message;
    if (req.pid) r.pid = req.pid;
    if (req.nodeId) r.nodeId = req.nodeId;
    if (next === 'RUNNING') r.startedAtMs ??= Date.now();
    if (req.hasExitCode) r.exitCode = req.exitCode;
    if (isTerminal(next)) r.endedAtMs = Date.now();
    await this.save(r);
    this.d.logger.info({ submissionId: r.submissionId, status: r.status, message: r.message }, 'job status');
    // After the reply is on its way: the supervisor is among what goes.
    if (isTerminal(next)) {
      setImmediate(() => {
        void this.release(r.submissionId).then(() => this.trimFinished());
      });
    }
    return r;
  }

  /**
   * Merges what the job's process reports about itself into its record (an empty value removes
   * the key). A job that has ended, or a report from an attempt the head has replaced, changes
   * nothing: the record keeps what the last live attempt said.
   */
  async reportInfo(req: ReportJobInfoRequest__Output): Promise<JobRecord> {
    const r = this.get(req.submissionId);
    if (isTerminal(r.status) || (req.attempt && req.attempt !== (r.attempt ?? 1))) return r;
    const info = { ...r.info };
    for (const [key, value] of Object.entries(req.info)) {
      if (!INFO_KEY.test(key)) {
        throw new ConfigError(
          `job info key ${JSON.stringify(key)} must be 1-64 letters, digits, '_', '.' or '-', starting with a letter`,
          { fields: { key } },
        );
      }
      if (value.length > MAX_JOB_INFO_VALUE_CHARS) {
        throw new ConfigError(
          `job info ${key} is ${value.length} characters; at most ${MAX_JOB_INFO_VALUE_CHARS}`,
          { fields: { key, chars: value.length } },
        );
      }
      if (value === '') delete info[key];
      else info[key] = value;
    }
    if (Object.keys(info).length > MAX_JOB_INFO_KEYS) {
      throw new ConfigError(`job info holds at most ${MAX_JOB_INFO_KEYS} keys`, {
        fields: { keys: Object.keys(info).length },
      });
    }
    r.info = info;
    await this.save(r);
    return r;
  }

  /**
   * Drops the oldest finished jobs (record and stored log) beyond `maxFinishedJobs`, as Ray's
   * GCS bounds what it caches of the dead: a cluster that runs for weeks stays flat.
   */
  private async trimFinished(): Promise<void> {
    const finished = [...this.jobs.values()]
      .filter((j) => isTerminal(j.status))
      .sort((a, b) => (a.endedAtMs ?? a.createdAtMs) - (b.endedAtMs ?? b.createdAtMs));
    const excess = finished.length - this.d.maxFinishedJobs;
    for (const r of finished.slice(0, Math.max(0, excess))) {
      if (this.jobs.get(r.submissionId) !== r) continue;
      this.jobs.delete(r.submissionId);
      this.droppedFinished++;
      try {
        await this.logs.delete(r.submissionId);
        await this.d.store.delete('jobs', r.submissionId);
      } catch (err) {
        this.d.logger.warn(
          { submissionId: r.submissionId, err: (err as Error).message },
          'could not drop a finished job from the store',
        );
      }
    }
  }

  /** Finished jobs' records kept now. */
  get finishedCount(): number {
    return [...this.jobs.values()].filter((j) => isTerminal(j.status)).length;
  }

  /** Asks the supervisor to stop the entrypoint; returns without waiting for it to exit. */
  async stop(submissionId: string): Promise<JobRecord> {
    const r = this.get(submissionId);
    if (isTerminal(r.status)) return r;
    if (!r.stopRequested) {
      r.stopRequested = true;
      await this.save(r);
    }
    const actor = this.d.actors.list().find((a) => a.actorId === r.supervisorActorId);
    if (actor?.state === 'ALIVE') {
      try {
        const handle = await this.supervisors().getActor(supervisorName(submissionId), {
          namespace: SUPERVISOR_NAMESPACE,
        });
        await handle.call('stop');
        return r;
      } catch (err) {
        this.d.logger.warn(
          { submissionId, err: (err as Error).message },
          'could not ask the supervisor to stop',
        );
      }
    }
    // Not started yet (or unreachable): nothing of the entrypoint runs, so the head ends it.
    await this.update({
      submissionId,
      status: 'STOPPED',
      message: 'stopped before the entrypoint started',
      hasExitCode: false,
      exitCode: 0,
      pid: 0,
      nodeId: '',
      attempt: 0,
      restartable: false,
    });
    return r;
  }

  async delete(submissionId: string): Promise<void> {
    const r = this.get(submissionId);
    if (!isTerminal(r.status)) {
      throw new ConfigError(`job '${submissionId}' is ${r.status}; stop it before deleting it`, {
        fields: { submissionId, status: r.status },
      });
    }
    await this.release(submissionId);
    await this.logs.delete(submissionId);
    this.jobs.delete(submissionId);
    await this.d.store.delete('jobs', submissionId);
  }

  /**
   * The supervisor's copy of the job's log, kept for when the supervisor is gone.
   *
   * Who may store it: only the job's current supervisor. Every caller holds the one cluster
   * token (a job's own entrypoint too), so the token says nothing about which job a caller
   * speaks for; instead the head makes a secret per attempt, hands it to that attempt's
   * supervisor in its constructor argument (never to the entrypoint, never in a reply) and
   * keeps its hash. A request without it is refused with PermissionDeniedError, so one job
   * (or any client) cannot overwrite another job's log. A replaced attempt's request changes
   * nothing, as before. Records of an older head carry no hash: their supervisors send no key,
   * and only the attempt rule applies.
   */
  async storeLog(req: StoreJobLogRequest__Output): Promise<void> {
    const r = this.get(req.submissionId);
    if (req.attempt && req.attempt < (r.attempt ?? 1)) return;
    if (r.supervisorKeySha256 && !keyMatches(req.supervisorKey, r.supervisorKeySha256)) {
      throw new PermissionDeniedError(
        `the log of job '${r.submissionId}' is stored only by its own supervisor (attempt ${r.attempt ?? 1}), ` +
          "and this request does not carry that supervisor's key: a job's output is what its entrypoint " +
          'writes to stdout and stderr, read with clawray job logs',
        { fields: { submissionId: r.submissionId, attempt: r.attempt ?? 1 } },
      );
    }
    if (req.data.length > MAX_STORED_LOG_BYTES) {
      throw new ConfigError(
        `a stored job log is at most ${MAX_STORED_LOG_BYTES} bytes (its tail), got ${req.data.length}`,
        { fields: { submissionId: r.submissionId, bytes: req.data.length } },
      );
    }
    const sizeBytes = Math.max(req.sizeBytes, req.cutAtBytes + req.data.length);
    await this.logs.put(r.submissionId, {
      attempt: req.attempt || (r.attempt ?? 1),
      data: Buffer.from(req.data),
      cutAtBytes: sizeBytes - req.data.length,
      sizeBytes,
    });
  }

  /** A finished job's log, as its supervisor stored it. */
  async readLog(submissionId: string, offset: number): Promise<JobLogChunk> {
    const r = this.get(submissionId);
    const chunk = await this.logs.read(submissionId, offset);
    if (chunk) return chunk;
    throw new NotFoundError(
      isTerminal(r.status)
        ? `the log of job '${submissionId}' was not kept: its supervisor ended without storing it (${r.message})`
        : `job '${submissionId}' is ${r.status}: its log is read from its supervisor`,
      { fields: { submissionId, status: r.status } },
    );
  }

  /** Hooked into the actor directory: a supervisor that dies takes its driver with it. */
  onActorDead(actor: ActorRecord, cause: Error): void {
    if (actor.options.namespace !== SUPERVISOR_NAMESPACE) return;
    const r = [...this.jobs.values()].find((j) => j.supervisorActorId === actor.actorId);
    if (!r || isTerminal(r.status)) return;
    void this.supervisorLost(r, `the job's supervisor died: ${cause.message}`).catch((err: Error) =>
      this.d.logger.error({ submissionId: r.submissionId, err: err.message }, 'could not end the job'),
    );
  }

  async close(): Promise<void> {
    await this.client?.close();
  }

  /** The driver is gone without a final status: start it again, or end the job. */
  private async supervisorLost(r: JobRecord, message: string): Promise<void> {
    if (r.stopRequested) await this.end(r, 'STOPPED', `stopped (${message})`);
    else if (this.canRestart(r)) await this.restart(r, message);
    else await this.end(r, 'FAILED', this.noRestartsLeft(r, message));
  }

  private canRestart(r: JobRecord): boolean {
    return (r.attempt ?? 1) <= (r.maxRetries ?? 0);
  }

  private noRestartsLeft(r: JobRecord, message: string): string {
    const used = (r.attempt ?? 1) - 1;
    return used > 0 ? `${message} (after ${used} restart${used === 1 ? '' : 's'}, none left)` : message;
  }

  /**
   * A new supervisor (attempt + 1) for the same submission, on any node that fits. What the
   * old driver left (its actors, its placement groups, the old supervisor if it still runs)
   * goes first: the new driver starts from its checkpoint with the job's resources free, and
   * the old driver is dead before the new one starts.
   */
  private async restart(r: JobRecord, reason: string): Promise<void> {
    r.attempt = (r.attempt ?? 1) + 1;
    // A new id before anything is killed, so the old supervisor's death is not another loss.
    r.supervisorActorId = newId('actor');
    r.message = `restarting the entrypoint (attempt ${r.attempt} of ${(r.maxRetries ?? 0) + 1}) after: ${reason}`;
    r.pid = undefined;
    r.nodeId = undefined;
    // A new key: the replaced supervisor (if it still runs) can no longer store the log.
    const key = newSupervisorKey(r);
    await this.save(r);
    this.d.logger.warn({ submissionId: r.submissionId, attempt: r.attempt, reason }, 'restarting the job');
    await this.release(r.submissionId);
    this.startSupervisor(r, key, reason);
  }

  private startSupervisor(r: JobRecord, supervisorKey: string, restartReason?: string): void {
    const config: SupervisorConfig = {
      submissionId: r.submissionId,
      entrypoint: r.entrypoint,
      workingDirHash: r.workingDirHash ?? '',
      attempt: r.attempt ?? 1,
      stopGraceMs: r.stopGraceMs ?? DEFAULT_STOP_GRACE_MS,
      restartReason,
      store: this.d.driverStore,
      supervisorKey,
    };
    const actorId = r.supervisorActorId;
    // Placement may wait for a busy cluster; the job stays PENDING meanwhile. A supervisor
    // that never comes up ends in the directory's finalizeDead, which reaches onActorDead.
    this.d.actors.create(supervisorSpec(r, config)).catch((err: Error) => {
      this.d.logger.warn(
        { submissionId: r.submissionId, err: err.message },
        'the job supervisor did not start',
      );
      // Refused before it was recorded (no node can take it): nothing will report its death.
      const recorded = this.d.actors.list().some((a) => a.actorId === actorId);
      if (!recorded && r.supervisorActorId === actorId && !isTerminal(r.status)) {
        void this.end(r, 'FAILED', `the job supervisor could not be started: ${err.message}`).catch(() => {});
      }
    });
  }

  /** Kills every actor and removes every placement group of the job (its supervisor too). */
  private async release(submissionId: string): Promise<void> {
    try {
      const actors = await this.d.actors.killJob(submissionId);
      const groups = await this.d.groups.removeJob(submissionId);
      if (actors + groups > 0) {
        this.d.logger.info({ submissionId, actors, placementGroups: groups }, 'released the job');
      }
    } catch (err) {
      this.d.logger.error({ submissionId, err: (err as Error).message }, 'could not release the job');
    }
  }

  private async end(r: JobRecord, status: JobStatus, message: string): Promise<void> {
    await this.update({
      submissionId: r.submissionId,
      status,
      message,
      hasExitCode: false,
      exitCode: 0,
      pid: 0,
      nodeId: '',
      attempt: 0,
      restartable: false,
    });
  }

  private supervisors(): Cluster {
    this.client ??= new Cluster({ ...this.d.self(), headRetryMs: 0 });
    return this.client;
  }

  private save(r: JobRecord): Promise<void> {
    return this.d.store.put('jobs', r.submissionId, r);
  }
}

/** A new secret for the record's current attempt: returns it and keeps only its hash. */
function newSupervisorKey(record: JobRecord): string {
  const key = randomBytes(24).toString('base64url');
  record.supervisorKeySha256 = sha256Hex(key);
  return key;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text).digest('hex');

function keyMatches(key: string, expectedSha256: string): boolean {
  const expected = Buffer.from(expectedSha256, 'hex');
  const given = Buffer.from(sha256Hex(key), 'hex');
  return key !== '' && given.length === expected.length && timingSafeEqual(given, expected);
}

function supervisorSpec(record: JobRecord, config: SupervisorConfig): m.ActorSpec__Output {
  return {
    actorId: record.supervisorActorId,
    // A registered module rather than `clawray/jobs`: actor hosts resolve package names from
    // their cwd, which need not be inside a project that depends on clawray (or holds another
    // version of it); each host resolves this one in its own install.
    module: JOB_SUPERVISOR_MODULE,
    className: 'JobSupervisor',
    args: encodeArgs([config]),
    jobId: record.submissionId,
    options: {
      resources: { numCpus: 0, numGpus: 0, memoryMb: 0, custom: {} },
      labelSelector: {},
      name: supervisorName(record.submissionId),
      namespace: SUPERVISOR_NAMESPACE,
      getIfExists: false,
      maxRestarts: 0,
      maxTaskRetries: 0,
      maxConcurrency: 0,
      maxPendingCalls: -1,
      placementGroupId: '',
      bundleIndex: -1,
      env: {},
      scheduleTimeoutMs: 0,
      // No owner session: the job's end releases it (by job id).
      detached: false,
    },
    ownerId: '',
    ownerActorId: '',
    ownerIncarnation: 0,
  };
}
