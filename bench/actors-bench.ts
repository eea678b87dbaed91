/**
 * `npm run bench -- actors`: the actor runtime against the design's targets (DESIGN.md §7).
 * Sync and pipelined 1:1 calls, warm-pool actor creation, scheduler throughput and placement
 * group create/remove, with a bare grpc-js ping-pong measured in the same run as the baseline.
 */
import { cpus } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { ActorHandle } from '../actors/runtime/actor-handle.js';
import { Cluster } from '../actors/runtime/cluster.js';
import { packageRoot } from '../common/package-root.js';
import { benchScheduling } from '../head/scheduler/bench.js';
import { LocalCluster } from '../local/local-cluster.js';
import { GrpcPingPong, median } from './grpc-baseline.js';

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
 * Sync actor calls and the grpc-js ping-pong, in alternating rounds so that both see the same
 * load on the machine; the ratio is the median of the per-pair ratios.
 */
async function syncCallsAgainstGrpc(
  actor: ActorHandle<BenchActor>,
  grpc: GrpcPingPong,
): Promise<{ sync: number[]; grpc: number[]; ratio: number }> {
  for (let i = 0; i < SYNC_WARMUP; i++) await actor.call('inc', 1);
  await grpc.round(SYNC_WARMUP);
  const sync: number[] = [];
  const baseline: number[] = [];
  for (let r = 0; r < SYNC_ROUNDS; r++) {
    baseline.push(await grpc.round(SYNC_CALLS));
    const start = performance.now();
    for (let i = 0; i < SYNC_CALLS; i++) await actor.call('inc', 1);
    sync.push(SYNC_CALLS / ((performance.now() - start) / 1000));
  }
  return { sync, grpc: baseline, ratio: median(sync.map((x, i) => x / baseline[i])) };
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

  log('starting the grpc-js echo server (baseline)');
  const grpc = await GrpcPingPong.start();
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
    log(`sync calls vs grpc-js ping-pong: ${SYNC_ROUNDS} alternating rounds of ${SYNC_CALLS}`);
    const sync = await syncCallsAgainstGrpc(actor, grpc);
    log(`  grpc rounds/s: ${sync.grpc.map((x) => Math.round(x)).join(', ')}`);
    log(`  sync rounds/s: ${sync.sync.map((x) => Math.round(x)).join(', ')}`);
    await grpc.close();
    log(`pipelined calls: ${ROUNDS} x ${PIPELINED_CALLS}`);
    const pipelined = await pipelinedCalls(actor);
    log(`  rounds/s: ${pipelined.map((x) => Math.round(x)).join(', ')}`);
    await cluster.killActor(actor.actorId);

    log(`actor creation: ${POOL_SIZE} at once from a warm pool`);
    const creations = await actorCreations(local, cluster);
    // The pool refills in the background after the creations; let it finish so spawning hosts
    // do not share the CPU with the head during the placement group run.
    await local.agents[0].warm();
    log(`placement groups: create+remove for ${PG_SECONDS} s, ${PG_IN_FLIGHT} in flight`);
    const pgs = await placementGroups(cluster);

    const syncPerSec = median(sync.sync);
    const grpcPerSec = median(sync.grpc);
    const pipelinedPerSec = median(pipelined);
    const syncVsGrpc = sync.ratio;
    return {
      bench: 'actors',
      syncCallsPerSec: sig(syncPerSec),
      grpcPingPongPerSec: sig(grpcPerSec),
      syncVsGrpc: round(syncVsGrpc, 2),
      pipelinedCallsPerSec: sig(pipelinedPerSec),
      actorCreationsPerSec: sig(creations),
      schedulingSeconds: round(scheduling.seconds, 3),
      schedulingActors: scheduling.actors,
      schedulingNodes: scheduling.nodes,
      placementGroupCreateRemovePerSec: sig(pgs),
      method: {
        syncAndGrpc: `${SYNC_ROUNDS} alternating rounds of ${SYNC_CALLS} round trips after a warm-up; rates are medians, syncVsGrpc the median of per-pair ratios`,
        pipelined: `median of ${ROUNDS} rounds of ${PIPELINED_CALLS} calls issued at once`,
        actorCreations: `${POOL_SIZE} actors created concurrently from a warm pool of ${POOL_SIZE}`,
        placementGroups: `1-bundle {numCpus: 0.01} PACK groups, create then remove, ${PG_IN_FLIGHT} in flight for ${PG_SECONDS} s`,
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
    await grpc.close();
    await cluster?.close();
    await local?.stop();
  }
}
