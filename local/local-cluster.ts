/**
 * A whole cluster on one machine: a head and N node agents, either inside this process (what
 * `connect()` without an address starts) or as child processes (`clawray start --local`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { createInterface } from 'node:readline';
import { InternalError } from '../common/errors.js';
import { discoverGpus } from '../common/gpu-discovery.js';
import type { Logger } from '../common/logger.js';
import { distEntry } from '../common/package-root.js';
import { HeadServer } from '../head/index.js';
import { defaultMemoryMb, NodeAgent } from '../worker/index.js';

export interface LocalClusterOptions {
  /** Node agents to start. Default 1. */
  workers?: number;
  /** GPUs each worker declares. Default: the GPUs nvidia-smi finds, split across workers. */
  gpusPerWorker?: number;
  /** CPUs each worker offers. Default: the machine's cores, split across workers. */
  cpusPerWorker?: number;
  /**
   * Memory each worker offers to actors, in MB. Default: what one worker alone would offer
   * (70% of the machine's memory), split across workers: they share one machine's memory.
   */
  memoryMbPerWorker?: number;
  /** Warm actor hosts per worker. Default 2. */
  poolSize?: number;
  /** Head gRPC port. Default 0 (any free port). */
  port?: number;
  store?: string;
  token?: string;
  /** Write the token file and head.json so local CLI commands find this cluster. Default false. */
  writeLocalFiles?: boolean;
  /** Run workers as child processes instead of inside this process. Default false. */
  workerProcesses?: boolean;
  metricsPort?: number;
  /**
   * Worker processes serve /metrics on this port and the next ones (worker i on base + i);
   * 0: each on any free port. Only with `workerProcesses`; omit to serve none.
   */
  workerMetricsPort?: number;
  logger?: Logger;
}

/** A worker process of `clawray start --local`, as it announced itself. */
export interface LocalWorkerProcess {
  child: ChildProcess;
  pid: number;
  gpuIds: number[];
  /** Its /metrics port, when it serves one. */
  metricsPort?: number;
}

/**
 * The GPU ids of each of `workers` workers: disjoint, in order. `perWorker` given: worker i
 * declares ids i·n … i·n+n−1; else the machine's GPUs (nvidia-smi's indexes) are split evenly,
 * the remainder left out, and a machine without GPUs gives every worker none.
 */
export function splitGpus(
  workers: number,
  perWorker: number | undefined,
  machineGpuIds: number[],
): number[][] {
  if (perWorker !== undefined) {
    return Array.from({ length: workers }, (_, w) =>
      Array.from({ length: perWorker }, (_, i) => w * perWorker + i),
    );
  }
  const sorted = [...machineGpuIds].sort((a, b) => a - b);
  const each = Math.floor(sorted.length / workers);
  return Array.from({ length: workers }, (_, w) => sorted.slice(w * each, (w + 1) * each));
}

export class LocalCluster {
  private constructor(
    readonly head: HeadServer,
    readonly agents: NodeAgent[],
    readonly workerProcesses: LocalWorkerProcess[],
  ) {}

  get address(): string {
    return this.head.address;
  }

  get token(): string {
    return this.head.token;
  }

  /** The worker child processes (with `workerProcesses`). */
  get workerChildren(): ChildProcess[] {
    return this.workerProcesses.map((w) => w.child);
  }

  static async start(options: LocalClusterOptions = {}): Promise<LocalCluster> {
    const workers = options.workers ?? 1;
    const head = await HeadServer.start(
      {
        port: options.port ?? 0,
        store: options.store,
        token: options.token,
        writeLocalFiles: options.writeLocalFiles ?? false,
        metricsPort: options.metricsPort,
      },
      options.logger,
    );
    const machineGpuIds =
      options.gpusPerWorker === undefined ? (await discoverGpus()).map((g) => g.index) : [];
    const gpuIds = splitGpus(workers, options.gpusPerWorker, machineGpuIds);
    const cpusEach = options.cpusPerWorker ?? Math.max(1, Math.floor(cpus().length / workers));
    const memoryMbEach = options.memoryMbPerWorker ?? Math.floor(defaultMemoryMb() / workers);
    const cluster = new LocalCluster(head, [], []);
    try {
      if (options.workerProcesses) {
        // Started together: each spends seconds loading before it registers.
        const started = Array.from({ length: workers }, (_, i) => {
          const args = [
            ...gpuArgs(gpuIds[i]),
            '--cpus',
            String(cpusEach),
            '--memory-mb',
            String(memoryMbEach),
            '--pool-size',
            String(options.poolSize ?? 2),
          ];
          if (options.workerMetricsPort !== undefined) {
            const port = options.workerMetricsPort === 0 ? 0 : options.workerMetricsPort + i;
            args.push('--metrics-port', String(port));
          }
          return spawnWorker(head.address, head.token, args, gpuIds[i]);
        });
        const settled = await Promise.allSettled(started);
        for (const s of settled) if (s.status === 'fulfilled') cluster.workerProcesses.push(s.value);
        const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
        if (failed) throw failed.reason;
        await cluster.waitForNodes(workers);
      } else {
        for (let i = 0; i < workers; i++) {
          cluster.agents.push(
            await NodeAgent.start(
              {
                headAddress: head.address,
                token: head.token,
                gpuIds: gpuIds[i],
                cpus: cpusEach,
                memoryMb: memoryMbEach,
                poolSize: options.poolSize ?? 2,
              },
              options.logger,
            ),
          );
        }
      }
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    return cluster;
  }

  private async waitForNodes(count: number, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while ((this.head.status().nodes ?? []).filter((n) => n.state === 'ALIVE').length < count) {
      if (Date.now() > deadline)
        throw new InternalError(`only some of the ${count} local workers registered in time`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.agents.map((a) => a.stop()));
    await Promise.all(
      this.workerProcesses.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      ),
    );
    await this.head.stop();
  }
}

/** `--gpu-ids` for a worker with GPUs, `--gpus 0` for one without (it must not look for any). */
function gpuArgs(ids: number[]): string[] {
  return ids.length > 0 ? ['--gpu-ids', ids.join(',')] : ['--gpus', '0'];
}

/**
 * Starts `clawray worker start` as a child and resolves once it printed its address. Its
 * stdin is a pipe from this process, and `--exit-with-parent` makes it exit when the pipe
 * closes: if this process dies, even by SIGKILL, the kernel closes the pipe and the worker
 * and its actor processes go too, instead of living on without a head.
 */
function spawnWorker(
  headAddress: string,
  token: string,
  args: string[],
  gpuIds: number[],
): Promise<LocalWorkerProcess> {
  const child = spawn(
    process.execPath,
    [distEntry('cli/main'), 'worker', 'start', '--head', headAddress, '--exit-with-parent', ...args],
    {
      env: { ...process.env, CLAWRAY_TOKEN: token },
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  // A worker that dies first must not take this process down with an EPIPE.
  child.stdin!.on('error', () => {});
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('clawray worker ')) {
        const metrics = /metrics on :(\d+)/.exec(line);
        resolve({
          child,
          pid: child.pid!,
          gpuIds,
          metricsPort: metrics ? Number(metrics[1]) : undefined,
        });
      }
      process.stdout.write(`${line}\n`);
    });
    child.once('exit', (code) =>
      reject(new InternalError(`a local worker exited with code ${code} while starting`)),
    );
  });
}
