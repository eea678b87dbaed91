/**
 * `npm run bench -- actors`: the actor runtime against the design's targets (DESIGN.md §7).
 * Sync and pipelined 1:1 calls, warm-pool actor creation, scheduler throughput and placement
 * group create/remove. Baselines measured in the same run, against a child process: a bare
 * grpc-js ping-pong and a bare node:http2 ping-pong (the floor of the actor call stream, which is
 * gRPC framing over node:http2), and bare grpc-js unary calls at the placement groups' concurrency
 * (each create+remove is two unary calls to the head).
 */
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { packageRoot } from '../common/package-root.js';
import { benchScheduling } from '../head/index.js';
import { LocalCluster } from '../local/local-cluster.js';
import type { ActorHandle } from '../runtime/index.js';
import { Cluster } from '../runtime/index.js';
import { Baselines, inProcessUnaryRate, median, type PingPong } from './grpc-baseline.js';

const SYNC_CALLS = 5000;
const SYNC_WARMUP = 1000;
const PIPELINED_CALLS = 20_000;
const ROUNDS = 3;
const SYNC_ROUNDS = 5;
const POOL_SIZE = 20;
const PG_SECONDS = 2;
const PG_IN_FLIGHT = 8;

const TARGETS = {
  syncCallsPerSec: { min: 10_000 },
  syncVsGrpc: { min: 0.7 },
  pipelinedCallsPerSec: { min: 25_000 },
  actorCreationsPerSec: { min: 100 },
  schedulingSeconds: { max: 0.5 },
  placementGroupCreateRemovePerSec: { min: 2000 },
} as const;

interface BenchActor {
  inc(by: number): number;
  get(): number;
}

const log = (message: string): void => {
  process.stderr.write(`[bench actors] ${message}\n`);
};

const round = (x: number, digits = 0): number => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

/** Rounds to 3 significant digits (enough for rates that vary by a few percent run to run). */
const sig = (x: number): number => Number(x.toPrecision(3));

function benchActorModule(): string {
  return join(packageRoot(), 'bench', 'fixtures', 'bench-actor.mjs');
}

/**
 * Sync actor calls, the grpc-js ping-pong and the node:http2 ping-pong, in alternating rounds so
 * that all see the same load on the machine; each ratio is the median of the per-round ratios.
 */
async function syncCallsAgainstBaselines(
  actor: ActorHandle<BenchActor>,
  grpc: PingPong,
  h2: PingPong,
): Promise<{ sync: number[]; grpc: number[]; http2: number[]; vsGrpc: number; vsHttp2: number }> {
  for (let i = 0; i < SYNC_WARMUP; i++) await actor.call('inc', 1);
  await grpc.round(SYNC_WARMUP);
  await h2.round(SYNC_WARMUP);
  const sync: number[] = [];
  const grpcRounds: number[] = [];
  const http2Rounds: number[] = [];
  for (let r = 0; r < SYNC_ROUNDS; r++) {
    grpcRounds.push(await grpc.round(SYNC_CALLS));
    http2Rounds.push(await h2.round(SYNC_CALLS));
    const start = performance.now();
    for (let i = 0; i < SYNC_CALLS; i++) await actor.call('inc', 1);
    sync.push(SYNC_CALLS / ((performance.now() - start) / 1000));
  }
  return {
    sync,
    grpc: grpcRounds,
    http2: http2Rounds,
    vsGrpc: median(sync.map((x, i) => x / grpcRounds[i])),
    vsHttp2: median(sync.map((x, i) => x / http2Rounds[i])),
  };
}

async function pipelinedCalls(actor: ActorHandle<BenchActor>): Promise<number[]> {
  await Promise.all(Array.from({ length: 1000 }, () => actor.call('inc', 1)));
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const start = performance.now();
    const results = await Promise.all(Array.from({ length: PIPELINED_CALLS }, () => actor.call('inc', 1)));
    rounds.push(PIPELINED_CALLS / ((performance.now() - start) / 1000));
    // A sync actor runs one caller's calls in order: the results must count up by one.
    if (results[results.length - 1] - results[0] !== PIPELINED_CALLS - 1) {
      throw new Error(`pipelined calls ran out of order: ${results[0]} .. ${results[results.length - 1]}`);
    }
  }
  return rounds;
}

