/**
 * The actor that runs one job's entrypoint (Ray's JobSupervisor): `/bin/sh -c ENTRYPOINT` in
 * the job's working dir, in a process group of its own so a stop reaches everything the
 * entrypoint started, with stdout and stderr in one log file that clients read through
 * `logs()`. The head creates it and it reports its transitions back with UpdateJob. It knows
 * jobs, not what they run: an RL job is the entrypoint `clawray rljob run MANIFEST`.
 *
 * When the entrypoint has exited the supervisor hands the log to the head (its last
 * MAX_STORED_LOG_BYTES), reports the final status, and the head then removes it with the rest
 * of the job: nothing of a finished job stays on its node.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { constants } from 'node:os';
import { dirname, join } from 'node:path';
import { InternalError } from '../../common/errors.js';
import { clawrayHome } from '../../common/home.js';
import {
  DEFAULT_STOP_GRACE_MS,
  EXIT_RESTART,
  MAX_STORED_LOG_BYTES,
  type SupervisorConfig,
} from '../../common/job-names.js';
import { completeUtf8, utf8BoundaryAfter } from '../../common/utf8.js';
import { addMetricsSource, ambientToken } from '../../runtime/index.js';
import { packageCacheRoot, unpackWorkingDir } from '../package/working-dir.js';
import { clawrayBinDir, clawrayImportOption, entrypointEnv, linkClawrayPackage } from './entrypoint-env.js';
import { JobsClient, type LogChunk } from './jobs-client.js';

export type { LogChunk, SupervisorConfig };

/** The stop grace of a job that sets none (a job's own is in its config). */
export const STOP_GRACE_MS = DEFAULT_STOP_GRACE_MS;
const MAX_LOG_READ = 256 * 1024;
/** How often a stopped job's process group is checked for having exited. */
const GROUP_POLL_MS = 100;
/** A cut log starts at a line when one starts this close to the cut. */
const CUT_LINE_SEARCH_BYTES = 64 * 1024;
/** Status updates keep being retried this long, so they survive a head restart. */
const HEAD_RETRY_MS = 5 * 60_000;

