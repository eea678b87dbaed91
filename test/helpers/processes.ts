/**
 * Real cluster processes for integration tests: `clawray head start` and `clawray worker
 * start` as child processes on loopback, each test with its own CLAWRAY_HOME, killed (process
 * groups included) when the test's cluster is torn down.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { distEntry } from '../../common/package-root.js';
import { Cluster } from '../../runtime/index.js';

export interface Proc {
  child: ChildProcess;
  /** host:port it printed. */
  address: string;
  /** The node id a worker printed. */
  nodeId: string;
  output: string[];
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts `clawray ARGS` and resolves once a line matches `ready`. `prefix` runs it through
 * another command (e.g. `ip netns exec NS`).
 */
export function startProc(
  args: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  prefix: string[] = [],
): Promise<Proc> {
  const [command, ...commandArgs] = [...prefix, process.execPath, distEntry('cli/main'), ...args];
  const child = spawn(command, commandArgs, {
    env: { ...process.env, CLAWRAY_LOG_FORMAT: 'json', CLAWRAY_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const proc: Proc = {
    child,
    address: '',
    nodeId: '',
    output,
    exited,
    async kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        await exited;
      }
    },
  };
  return new Promise((resolve, reject) => {
    // 60 s: under the suite's load (7 on 2 cores) a head or worker once took over 20 s. One
    // that never starts is killed: nobody else holds it, so it would outlive the test.
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not start in 60 s:\n${output.join('\n')}`));
    }, 60_000);
    for (const stream of [child.stdout!, child.stderr!]) {
      createInterface({ input: stream }).on('line', (line) => {
        output.push(line);
        if (output.length > 2000) output.shift();
        const match = ready.exec(line);
        if (match) {
          clearTimeout(timer);
          proc.address = match.groups?.address ?? '';
          proc.nodeId = match.groups?.nodeId ?? '';
          resolve(proc);
        }
      });
    }
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited with ${code}:\n${output.join('\n')}`));
    });
  });
}

export interface WorkerSpec {
  gpus?: number;
  gpuIds?: number[];
  cpus?: number;
  memoryMb?: number;
  labels?: Record<string, string>;
  resources?: Record<string, number>;
  poolSize?: number;
  metricsPort?: number;
}

/** A cluster of real processes with its own home folder and token. */
export class TestCluster {
  readonly home = mkdtempSync(join(tmpdir(), 'clawray-test-'));
  readonly token = `test-token-${Math.random().toString(36).slice(2)}`;
  head?: Proc;
  readonly workers: Proc[] = [];
  private readonly clients: Cluster[] = [];
  private headArgs: string[] = [];

  get env(): NodeJS.ProcessEnv {
    return { CLAWRAY_HOME: this.home, CLAWRAY_TOKEN: this.token };
  }

  /**
   * `clawray VERB NOUN --address <head> REST…` against this cluster, from `cwd`; resolves with
   * its stdout, rejects when it exits non-zero.
   */
  async cli(args: string[], cwd: string): Promise<string> {
    const argv = [...args.slice(0, 2), '--address', this.head!.address, ...args.slice(2)];
    const { stdout } = await promisify(execFile)(process.execPath, [distEntry('cli/main'), ...argv], {
      env: { ...process.env, CLAWRAY_ADDRESS: '', ...this.env },
      timeout: 150_000,
      cwd,
    });
    return stdout;
  }

  async startHead(
    options: {
      store?: string;
      clusterName?: string;
      nodeTimeoutMs?: number;
      metricsPort?: number;
      port?: number;
    } = {},
  ): Promise<Proc> {
    this.headArgs = [
      'head',
      'start',
      '--port',
      String(options.port ?? 0),
      '--store',
      options.store ?? 'memory',
    ];
    if (options.clusterName) this.headArgs.push('--cluster-name', options.clusterName);
    if (options.nodeTimeoutMs) this.headArgs.push('--node-timeout-ms', String(options.nodeTimeoutMs));
    if (options.metricsPort !== undefined) this.headArgs.push('--metrics-port', String(options.metricsPort));
    this.head = await startProc(this.headArgs, this.env, /clawray head listening on (?<address>\S+)/);
    return this.head;
  }

  /** Starts the head again with the same arguments on the same port (after a kill). */
  async restartHead(): Promise<Proc> {
    const port = this.head!.address.split(':').pop()!;
    const args = [...this.headArgs];
    args[args.indexOf('--port') + 1] = port;
    this.head = await startProc(args, this.env, /clawray head listening on (?<address>\S+)/);
    return this.head;
  }

  async startWorker(spec: WorkerSpec = {}): Promise<Proc> {
    const args = ['worker', 'start', '--head', this.head!.address, '--pool-size', String(spec.poolSize ?? 1)];
    if (spec.gpus !== undefined) args.push('--gpus', String(spec.gpus));
    if (spec.gpuIds) args.push('--gpu-ids', spec.gpuIds.join(','));
    args.push('--cpus', String(spec.cpus ?? 4));
    if (spec.memoryMb !== undefined) args.push('--memory-mb', String(spec.memoryMb));
    if (spec.labels)
      args.push(
        '--labels',
        Object.entries(spec.labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      );
    if (spec.resources) args.push('--resources', JSON.stringify(spec.resources));
    if (spec.metricsPort !== undefined) args.push('--metrics-port', String(spec.metricsPort));
    const worker = await startProc(
      args,
      this.env,
      /clawray worker (?<nodeId>\S+) listening on (?<address>\S+)/,
    );
    this.workers.push(worker);
    return worker;
  }

  async connect(options: { headRetryMs?: number; namespace?: string } = {}): Promise<Cluster> {
    const cluster = await Cluster.connect({ address: this.head!.address, token: this.token, ...options });
    this.clients.push(cluster);
    return cluster;
  }

  /** Kills everything: clients, workers (their actor process groups die with them), head. */
  async teardown(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close()));
    await Promise.all(this.workers.map((w) => w.kill('SIGKILL')));
    await this.head?.kill('SIGKILL');
    rmSync(this.home, { recursive: true, force: true });
  }
}

export const fixture = (name: string): string => new URL(`../fixtures/${name}`, import.meta.url).pathname;

/** Polls until `check` returns a truthy value or the time is up. */
type Falsy = undefined | null | false | 0 | '';

export async function eventually<T>(
  check: () => Promise<T> | T,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<Exclude<T, Falsy>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await within(
        Math.max(1, deadline - Date.now()),
        'a condition check',
        Promise.resolve(check()),
      );
      if (value) return value as Exclude<T, Falsy>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`condition not met in ${timeoutMs} ms${last ? `: ${last}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** True when a process with this pid exists. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Fails with `label` instead of hanging when `promise` takes longer than `ms`. */
export async function within<T>(ms: number, label: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${label} did not finish within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
