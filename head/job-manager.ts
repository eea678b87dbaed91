/**
 * The head's jobs: one record per submission in the cluster store, and one JobSupervisor actor
 * per job that runs the entrypoint. The head creates the supervisor (not the submitting
 * client) so a submission is one request: a client that goes away after `--no-wait` leaves
 * nothing half-done, and the record and its supervisor can never disagree about who owns the
 * job. Statuses only move forward; a job whose supervisor dies before it ends is FAILED.
 */

import { pathToFileURL } from 'node:url';
import { Cluster } from '../actors/runtime/cluster.js';
import { encodeArgs } from '../actors/runtime/codec.js';
import { AlreadyExistsError, ConfigError, NotFoundError } from '../common/errors.js';
import { newId } from '../common/ids.js';
import { SUPERVISOR_NAMESPACE, type SupervisorConfig, supervisorName } from '../common/job-names.js';
import type { Logger } from '../common/logger.js';
import { distEntry } from '../common/package-root.js';
import type { JobInfo } from '../proto/generated/clawray/v1/JobInfo.js';
import type { SubmitJobRequest__Output } from '../proto/generated/clawray/v1/SubmitJobRequest.js';
import type { UpdateJobRequest__Output } from '../proto/generated/clawray/v1/UpdateJobRequest.js';
import type * as m from '../proto/messages.js';
import type { ActorDirectory } from './actor-directory.js';
import type { ActorRecord } from './model.js';
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
  manifest?: SupervisorConfig['manifest'];
  supervisorActorId: string;
  exitCode?: number;
  pid?: number;
  nodeId?: string;
}

/** What the head hands the JobSupervisor's constructor. */
const SUBMISSION_ID = /^[A-Za-z0-9._-]{1,128}$/;

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
  };
}

export interface JobManagerDeps {
  store: ClusterStore;
  actors: ActorDirectory;
  logger: Logger;
  /** The head's own address and token, for calling supervisors. */
  self(): { address: string; token: string };
}

export class JobManager {
  private readonly jobs = new Map<string, JobRecord>();
  private client?: Cluster;

  constructor(private readonly d: JobManagerDeps) {}

  restore(records: JobRecord[]): void {
    for (const r of records) this.jobs.set(r.submissionId, r);
  }

  /** After the actors are restored: a live job whose supervisor is gone has failed. */
  async resumeAfterRestore(): Promise<void> {
    for (const r of this.jobs.values()) {
      if (isTerminal(r.status)) continue;
      const actor = this.d.actors.list().find((a) => a.actorId === r.supervisorActorId);
      if (!actor || actor.state === 'DEAD') {
        await this.fail(r, `the job's supervisor died: ${actor?.deathCause?.message ?? 'it is gone'}`);
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
    const submissionId = req.submissionId || newId('job').replace('_', '-');
    if (!SUBMISSION_ID.test(submissionId)) {
      throw new ConfigError(
        `invalid submission id ${JSON.stringify(submissionId)}: use 1-128 letters, digits, '-', '_' or '.'`,
        { fields: { submissionId } },
      );
    }
    if (!req.entrypoint.trim()) throw new ConfigError('a job needs an entrypoint command');
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
      manifest: req.manifest
        ? { text: req.manifest, file: req.manifestFile || 'manifest.yaml', set: [...req.manifestSet] }
        : undefined,
      supervisorActorId: newId('actor'),
    };
    this.jobs.set(submissionId, record);
    await this.save(record);
    const config: SupervisorConfig = {
      submissionId,
      entrypoint: record.entrypoint,
      workingDirHash: record.workingDirHash ?? '',
      manifest: record.manifest,
    };
    // Placement may wait for a busy cluster; the job stays PENDING meanwhile. A supervisor
    // that never comes up ends in finalizeDead, which fails the job through onActorDead.
    this.d.actors.create(supervisorSpec(record, config)).catch((err: Error) => {
      this.d.logger.warn({ submissionId, err: err.message }, 'the job supervisor did not start');
    });
    return record;
  }

  async update(req: UpdateJobRequest__Output): Promise<JobRecord> {
    const r = this.get(req.submissionId);
    const next = req.status as JobStatus;
    if (!(next in RANK)) throw new ConfigError(`unknown job status '${req.status}'`);
    // Retried and late updates (the head already failed or stopped the job) change nothing.
    if (RANK[next] <= RANK[r.status] && !(next === r.status && next === 'RUNNING')) return r;
    r.status = next;
    r.message = req.message;
    if (req.pid) r.pid = req.pid;
    if (req.nodeId) r.nodeId = req.nodeId;
    if (next === 'RUNNING') r.startedAtMs ??= Date.now();
    if (req.hasExitCode) r.exitCode = req.exitCode;
    if (isTerminal(next)) r.endedAtMs = Date.now();
    await this.save(r);
    this.d.logger.info({ submissionId: r.submissionId, status: r.status, message: r.message }, 'job status');
    return r;
  }

  /** Asks the supervisor to stop the entrypoint; returns without waiting for it to exit. */
  async stop(submissionId: string): Promise<JobRecord> {
    const r = this.get(submissionId);
    if (isTerminal(r.status)) return r;
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
    });
    await this.killSupervisor(r);
    return r;
  }

  async delete(submissionId: string): Promise<void> {
    const r = this.get(submissionId);
    if (!isTerminal(r.status)) {
      throw new ConfigError(`job '${submissionId}' is ${r.status}; stop it before deleting it`, {
        fields: { submissionId, status: r.status },
      });
    }
    await this.killSupervisor(r);
    this.jobs.delete(submissionId);
    await this.d.store.delete('jobs', submissionId);
  }

  /** Hooked into the actor directory: a supervisor that dies takes its unfinished job with it. */
  onActorDead(actor: ActorRecord, cause: Error): void {
    if (actor.options.namespace !== SUPERVISOR_NAMESPACE) return;
    const r = [...this.jobs.values()].find((j) => j.supervisorActorId === actor.actorId);
    if (!r || isTerminal(r.status)) return;
    void this.fail(r, `the job's supervisor died: ${cause.message}`).catch((err: Error) =>
      this.d.logger.error({ submissionId: r.submissionId, err: err.message }, 'could not fail the job'),
    );
  }

  async close(): Promise<void> {
    await this.client?.close();
  }

  private async fail(r: JobRecord, message: string): Promise<void> {
    await this.update({
      submissionId: r.submissionId,
      status: 'FAILED',
      message,
      hasExitCode: false,
      exitCode: 0,
      pid: 0,
      nodeId: '',
    });
  }

  private async killSupervisor(r: JobRecord): Promise<void> {
    try {
      await this.d.actors.kill(r.supervisorActorId, true);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }

  private supervisors(): Cluster {
    this.client ??= new Cluster({ ...this.d.self(), headRetryMs: 0 });
    return this.client;
  }

  private save(r: JobRecord): Promise<void> {
    return this.d.store.put('jobs', r.submissionId, r);
  }
}

function supervisorSpec(record: JobRecord, config: SupervisorConfig): m.ActorSpec__Output {
  return {
    actorId: record.supervisorActorId,
    // A file URL of this install rather than `clawray/jobs`: actor hosts resolve package names
    // from their cwd, which need not be inside a project that depends on clawray. Nodes run
    // the same install layout (one image, or one machine).
    module: pathToFileURL(distEntry('jobs/index')).href,
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
    },
  };
}
