/**
 * The actor that runs one job's entrypoint (Ray's JobSupervisor): `/bin/sh -c ENTRYPOINT` in
 * the job's working dir, in a process group of its own so a stop reaches everything the
 * entrypoint started, with stdout and stderr in one log file that clients read through
 * `logs()`. The head creates it and it reports its transitions back with UpdateJob.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { ambientToken } from '../../actors/runtime/ambient.js';
import { Cluster } from '../../actors/runtime/cluster.js';
import { InternalError } from '../../common/errors.js';
import { clawrayHome } from '../../common/home.js';
import type { SupervisorConfig } from '../../common/job-names.js';
import { createLogger } from '../../common/logger.js';
import { parseManifest } from '../manifest/load.js';
import { packageCacheRoot, unpackWorkingDir } from '../package/working-dir.js';
import type { PipelineProgress, PipelineSummary, RLPipeline } from '../pipeline/rl-pipeline.js';
import { JobsClient } from './jobs-client.js';

export type { SupervisorConfig };

export interface LogChunk {
  text: string;
  /** Where the next read starts. */
  nextOffset: number;
  /** The job has ended and everything it wrote has been read. */
  done: boolean;
}

/** SIGTERM first; SIGKILL once this has passed (Ray's default is 3 s). */
export const STOP_GRACE_MS = Number(process.env.CLAWRAY_JOB_STOP_GRACE_MS) || 3000;
const MAX_LOG_READ = 256 * 1024;
/** Status updates keep being retried this long, so they survive a head restart. */
const HEAD_RETRY_MS = 5 * 60_000;

export function jobLogPath(submissionId: string): string {
  return join(clawrayHome(), 'logs', 'jobs', `${submissionId}.log`);
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // The group is already gone.
  }
}

export class JobSupervisor {
  private readonly logPath: string;
  private readonly client: JobsClient;
  private pgid = 0;
  private stopping = false;
  private disposing = false;
  private finished = false;
  private killTimer?: NodeJS.Timeout;
  private watchdog?: ChildProcess;
  private pipeline?: RLPipeline;
  private pipelineSummary?: PipelineSummary;
  /** Settles when the job has ended and its final status is with the head. */
  readonly done: Promise<void>;

  constructor(private readonly config: SupervisorConfig) {
    const address = process.env.CLAWRAY_ADDRESS;
    const token = ambientToken() ?? process.env.CLAWRAY_TOKEN;
    if (!address || !token)
      throw new InternalError('a JobSupervisor runs only inside a clawray actor process');
    this.client = new JobsClient(address, token, HEAD_RETRY_MS);
    this.logPath = jobLogPath(config.submissionId);
    mkdirSync(dirname(this.logPath), { recursive: true });
    // Calls (logs, stop) are served while the job runs, so the run is not awaited here.
    this.done = this.run().catch((err: Error) =>
      this.finish('FAILED', `the job supervisor failed: ${err.message}`, undefined),
    );
  }

  /** An RLJob's live progress (null for an entrypoint job, or before the pipeline starts). */
  async progress(): Promise<PipelineProgress | null> {
    return this.pipeline?.progress() ?? null;
  }

  /** An RLJob's summary once it has ended (null until then, and for entrypoint jobs). */
  async summary(): Promise<PipelineSummary | null> {
    return this.pipelineSummary ?? null;
  }

  async logs(offset = 0): Promise<LogChunk> {
    const finished = this.finished;
    if (!existsSync(this.logPath)) return { text: '', nextOffset: 0, done: finished };
    const size = statSync(this.logPath).size;
    const start = Math.min(Math.max(0, offset), size);
    const length = Math.min(size - start, MAX_LOG_READ);
    const buf = Buffer.alloc(length);
    if (length > 0) {
      const fd = openSync(this.logPath, 'r');
      try {
        readSync(fd, buf, 0, length, start);
      } finally {
        closeSync(fd);
      }
    }
    const whole = completeUtf8(buf, start + length < size || !finished);
    const nextOffset = start + whole.length;
    return { text: whole.toString('utf8'), nextOffset, done: finished && nextOffset >= size };
  }

  /** SIGTERM to the entrypoint's group, SIGKILL after the grace period; the job ends STOPPED. */
  async stop(): Promise<{ stopping: boolean }> {
    if (this.finished) return { stopping: false };
    this.stopping = true;
    // An RLJob stops gracefully: the step in progress finishes and is checkpointed.
    this.pipeline?.requestStop();
    if (this.pgid) {
      signalGroup(this.pgid, 'SIGTERM');
      const pgid = this.pgid;
      this.killTimer ??= setTimeout(() => signalGroup(pgid, 'SIGKILL'), STOP_GRACE_MS);
      this.killTimer.unref();
    }
    return { stopping: true };
  }

