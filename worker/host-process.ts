/**
 * One actor host child process as the node agent sees it: forked in its own process group
 * (so a kill takes everything it spawned), its output captured line by line and tagged with
 * the actor and job, its IPC typed (runtime/ipc.ts).
 */
import { type ChildProcess, fork } from 'node:child_process';
import { createInterface } from 'node:readline';
import { ActorError, ConfigError, fromErrorInfo, InternalError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { distEntry } from '../common/package-root.js';
import { parsePinoLine } from '../common/pino-line.js';
import { describeExit, HOST_EXIT, type HostToAgent, type InitCommand } from '../runtime/index.js';

export interface HostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** True when the agent asked for it (stop, kill, drain). */
  intended: boolean;
  description: string;
  /** The last lines the process wrote to stderr, for death causes. */
  stderrTail: string[];
}

const TAIL_LINES = 20;

export class HostProcess {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<HostExit>;
  port = 0;
  actorId = '';
  jobId = '';
  className = '';
  private intended = false;
  private readonly stderrTail: string[] = [];
  private nextMetricsRequest = 1;
  private readonly metricsWaiters = new Map<number, (metrics: unknown[]) => void>();
  private initWaiter?: { resolve: () => void; reject: (err: Error) => void };

  constructor(
    private readonly logger: Logger,
    options: { bindHost: string; cwd?: string },
  ) {
    const env: NodeJS.ProcessEnv = { ...process.env, CLAWRAY_BIND_HOST: options.bindHost };
    // The token reaches the host over IPC only, never through the environment users see.
    delete env.CLAWRAY_TOKEN;
    this.child = fork(distEntry('runtime/host-main'), [], {
      cwd: options.cwd,
      detached: true,
      env,
      execArgv: [],
      serialization: 'advanced',
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    this.capture('stdout');
    this.capture('stderr');
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.killGroup();
        const exit: HostExit = {
          code,
          signal,
          intended: this.intended,
          description: `actor process ${this.child.pid} ${describeExit(code, signal)}`,
          stderrTail: [...this.stderrTail],
        };
        this.initWaiter?.reject(
          new InternalError(`${exit.description} while starting${this.tailText()}`, {
            fields: { pid: this.child.pid },
          }),
        );
        for (const waiter of this.metricsWaiters.values()) waiter([]);
        this.metricsWaiters.clear();
        resolve(exit);
      });
    });
    this.ready = new Promise((resolve, reject) => {
      const onMessage = (message: HostToAgent) => {
        if (message.type === 'ready') {
          this.port = message.port;
          resolve();
        }
      };
      this.child.on('message', onMessage);
      this.child.once('error', reject);
      void this.exited.then((exit) =>
        reject(new InternalError(`${exit.description} before it was ready${this.tailText()}`)),
      );
    });
    this.child.on('message', (message: HostToAgent) => this.onMessage(message));
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  get alive(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Hands the host its actor; resolves once the constructor has returned. */
  init(command: InitCommand): Promise<void> {
    this.actorId = command.actorId;
    this.jobId = command.jobId;
    this.className = command.className;
    return new Promise((resolve, reject) => {
      this.initWaiter = { resolve, reject };
      this.child.send(command);
    });
  }

  /** Graceful: the host finishes queued calls and runs the actor's dispose hook first. */
  async stop(graceful: boolean, graceMs: number): Promise<HostExit> {
    this.intended = true;
    if (!this.alive) return this.exited;
    if (graceful && this.child.connected) {
      this.child.send({ type: 'stop', graceful: true, graceMs });
      const timer = setTimeout(() => this.killGroup(), graceMs + 2000);
      const exit = await this.exited;
      clearTimeout(timer);
      return exit;
    }
    this.killGroup();
    return this.exited;
  }

  /** SIGKILL to the whole process group: the host and anything it started. */
  killGroup(): void {
    if (!this.child.pid) return;
    try {
      process.kill(-this.child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }

  requestMetrics(timeoutMs = 2000): Promise<unknown[]> {
    if (!this.alive || !this.child.connected || !this.actorId) return Promise.resolve([]);
    const requestId = this.nextMetricsRequest++;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.metricsWaiters.delete(requestId);
        resolve([]);
      }, timeoutMs);
      this.metricsWaiters.set(requestId, (metrics) => {
        clearTimeout(timer);
        resolve(metrics);
      });
      this.child.send({ type: 'metrics', requestId });
    });
  }

  private onMessage(message: HostToAgent): void {
    switch (message.type) {
      case 'started':
        this.initWaiter?.resolve();
        this.initWaiter = undefined;
        break;
      case 'failed': {
        const remote = fromErrorInfo(message.error);
        const what = `actor ${this.className} (${this.actorId})`;
        const err =
          message.phase === 'constructor'
            ? new ActorError(`${what}: the constructor threw ${remote.name}: ${remote.message}`, {
                cause: remote,
                remoteName: remote.name,
                remoteStack: remote.stack ?? '',
                fields: { actorId: this.actorId, phase: message.phase },
              })
            : new ConfigError(`${what} cannot start: ${remote.message}`, {
                cause: remote,
                fields: { actorId: this.actorId, phase: message.phase },
              });
        this.intended = true;
        this.initWaiter?.reject(err);
        this.initWaiter = undefined;
        break;
      }
      case 'metrics':
        this.metricsWaiters.get(message.requestId)?.(message.metrics);
        this.metricsWaiters.delete(message.requestId);
        break;
    }
  }

  private capture(stream: 'stdout' | 'stderr'): void {
    const source = this.child[stream];
    if (!source) return;
    createInterface({ input: source, crlfDelay: Number.POSITIVE_INFINITY }).on('line', (line) => {
      if (stream === 'stderr') {
        this.stderrTail.push(line);
        if (this.stderrTail.length > TAIL_LINES) this.stderrTail.shift();
      }
      const fields = {
        actorId: this.actorId || undefined,
        jobId: this.jobId || undefined,
        hostPid: this.pid,
        stream,
      };
      // The actor process logs pino JSON on stderr: each record keeps its own level and fields.
      const logged = parsePinoLine(line);
      if (logged) this.logger[logged.level]({ ...logged.fields, ...fields }, logged.msg);
      else if (stream === 'stderr') this.logger.warn(fields, line);
      else this.logger.info(fields, line);
    });
  }

  private tailText(): string {
    return this.stderrTail.length > 0 ? `; last stderr lines:\n${this.stderrTail.join('\n')}` : '';
  }
}

export { HOST_EXIT };
