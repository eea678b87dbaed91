/**
 * A client of the head's job and package RPCs, shared by the CLI and the JobSupervisor.
 * Requests that find the head unreachable are retried for `retryForMs`, so a supervisor's
 * status updates survive a head restart.
 */
import * as grpc from '@grpc/grpc-js';
import { authMetadata } from '../../common/auth.js';
import { Backoff, sleep } from '../../common/backoff.js';
import { UnavailableError } from '../../common/errors.js';
import { unaryCall } from '../../common/grpc-client.js';
import { CHANNEL_OPTIONS } from '../../common/grpc-server.js';
import { fromServiceError } from '../../common/wire-status.js';
import type { HeadServiceClient } from '../../proto/generated/clawray/v1/HeadService.js';
import type { JobInfo__Output } from '../../proto/generated/clawray/v1/JobInfo.js';
import type { PackageChunk__Output } from '../../proto/generated/clawray/v1/PackageChunk.js';
import type { PackageRef__Output } from '../../proto/generated/clawray/v1/PackageRef.js';
import type { StoreJobLogRequest } from '../../proto/generated/clawray/v1/StoreJobLogRequest.js';
import type { SubmitJobRequest } from '../../proto/generated/clawray/v1/SubmitJobRequest.js';
import type { UpdateJobRequest } from '../../proto/generated/clawray/v1/UpdateJobRequest.js';
import { protos } from '../../proto/loader.js';

export const UPLOAD_CHUNK_BYTES = 1024 * 1024;

/** A job as clients see it (the wire form with optional fields made optional). */
export interface JobView {
  submissionId: string;
  entrypoint: string;
  status: string;
  message: string;
  createdAtMs: number;
  startedAtMs?: number;
  endedAtMs?: number;
  workingDirHash?: string;
  metadata: Record<string, string>;
  supervisorActorId: string;
  exitCode?: number;
  pid?: number;
  nodeId?: string;
  /** Which start of the entrypoint this is (1-based; more after restarts). */
  attempt: number;
  maxRetries: number;
  stopGraceMs: number;
  /** What the job's process reported about itself (an RL driver: phase, step, runtime). */
  info: Record<string, string>;
}

/** A piece of a job's log: from its supervisor while it runs, from the head once it ended. */
export interface LogChunk {
  text: string;
  /** Where the next read starts. */
  nextOffset: number;
  /** The job has ended and everything it wrote has been read. */
  done: boolean;
  /** The attempt whose log this is. */
  attempt: number;
}

export function jobView(i: JobInfo__Output): JobView {
  return {
    submissionId: i.submissionId,
    entrypoint: i.entrypoint,
    status: i.status,
    message: i.message,
    createdAtMs: i.createdAtMs,
    startedAtMs: i.startedAtMs || undefined,
    endedAtMs: i.endedAtMs || undefined,
    workingDirHash: i.workingDirHash || undefined,
    metadata: { ...i.metadata },
    supervisorActorId: i.supervisorActorId,
    exitCode: i.hasExitCode ? i.exitCode : undefined,
    pid: i.pid || undefined,
    nodeId: i.nodeId || undefined,
    attempt: i.attempt || 1,
    maxRetries: i.maxRetries,
    stopGraceMs: i.stopGraceMs,
    info: { ...i.info },
  };
}

export const TERMINAL_STATUSES = new Set(['STOPPED', 'SUCCEEDED', 'FAILED']);

export class JobsClient {
  private readonly client: HeadServiceClient;
  private readonly target: string;

  constructor(
    readonly address: string,
    private readonly token: string,
    private readonly retryForMs = 0,
  ) {
    const Service = protos().clawray.v1.HeadService;
    this.client = new Service(address, grpc.credentials.createInsecure(), CHANNEL_OPTIONS);
    this.target = `head ${address}`;
  }

  async submit(request: SubmitJobRequest): Promise<JobView> {
    return jobView(await this.call<JobInfo__Output>('SubmitJob', request));
  }