export function jobLogPath(submissionId: string, attempt = 1): string {
  return join(clawrayHome(), 'logs', 'jobs', `${submissionId}.${attempt}.log`);
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
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
  /**
   * Read side of the log, open for the supervisor's life: once the head has the log the file
   * is unlinked, and late readers still get it through this descriptor.
   */
  private logFd = -1;
  private readonly client: JobsClient;
  private pgid = 0;
  private stopping = false;
  private disposing = false;
  private finished = false;
  private killTimer?: NodeJS.Timeout;
  /** When a stop's grace ends (the group is SIGKILLed then). */
  private stopDeadlineMs = 0;
  private watchdog?: ChildProcess;
  /** Settles when the job has ended and its final status is with the head. */
  readonly done: Promise<void>;

  constructor(private readonly config: SupervisorConfig) {
    const address = process.env.CLAWRAY_ADDRESS;
    const token = ambientToken() ?? process.env.CLAWRAY_TOKEN;
    if (!address || !token)
      throw new InternalError('a JobSupervisor runs only inside a clawray actor process');
    this.client = new JobsClient(address, token, HEAD_RETRY_MS);
    this.logPath = jobLogPath(config.submissionId, config.attempt);
    mkdirSync(dirname(this.logPath), { recursive: true });
    // Calls (logs, stop) are served while the job runs, so the run is not awaited here.
    this.done = this.run().catch((err: Error) =>
      this.finish('FAILED', `the job supervisor failed: ${err.message}`, undefined),
    );
  }

  async logs(offset = 0): Promise<LogChunk> {
    const finished = this.finished;
    const attempt = this.config.attempt;
    if (this.logFd < 0) return { text: '', nextOffset: 0, done: finished, attempt };
    const size = fstatSync(this.logFd).size;
    const start = Math.min(Math.max(0, offset), size);
    const length = Math.min(size - start, MAX_LOG_READ);
    const buf = Buffer.alloc(length);
    if (length > 0) readSync(this.logFd, buf, 0, length, start);
    const whole = completeUtf8(buf, start + length < size || !finished);
    const nextOffset = start + whole.length;
    return { text: whole.toString('utf8'), nextOffset, done: finished && nextOffset >= size, attempt };
  }

  /** SIGTERM to the entrypoint's group, SIGKILL after the job's grace; the job ends STOPPED. */
  async stop(): Promise<{ stopping: boolean }> {
    if (this.finished) return { stopping: false };
    this.stopping = true;
    if (this.pgid && !this.killTimer) {
      signalGroup(this.pgid, 'SIGTERM');
      const pgid = this.pgid;
      this.stopDeadlineMs = Date.now() + this.config.stopGraceMs;
      this.killTimer = setTimeout(() => signalGroup(pgid, 'SIGKILL'), this.config.stopGraceMs);
      this.killTimer.unref();
    }
    return { stopping: true };
  }

  /** A graceful actor stop (the node drains): end the entrypoint rather than orphan it. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.disposing = true;
    await this.stop();
    await Promise.race([this.done, new Promise((r) => setTimeout(r, this.config.stopGraceMs + 1000))]);
    this.client.close();
  }

  private async run(): Promise<void> {
    const { submissionId, attempt } = this.config;
    let cwd = process.cwd();
    if (this.config.workingDirHash) {
      const bytes = await this.client.downloadPackage(this.config.workingDirHash);
      cwd = await unpackWorkingDir({ hash: this.config.workingDirHash, bytes }, packageCacheRoot());
      linkClawrayPackage(cwd);
    }
    if (this.stopping) {
      await this.finish('STOPPED', 'stopped before the entrypoint started', undefined);
      return;
    }
    const env = entrypointEnv(process.env, {
      address: this.client.address,
      token: ambientToken() ?? process.env.CLAWRAY_TOKEN ?? '',
      submissionId,
      attempt,
      binDir: clawrayBinDir(),
      store: this.config.store,
      nodeOption: clawrayImportOption(),
    });
    // The driver is a plain process: its metrics reach this node's /metrics through us.
    const metricsFile = `${this.logPath}.metrics.json`;
    env.CLAWRAY_JOB_METRICS_FILE = metricsFile;
    addMetricsSource(() =>
      existsSync(metricsFile) ? (JSON.parse(readFileSync(metricsFile, 'utf8')) as unknown[]) : [],
    );
    const out = openSync(this.logPath, 'w');
    this.logFd = openSync(this.logPath, 'r');
    let child: ChildProcess;
    try {
      if (this.config.restartReason) {
        writeSync(
          out,
          `[clawray: attempt ${attempt}; the previous one ended: ${this.config.restartReason}]\n`,
        );
      }
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
        submissionId,
        status: 'RUNNING',
        message:
          attempt > 1
            ? `the entrypoint is running (attempt ${attempt}; restarted after: ${this.config.restartReason})`
            : 'the entrypoint is running',
        pid: child.pid,
        nodeId: process.env.CLAWRAY_NODE_ID ?? '',
        attempt,
      });
      // The head ended the job meanwhile (stopped while still PENDING).
      if (reply.status !== 'RUNNING') void this.stop();
    }
    const { code, signal, error } = await exited;
    // A stopped entrypoint's shell may end before the driver it started has finished its
    // graceful exit (a step, a checkpoint): the rest of the group gets the grace too.
    while (this.killTimer && this.pgid && groupAlive(this.pgid) && Date.now() < this.stopDeadlineMs) {
      await new Promise((r) => setTimeout(r, GROUP_POLL_MS));
    }
    clearTimeout(this.killTimer);
    // Whatever the entrypoint left running in its group ends with it.
    if (this.pgid) signalGroup(this.pgid, 'SIGKILL');
    this.watchdog?.kill('SIGKILL');
    if (error) {
      await this.finish('FAILED', `the entrypoint could not be started: ${error.message}`, undefined);
    } else if (this.disposing) {
      // The driver is lost with its node, not failed: the head may start it elsewhere.
      await this.finish('FAILED', "the job's node is shutting down", exitCode(code, signal), true);
    } else if (this.stopping) {
      await this.finish('STOPPED', 'stopped by request', exitCode(code, signal));
    } else if (code === 0) {
      await this.finish('SUCCEEDED', 'the entrypoint exited with code 0', 0);
    } else if (code === EXIT_RESTART) {
      await this.finish('FAILED', `the entrypoint asked to be restarted (exit ${EXIT_RESTART})`, code, true);
    } else if (signal === 'SIGKILL') {
      // Nobody here sent it (the OOM killer, a person): the driver died rather than failed.
      await this.finish('FAILED', 'the entrypoint was killed by SIGKILL', exitCode(code, signal), true);
    } else {
      const how = code !== null ? `exited with code ${code}` : `was killed by ${signal}`;
      await this.finish('FAILED', `the entrypoint ${how}`, exitCode(code, signal));
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

  /**
   * The log goes to the head first, then the status: a client that sees the final status
   * finds the log there. The head then removes this actor.
   */
  private async finish(status: string, message: string, code: number | undefined, restartable = false) {
    this.finished = true;
    await this.storeLog().catch((err: Error) =>
      process.stderr.write(`could not store the job's log with the head: ${err.message}\n`),
    );
    await this.client.update({
      submissionId: this.config.submissionId,
      status,
      message,
      hasExitCode: code !== undefined,
      exitCode: code ?? 0,
      attempt: this.config.attempt,
      restartable,
    });
  }

  /** Sends the log (its tail, starting at a line, when it is too long) and unlinks the file. */
  private async storeLog(): Promise<void> {
    if (this.logFd < 0) return;
    const size = fstatSync(this.logFd).size;
    let cutAt = Math.max(0, size - MAX_STORED_LOG_BYTES);
    let data = Buffer.alloc(size - cutAt);
    if (data.length > 0) readSync(this.logFd, data, 0, data.length, cutAt);
    if (cutAt > 0) {
      const newline = data.subarray(0, CUT_LINE_SEARCH_BYTES).indexOf(0x0a);
      const skip = newline >= 0 ? newline + 1 : utf8BoundaryAfter(data, 0);
      data = data.subarray(skip);
      cutAt += skip;
    }
    await this.client.storeLog({
      submissionId: this.config.submissionId,
      attempt: this.config.attempt,
      data,
      cutAtBytes: cutAt,
      sizeBytes: size,
      // Proves to the head that this is the job's own supervisor (see JobManager.storeLog).
      supervisorKey: this.config.supervisorKey ?? '',
    });
    try {
      unlinkSync(this.logPath);
    } catch {
      // Already gone.
    }
  }
}

function exitCode(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  return 128 + (signal ? (constants.signals[signal] ?? 0) : 0);
}