async function actorCreations(local: LocalCluster, cluster: Cluster): Promise<number> {
  await local.agents[0].warm();
  const module = benchActorModule();
  const start = performance.now();
  const actors = await Promise.all(
    Array.from({ length: POOL_SIZE }, (_, i) =>
      cluster.createActor<BenchActor>({ module, className: 'BenchActor', args: [i] }),
    ),
  );
  const seconds = (performance.now() - start) / 1000;
  // Each actor must be up and answering, not just placed.
  const values = await Promise.all(actors.map((a) => a.call('get')));
  if (values.some((v, i) => v !== i)) throw new Error(`created actors answered ${values.join(',')}`);
  await Promise.all(actors.map((a) => cluster.killActor(a.actorId)));
  return POOL_SIZE / seconds;
}

async function placementGroups(cluster: Cluster): Promise<number> {
  // Warm the path first: zod schemas, the head's handlers, the channel.
  for (let i = 0; i < 50; i++) {
    await cluster.removePlacementGroup(
      await cluster.createPlacementGroup({ bundles: [{ numCpus: 0.01 }], strategy: 'PACK' }),
    );
  }
  let done = 0;
  const start = performance.now();
  const deadline = start + PG_SECONDS * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const pg = await cluster.createPlacementGroup({ bundles: [{ numCpus: 0.01 }], strategy: 'PACK' });
      await cluster.removePlacementGroup(pg);
      done++;
    }
  };
  await Promise.all(Array.from({ length: PG_IN_FLIGHT }, loop));
  return done / ((performance.now() - start) / 1000);
}

function met(name: keyof typeof TARGETS, value: number): { min?: number; max?: number; met: boolean } {
  const t: { min?: number; max?: number } = TARGETS[name];
  const ok = (t.min === undefined || value >= t.min) && (t.max === undefined || value <= t.max);
  return { ...t, met: ok };
}