  async get(submissionId: string): Promise<JobView> {
    return jobView(await this.call<JobInfo__Output>('GetJob', { submissionId }));
  }

  async list(): Promise<JobView[]> {
    const reply = await this.call<{ jobs: JobInfo__Output[] }>('ListJobs', {});
    return reply.jobs.map(jobView);
  }

  async stop(submissionId: string): Promise<JobView> {
    return jobView(await this.call<JobInfo__Output>('StopJob', { submissionId }));
  }

  async delete(submissionId: string): Promise<void> {
    await this.call('DeleteJob', { submissionId });
  }

  async update(request: UpdateJobRequest): Promise<JobView> {
    return jobView(await this.call<JobInfo__Output>('UpdateJob', request));
  }

  /** Merges `info` into what `job status` shows of the job (see ReportJobInfo in head.proto). */
  async reportInfo(submissionId: string, attempt: number, info: Record<string, string>): Promise<JobView> {
    return jobView(await this.call<JobInfo__Output>('ReportJobInfo', { submissionId, attempt, info }));
  }

  /** A finished job's log as the head keeps it (the supervisor stored it before it ended). */
  async logs(submissionId: string, offset: number): Promise<LogChunk> {
    return this.call<LogChunk>('GetJobLogs', { submissionId, offset });
  }

  async storeLog(request: StoreJobLogRequest): Promise<void> {
    await this.call('StoreJobLog', request);
  }

  /** Uploads `bytes` under `hash` unless the head already has it; resolves true if it sent them. */
  async uploadPackage(hash: string, bytes: Uint8Array): Promise<boolean> {
    const { exists } = await this.call<{ exists: boolean }>('HasPackage', { hash });
    if (exists) return false;
    await new Promise<PackageRef__Output>((resolve, reject) => {
      const stream = this.client.UploadPackage(authMetadata(new grpc.Metadata(), this.token), (err, reply) =>
        err ? reject(fromServiceError(err, this.target)) : resolve(reply!),
      );
      if (bytes.length === 0) stream.write({ hash, data: Buffer.alloc(0), sizeBytes: 0 });
      for (let at = 0; at < bytes.length; at += UPLOAD_CHUNK_BYTES) {
        stream.write({ hash, data: bytes.subarray(at, at + UPLOAD_CHUNK_BYTES), sizeBytes: bytes.length });
      }
      stream.end();
    });
    return true;
  }

  /**
   * The package's bytes. A wrong token rejects with AuthError, a package the head does not have
   * with NotFoundError, a malformed hash with ConfigError, all at once; an unreachable head is
   * retried for `retryForMs` like every other request.
   */
  async downloadPackage(hash: string): Promise<Buffer> {
    return this.retrying(async () => {
      const stream = this.client.DownloadPackage({ hash }, authMetadata(new grpc.Metadata(), this.token));
      const parts: Buffer[] = [];
      try {
        for await (const chunk of stream as AsyncIterable<PackageChunk__Output>)
          parts.push(Buffer.from(chunk.data));
      } catch (err) {
        throw fromServiceError(err, this.target);
      }
      return Buffer.concat(parts);
    });
  }

  close(): void {
    this.client.close();
  }

  private call<Reply>(method: string, request: unknown): Promise<Reply> {
    return this.retrying(() =>
      unaryCall<Reply>(this.client, method, request, this.token, this.target, 10_000),
    );
  }

  /** Runs `attempt` again while the head is unreachable, for `retryForMs`. */
  private async retrying<T>(attempt: () => Promise<T>): Promise<T> {
    const giveUpAt = Date.now() + this.retryForMs;
    const backoff = new Backoff({ initialMs: 100, maxMs: 2000 });
    for (;;) {
      try {
        return await attempt();
      } catch (err) {
        if (!(err instanceof UnavailableError) || Date.now() >= giveUpAt) throw err;
        await sleep(Math.min(backoff.next(), Math.max(1, giveUpAt - Date.now())));
      }
    }
  }
}
