/** `clawray head start`, `clawray worker start`, `clawray start --local`: servers in the foreground. */
import type { Command } from 'commander';
import { requireClientToken } from '../common/auth.js';
import { createLogger } from '../common/logger.js';
import { DEFAULT_HEAD_PORT } from '../head/head-options.js';
import { HeadServer } from '../head/head-server.js';
import { LocalCluster } from '../local/local-cluster.js';
import { NodeAgent } from '../worker/node-agent.js';
import { onShutdownSignal } from './cli-errors.js';
import { int, intList, jsonNumbers, keyValues, num } from './cli-parse.js';

export function registerServerCommands(program: Command): void {
  program
    .command('head')
    .description('the head node')
    .command('start')
    .description('start the head (gRPC HeadService) in the foreground')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'gRPC port (0: any free port)', int('--port'), DEFAULT_HEAD_PORT)
    .option(
      '--store <store>',
      'cluster store: memory, redis://… or rediss://… (user:password@ for ACLs)',
      'memory',
    )
    .option('--cluster-name <name>', 'key prefix that separates clusters sharing one Redis', 'default')
    .option('--metrics-port <port>', 'serve Prometheus /metrics on this port', int('--metrics-port'))
    .option('--token <token>', 'cluster token (default: CLAWRAY_TOKEN, the token file, or a new one)')
    .option(
      '--node-timeout-ms <ms>',
      'declare a node dead after this long without heartbeats',
      int('--node-timeout-ms'),
      3000,
    )
    .option(
      '--heartbeat-interval-ms <ms>',
      'how often workers heartbeat',
      int('--heartbeat-interval-ms'),
      500,
    )
    .action(async (o) => {
      const head = await HeadServer.start({
        host: o.host,
        port: o.port,
        store: o.store,
        clusterName: o.clusterName,
        metricsPort: o.metricsPort,
        token: o.token,
        nodeTimeoutMs: o.nodeTimeoutMs,
        heartbeatIntervalMs: o.heartbeatIntervalMs,
      });
      process.stdout.write(
        `clawray head listening on ${head.address} (store ${head.storeKind}, token from ${head.tokenSource}` +
          `${head.metricsPort ? `, metrics on :${head.metricsPort}` : ''})\n`,
      );
      onShutdownSignal(() => head.stop());
    });

  program
    .command('worker')
    .description('the node agent of a machine')
    .command('start')
    .description('start a node agent that runs actors for the head, in the foreground')
    .requiredOption('--head <host:port>', 'head address')
    .option(
      '--gpus <n>',
      'declare N GPUs (0..N-1), also as CLAWRAY_GPUS (default: the container allocation, else nvidia-smi)',
      int('--gpus'),
    )
    .option('--gpu-ids <ids>', 'declare exactly these GPU ids, e.g. 0,1', intList('--gpu-ids'))
    .option('--cpus <n>', 'CPUs offered to actors (default: all cores)', num('--cpus'))
    .option('--memory-mb <n>', 'memory offered to actors (default: 70% of RAM)', num('--memory-mb'))
    .option(
      '--resources <json>',
      'custom resources, e.g. \'{"accelerator_type:H200": 1}\'',
      jsonNumbers('--resources'),
    )
    .option('--labels <k=v,...>', 'node labels for labelSelector', keyValues('--labels'))
    .option('--token <token>', 'cluster token (default: CLAWRAY_TOKEN or the local token file)')
    .option('--host <host>', 'address to bind for the agent and its actors', '127.0.0.1')
    .option('--advertise-host <host>', 'address others reach this node at (default: --host)')
    .option('--port <port>', 'node agent port (0: any free port)', int('--port'), 0)
    .option('--pool-size <n>', 'pre-started actor processes kept warm', int('--pool-size'), 2)
    .option('--metrics-port <port>', 'serve Prometheus /metrics on this port', int('--metrics-port'))
    .action(async (o) => {
      // Flags beat CLAWRAY_GPUS, which beats what the worker would find by itself.
      const gpusEnv = process.env.CLAWRAY_GPUS;
      if (o.gpus === undefined && o.gpuIds === undefined && gpusEnv !== undefined && gpusEnv !== '') {
        o.gpus = int('CLAWRAY_GPUS')(gpusEnv);
      }
      if (o.gpus !== undefined && o.gpuIds !== undefined) {
        throw new (await import('../common/errors.js')).ConfigError(
          'give either --gpus or --gpu-ids, not both',
        );
      }
      const agent = await NodeAgent.start(
        {
          headAddress: o.head,
          token: requireClientToken(o.token).token,
          gpus: o.gpus,
          gpuIds: o.gpuIds,
          cpus: o.cpus,
          memoryMb: o.memoryMb,
          resources: o.resources ?? {},
          labels: o.labels ?? {},
          bindHost: o.host,
          advertiseHost: o.advertiseHost,
          port: o.port,
          poolSize: o.poolSize,
          metricsPort: o.metricsPort,
        },
        createLogger({ component: 'worker' }),
      );
      process.stdout.write(
        `clawray worker ${agent.nodeId} listening on ${agent.address} (GPUs: ${agent.gpuIdList.join(',') || 'none'} from ${agent.gpuSource}` +
          `${agent.metricsPort ? `, metrics on :${agent.metricsPort}` : ''})\n`,
      );
      onShutdownSignal(() => agent.stop());
    });

  program
    .command('start')
    .description('start a whole cluster on this machine in the foreground (head + worker processes)')
    .requiredOption('--local', 'run everything on this machine')
    .option('--workers <n>', 'worker processes', int('--workers'), 1)
    .option(
      '--gpus-per-worker <n>',
      'GPUs each worker declares (default: nvidia-smi’s, split)',
      int('--gpus-per-worker'),
    )
    .option(
      '--cpus-per-worker <n>',
      'CPUs each worker offers (default: cores split)',
      num('--cpus-per-worker'),
    )
    .option('--port <port>', 'head gRPC port', int('--port'), DEFAULT_HEAD_PORT)
    .option('--store <store>', 'cluster store', 'memory')
    .option('--metrics-port <port>', 'head /metrics port', int('--metrics-port'))
    .action(async (o) => {
      const cluster = await LocalCluster.start({
        workers: o.workers,
        gpusPerWorker: o.gpusPerWorker,
        cpusPerWorker: o.cpusPerWorker,
        port: o.port,
        store: o.store,
        metricsPort: o.metricsPort,
        workerProcesses: true,
        writeLocalFiles: true,
      });
      process.stdout.write(
        `clawray local cluster: head on ${cluster.address} with ${o.workers} worker(s); ` +
          `try: clawray status  (CLAWRAY_ADDRESS=${cluster.address})\n`,
      );
      onShutdownSignal(() => cluster.stop());
    });
}