export async function runActorsBench(): Promise<Record<string, unknown>> {
  log('scheduler: 10,000 actors over 250 simulated nodes');
  const scheduling = await benchScheduling();

  log('starting the baseline echo server (grpc-js + node:http2, child process)');
  const baselines = await Baselines.start();
  log(`starting an embedded cluster (1 worker, pool ${POOL_SIZE})`);
  let local: LocalCluster | undefined;
  let cluster: Cluster | undefined;
  try {
    local = await LocalCluster.start({ workers: 1, poolSize: POOL_SIZE, cpusPerWorker: 8, gpusPerWorker: 0 });
    cluster = await Cluster.connect({ address: local.address, token: local.token });
    log('waiting for the warm pool');
    await local.agents[0].warm();

    const actor = await cluster.createActor<BenchActor>({
      module: benchActorModule(),
      className: 'BenchActor',
    });
    log(`sync calls vs grpc-js and http2 ping-pongs: ${SYNC_ROUNDS} alternating rounds of ${SYNC_CALLS}`);
    const sync = await syncCallsAgainstBaselines(actor, baselines.grpc, baselines.http2);
    log(`  grpc rounds/s:  ${sync.grpc.map((x) => Math.round(x)).join(', ')}`);
    log(`  http2 rounds/s: ${sync.http2.map((x) => Math.round(x)).join(', ')}`);
    log(`  sync rounds/s:  ${sync.sync.map((x) => Math.round(x)).join(', ')}`);
    log(`pipelined calls: ${ROUNDS} x ${PIPELINED_CALLS}`);
    const pipelined = await pipelinedCalls(actor);
    log(`  rounds/s: ${pipelined.map((x) => Math.round(x)).join(', ')}`);
    await cluster.killActor(actor.actorId);

    log(`actor creation: ${POOL_SIZE} at once from a warm pool`);
    const creations = await actorCreations(local, cluster);
    // The pool refills in the background after the creations; let it finish so spawning hosts
    // do not share the CPU with the head during the placement group run.
    await local.agents[0].warm();
    log(`grpc-js unary to the child: ${PG_SECONDS} s, ${PG_IN_FLIGHT} in flight`);
    const unary = await baselines.unary(PG_SECONDS, PG_IN_FLIGHT);
    log(`  calls/s: ${Math.round(unary)}`);
    await baselines.close();
    log(`grpc-js unary in this process (as the embedded head): ${PG_SECONDS} s, ${PG_IN_FLIGHT} in flight`);
    const unaryInProcess = await inProcessUnaryRate(PG_SECONDS, PG_IN_FLIGHT);
    log(`  calls/s: ${Math.round(unaryInProcess)}`);
    log(`placement groups: create+remove for ${PG_SECONDS} s, ${PG_IN_FLIGHT} in flight`);
    const pgs = await placementGroups(cluster);
    log(`  create+remove/s: ${Math.round(pgs)}`);

    const syncPerSec = median(sync.sync);
    const grpcPerSec = median(sync.grpc);
    const http2PerSec = median(sync.http2);
    const pipelinedPerSec = median(pipelined);
    const syncVsGrpc = sync.vsGrpc;
    const pgCeiling = unary / 2;
    return {
      bench: 'actors',
      syncCallsPerSec: sig(syncPerSec),
      grpcPingPongPerSec: sig(grpcPerSec),
      syncVsGrpc: round(syncVsGrpc, 2),
      http2PingPongPerSec: sig(http2PerSec),
      syncVsHttp2: round(sync.vsHttp2, 2),
      pipelinedCallsPerSec: sig(pipelinedPerSec),
      actorCreationsPerSec: sig(creations),
      schedulingSeconds: round(scheduling.seconds, 3),
      schedulingActors: scheduling.actors,
      schedulingNodes: scheduling.nodes,
      placementGroupCreateRemovePerSec: sig(pgs),
      grpcUnaryPerSec: sig(unary),
      placementGroupCeilingPerSec: sig(pgCeiling),
      placementGroupVsCeiling: round(pgs / pgCeiling, 2),
      grpcUnaryInProcessPerSec: sig(unaryInProcess),
      method: {
        syncAndGrpc: `${SYNC_ROUNDS} alternating rounds of ${SYNC_CALLS} round trips after a warm-up; rates are medians, syncVsGrpc the median of per-pair ratios`,
        pipelined: `median of ${ROUNDS} rounds of ${PIPELINED_CALLS} calls issued at once`,
        actorCreations: `${POOL_SIZE} actors created concurrently from a warm pool of ${POOL_SIZE}`,
        http2PingPong: `bare node:http2 between two processes: one POST stream, the child echoes every DATA chunk, 10-byte write then wait for its echo; measured in the same alternating rounds as syncAndGrpc; syncVsHttp2 the median of per-round ratios`,
        placementGroups: `1-bundle {numCpus: 0.01} PACK groups, create then remove, ${PG_IN_FLIGHT} in flight for ${PG_SECONDS} s`,
        grpcUnary: `bare grpc-js unary calls (identity Buffer serializers, 4-byte payload) to a child process, ${PG_IN_FLIGHT} in flight for ${PG_SECONDS} s, just before the placement groups; placementGroupCeilingPerSec = grpcUnaryPerSec / 2 (two RPCs per create+remove)`,
        grpcUnaryInProcess: `the same unary calls with the server inside the bench process, as the embedded head is; informational`,
      },
      targets: {
        syncCallsPerSec: met('syncCallsPerSec', syncPerSec),
        syncVsGrpc: met('syncVsGrpc', syncVsGrpc),
        pipelinedCallsPerSec: met('pipelinedCallsPerSec', pipelinedPerSec),
        actorCreationsPerSec: met('actorCreationsPerSec', creations),
        schedulingSeconds: met('schedulingSeconds', scheduling.seconds),
        placementGroupCreateRemovePerSec: met('placementGroupCreateRemovePerSec', pgs),
      },
      machine: { cpus: cpus().length, node: process.version },
    };
  } finally {
    log('stopping the cluster');
    await baselines.close();
    await cluster?.close();
    await local?.stop();
  }
}
