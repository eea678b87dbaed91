/** `clawray head start`, `clawray worker start`, `clawray start --local`: servers in the foreground. */
import { type Command, Option } from 'commander';
import { requireClientToken } from '../common/auth.js';
import { ConfigError } from '../common/errors.js';
import { writeWorkerRecord } from '../common/local-workers.js';
import { createLogger } from '../common/logger.js';
import { DEFAULT_HEAD_PORT, HeadServer } from '../head/index.js';
import { LocalCluster } from '../local/local-cluster.js';
import { NodeAgent } from '../worker/index.js';
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
    .option(
      '--max-dead-actors <n>',
      "dead actors' records kept (oldest dropped first; default CLAWRAY_MAX_DEAD_ACTORS, else 100000, Ray's)",
      int('--max-dead-actors'),
    )
    .option(
      '--max-finished-jobs <n>',
      "finished jobs' records and logs kept (default CLAWRAY_MAX_FINISHED_JOBS, else 1000)",
      int('--max-finished-jobs'),
    )
    .option(
      '--owner-grace-ms <ms>',
      "how long a driver whose connection broke may reconnect before its actors are killed (default CLAWRAY_OWNER_GRACE_MS, else 30000, Ray Client's)",
      int('--owner-grace-ms'),
    )
    .action(async (o) => {
      const head = await HeadServer.start({
        ...(o.maxDeadActors !== undefined ? { maxDeadActors: o.maxDeadActors } : {}),
        ...(o.maxFinishedJobs !== undefined ? { maxFinishedJobs: o.maxFinishedJobs } : {}),
        ...(o.ownerGraceMs !== undefined ? { ownerGraceMs: o.ownerGraceMs } : {}),
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
    .addOption(
      // `start --local` passes it with a pipe on stdin: this worker must not outlive its starter.
      new Option(
        '--exit-with-parent',
        'exit when stdin closes (the process that started it died)',
      ).hideHelp(),
    )
    .action(async (o) => {
      // Watched from the start: a starter that dies while this worker still waits for the
      // head must not leave it waiting for good.
      let agent: NodeAgent | undefined;
      if (o.exitWithParent) exitWithParent(async () => agent?.stop({ graceful: false }));
      // Flags beat CLAWRAY_GPUS, which beats what the worker would find by itself.
      const gpusEnv = process.env.CLAWRAY_GPUS;
      if (o.gpus === undefined && o.gpuIds === undefined && gpusEnv !== undefined && gpusEnv !== '') {
        o.gpus = int('CLAWRAY_GPUS')(gpusEnv);
      }
      if (o.gpus !== undefined && o.gpuIds !== undefined) {
        throw new ConfigError('give either --gpus or --gpu-ids, not both');
      }
      agent = await NodeAgent.start(
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
      writeWorkerRecord({ head: o.head, address: agent.address });
      process.stdout.write(
        `clawray worker ${agent.nodeId} listening on ${agent.address} (GPUs: ${agent.gpuIdList.join(',') || 'none'} from ${agent.gpuSource}` +
          `${agent.metricsPort ? `, metrics on :${agent.metricsPort}` : ''})\n`,
      );
      const started = agent;
      onShutdownSignal(() => started.stop());
    });

  program
    .command('start')
    .description('start a whole cluster on this machine in the foreground (head + worker processes)')
    .requiredOption('--local', 'run everything on this machine')
    .option('--workers <n>', 'worker processes', int('--workers'), 1)
    .option(
      '--gpus-per-worker <n>',
      'GPUs each worker declares, ids disjoint: worker i gets i·N … i·N+N−1 (default: the GPUs nvidia-smi reports, split evenly; none without)',
      int('--gpus-per-worker'),
    )
    .option(
      '--cpus-per-worker <n>',
      'CPUs each worker offers (default: cores split)',
      num('--cpus-per-worker'),
    )
    .option(
      '--memory-mb-per-worker <n>',
      'memory each worker offers to actors (default: 70% of RAM, split)',
      num('--memory-mb-per-worker'),
    )
    .option('--port <port>', 'head gRPC port', int('--port'), DEFAULT_HEAD_PORT)
    .option('--store <store>', 'cluster store', 'memory')
    .option('--metrics-port <port>', 'head /metrics port', int('--metrics-port'))
    .option(
      '--worker-metrics-port <port>',
      'worker i serves /metrics on PORT + i (0: each on any free port)',
      int('--worker-metrics-port'),
      0,
    )
    .action(async (o) => {
      if (o.workers < 1) throw new ConfigError('--workers expects at least 1 worker');
      const cluster = await LocalCluster.start({
        workers: o.workers,
        gpusPerWorker: o.gpusPerWorker,
        cpusPerWorker: o.cpusPerWorker,
        memoryMbPerWorker: o.memoryMbPerWorker,
        port: o.port,
        store: o.store,
        metricsPort: o.metricsPort,
        workerMetricsPort: o.workerMetricsPort,
        workerProcesses: true,
        writeLocalFiles: true,
      });
      const workers = cluster.workerProcesses
        .map(
          (w, i) =>
            `  worker ${i}: pid ${w.pid}, GPUs ${w.gpuIds.join(',') || 'none'}` +
            `${w.metricsPort ? `, metrics on :${w.metricsPort}` : ''}\n`,
        )
        .join('');
      process.stdout.write(
        `clawray local cluster: head on ${cluster.address}` +
          `${cluster.head.metricsPort ? ` (metrics on :${cluster.head.metricsPort})` : ''} with ${o.workers} worker(s)\n` +
          workers +
          `try: clawray status  (CLAWRAY_ADDRESS=${cluster.address}); stop with Ctrl-C or clawray stop\n`,
      );
      onShutdownSignal(() => cluster.stop());
    });
}

/** How long a worker whose starter died may take to stop its actors before it just exits. */
const ORPHAN_STOP_MS = 3000;

/**
 * Exits when stdin reaches its end: the process that started this worker holds the other end
 * of the pipe, and the kernel closes it when that process dies however it dies. The actor
 * processes follow this one (they exit when their IPC channel to it closes).
 */
function exitWithParent(stop: () => Promise<void>): void {
  process.stdin.on('data', () => {});
  process.stdin.once('close', () => {
    process.stderr.write('clawray: the process that started this worker is gone; stopping\n');
    const timer = setTimeout(() => process.exit(1), ORPHAN_STOP_MS);
    timer.unref();
    stop().finally(() => process.exit(1));
  });
}