  /** A graceful actor stop (the node drains): end the entrypoint rather than orphan it. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.disposing = true;
    await this.stop();
    await Promise.race([this.done, new Promise((r) => setTimeout(r, STOP_GRACE_MS + 1000))]);
    this.client.close();
  }

  private async run(): Promise<void> {
    let cwd = process.cwd();
    if (this.config.workingDirHash) {
      const bytes = await this.client.downloadPackage(this.config.workingDirHash);
      cwd = await unpackWorkingDir({ hash: this.config.workingDirHash, bytes }, packageCacheRoot());
    }
    if (this.stopping) {
      await this.finish('STOPPED', 'stopped before the entrypoint started', undefined);
      return;
    }
    if (this.config.manifest) {
      await this.runManifest(this.config.manifest, cwd);
      return;
    }
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      CLAWRAY_ADDRESS: this.client.address,
      CLAWRAY_TOKEN: ambientToken() ?? process.env.CLAWRAY_TOKEN,
      CLAWRAY_JOB_ID: this.config.submissionId,
    };
    // The entrypoint is a driver, not this actor: it must not think it runs inside one, and it
    // sees the machine's GPUs (the supervisor reserved none).
    for (const name of ['CLAWRAY_ACTOR_ID', 'CLAWRAY_NODE_ID', 'CUDA_VISIBLE_DEVICES', 'CLAWRAY_BIND_HOST'])
      delete env[name];
    const out = openSync(this.logPath, 'w');
    let child: ChildProcess;
    try {
      child = spawn('/bin/sh', ['-c', this.config.entrypoint], {
        cwd,
        env,
        detached: true,
        stdio: ['ignore', out, out],
      });
    } finally {
      closeSync(out);
    }

    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>(
      (resolve) => {
        child.once('error', (error) => resolve({ code: null, signal: null, error }));
        child.once('exit', (code, signal) => resolve({ code, signal }));
      },
    );
    if (child.pid) {
      this.pgid = child.pid;
      this.guardGroup(child.pid);
      if (this.stopping) void this.stop();
      const reply = await this.client.update({
        submissionId: this.config.submissionId,
        status: 'RUNNING',
        message: 'the entrypoint is running',
        pid: child.pid,
        nodeId: process.env.CLAWRAY_NODE_ID ?? '',
      });
      // The head ended the job meanwhile (stopped while still PENDING).
      if (reply.status !== 'RUNNING') void this.stop();
    }
    const { code, signal, error } = await exited;
    clearTimeout(this.killTimer);
    // Whatever the entrypoint left running in its group ends with it.
    if (this.pgid) signalGroup(this.pgid, 'SIGKILL');
    this.watchdog?.kill('SIGKILL');
    if (error) {
      await this.finish('FAILED', `the entrypoint could not be started: ${error.message}`, undefined);
    } else if (this.disposing) {
      await this.finish('FAILED', "the job's node is shutting down", exitCode(code, signal));
    } else if (this.stopping) {
      await this.finish('STOPPED', 'stopped by request', exitCode(code, signal));
    } else if (code === 0) {
      await this.finish('SUCCEEDED', 'the entrypoint exited with code 0', 0);
    } else {
      const how = code !== null ? `exited with code ${code}` : `was killed by ${signal}`;
      await this.finish('FAILED', `the entrypoint ${how}`, exitCode(code, signal));
    }
  }

  /** Runs the RLJob pipeline in this process, its log lines going to the job's log. */
  private async runManifest(source: NonNullable<SupervisorConfig['manifest']>, workingDir: string) {
    const out = openSync(this.logPath, 'w');
    const log = (line: string) => writeSync(out, `${new Date().toISOString().slice(11, 19)} ${line}\n`);
    const cluster = new Cluster({
      address: this.client.address,
      token: ambientToken() ?? process.env.CLAWRAY_TOKEN,
      jobId: this.config.submissionId,
    });
    try {
      const manifest = parseManifest(source.text, source.file, { set: source.set });
      const { RLPipeline } = await import('../pipeline/rl-pipeline.js');
      this.pipeline = new RLPipeline({
        cluster,
        manifest,
        workingDir,
        dataDir: clawrayHome(),
        jobId: this.config.submissionId,
        logger: createLogger({ component: 'rljob', jobId: this.config.submissionId }),
        log,
      });
      if (this.stopping) this.pipeline.requestStop();
      await this.client.update({
        submissionId: this.config.submissionId,
        status: 'RUNNING',
        message: `RLJob ${manifest.metadata.name} is running`,
        pid: process.pid,
        nodeId: process.env.CLAWRAY_NODE_ID ?? '',
      });
      const summary = await this.pipeline.run();
      this.pipelineSummary = summary;
      log(`summary ${JSON.stringify({ ...summary, history: undefined, evals: undefined })}`);
      if (summary.status === 'stopped')
        await this.finish('STOPPED', `stopped at step ${summary.steps}`, undefined);
      else await this.finish('SUCCEEDED', `trained ${summary.steps} steps`, undefined);
    } catch (err) {
      log(`the job failed: ${(err as Error).message}`);
      await this.finish('FAILED', (err as Error).message, undefined);
    } finally {
      closeSync(out);
      await cluster.close();
    }
  }

  /**
   * The group outlives this process only if it is killed with SIGKILL (the node agent's
   * forced stop, or its whole group being killed): a detached `sh` waits for our end of a
   * pipe to close and then kills the group. Normal exits are covered by the exit hook.
   */
  private guardGroup(pgid: number): void {
    const watchdog = spawn('/bin/sh', ['-c', `read _; kill -KILL -${pgid} 2>/dev/null`], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    this.watchdog = watchdog;
    watchdog.unref();
    (watchdog.stdin as unknown as { unref?: () => void }).unref?.();
    watchdog.on('error', () => {});
    process.once('exit', () => signalGroup(pgid, 'SIGKILL'));
  }

  private async finish(status: string, message: string, code: number | undefined): Promise<void> {
    this.finished = true;
    await this.client.update({
      submissionId: this.config.submissionId,
      status,
      message,
      hasExitCode: code !== undefined,
      exitCode: code ?? 0,
    });
  }
}

function exitCode(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}

/** Drops a trailing partial UTF-8 character (unless nothing more will come to complete it). */
function completeUtf8(buf: Buffer, moreMayCome: boolean): Buffer {
  if (!moreMayCome) return buf;
  let i = buf.length - 1;
  let back = 0;
  while (i >= 0 && back < 4 && (buf[i]! & 0xc0) === 0x80) {
    i--;
    back++;
  }
  if (i < 0) return buf;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return buf.length - i < need ? buf.subarray(0, i) : buf;
}
