/**
 * A whole cluster on one machine: a head and N node agents, either inside this process (what
 * `connect()` without an address starts) or as child processes (`clawray start --local`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { cpus } from 'node:os';
import { createInterface } from 'node:readline';
import { InternalError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { distEntry } from '../common/package-root.js';
import { HeadServer } from '../head/head-server.js';
import { discoverGpus } from '../worker/gpu-discovery.js';
import { NodeAgent } from '../worker/node-agent.js';

export interface LocalClusterOptions {
  /** Node agents to start. Default 1. */
  workers?: number;
  /** GPUs each worker declares. Default: the GPUs nvidia-smi finds, split across workers. */
  gpusPerWorker?: number;
  /** CPUs each worker offers. Default: the machine's cores, split across workers. */
  cpusPerWorker?: number;
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
  logger?: Logger;
}

export class LocalCluster {
  private constructor(
    readonly head: HeadServer,
    readonly agents: NodeAgent[],
    readonly workerChildren: ChildProcess[],
  ) {}

  get address(): string {
    return this.head.address;
  }

  get token(): string {
    return this.head.token;
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
    const machineGpus = options.gpusPerWorker === undefined ? (await discoverGpus()).length : 0;
    const gpus = options.gpusPerWorker ?? Math.floor(machineGpus / workers);
    const cpusEach = options.cpusPerWorker ?? Math.max(1, Math.floor(cpus().length / workers));
    const cluster = new LocalCluster(head, [], []);
    try {
      if (options.workerProcesses) {
        for (let i = 0; i < workers; i++) {
          cluster.workerChildren.push(
            await spawnWorker(head.address, head.token, [
              '--gpus',
              String(gpus),
              '--cpus',
              String(cpusEach),
              '--pool-size',
              String(options.poolSize ?? 2),
            ]),
          );
        }
        await cluster.waitForNodes(workers);
      } else {
        for (let i = 0; i < workers; i++) {
          cluster.agents.push(
            await NodeAgent.start(
              {
                headAddress: head.address,
                token: head.token,
                gpus,
                cpus: cpusEach,
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
      this.workerChildren.map(
        (child) =>
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

/** Starts `clawray worker start` as a child and resolves once it printed its address. */
function spawnWorker(headAddress: string, token: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [distEntry('cli/main'), 'worker', 'start', '--head', headAddress, ...args],
    {
      env: { ...process.env, CLAWRAY_TOKEN: token },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (line.startsWith('clawray worker ')) resolve(child);
      process.stdout.write(`${line}\n`);
    });
    child.once('exit', (code) =>
      reject(new InternalError(`a local worker exited with code ${code} while starting`)),
    );
  });
}
