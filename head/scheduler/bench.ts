/**
 * Scheduler throughput: 10,000 actors with mixed requests over 250 nodes, scheduler only (no
 * RPCs). The requests fit the cluster, so every one must be placed; a busy answer here is a
 * scheduling bug, not a slow run.
 */
import { performance } from 'node:perf_hooks';
import type { LabelSelector, ResourceRequest } from '../../common/resources.js';
import { Scheduler } from './scheduler.js';

const NODES = 250;
const ACTORS = 10_000;
const ZONES = ['a', 'b', 'c'];

function request(numCpus: number, numGpus = 0, memoryMb = 0): ResourceRequest {
  return { numCpus, numGpus, memoryMb, custom: {} };
}

/** A mix like an RL job's: env workers (CPU), rollout/judge shares (fractions), trainers (whole GPUs). */
function demandAt(i: number): { resources: ResourceRequest; labelSelector: LabelSelector } {
  switch (i % 10) {
    case 0:
    case 1:
    case 2:
    case 3:
      return { resources: request(0.5), labelSelector: {} };
    case 4:
    case 5:
    case 6:
      return { resources: request(0.25, 0.25), labelSelector: {} };
    case 7:
      return { resources: request(1, 1), labelSelector: {} };
    case 8:
      return { resources: request(1, 0, 2048), labelSelector: { zone: 'in(a,b)' } };
    default:
      return { resources: request(0.5, 0.125), labelSelector: { zone: '!c' } };
  }
}

export async function benchScheduling(): Promise<{
  actors: number;
  nodes: number;
  seconds: number;
  actorsPerSecond: number;
}> {
  const scheduler = new Scheduler();
  for (let n = 0; n < NODES; n++) {
    scheduler.addNode({
      nodeId: `node_${n}`,
      address: `10.0.${Math.floor(n / 256)}.${n % 256}:7001`,
      resources: { numCpus: 32, numGpus: 8, memoryMb: 262_144, custom: {} },
      gpuIds: [0, 1, 2, 3, 4, 5, 6, 7],
      labels: { zone: ZONES[n % ZONES.length] },
    });
  }
  const demands = Array.from({ length: ACTORS }, (_, i) => ({
    what: `actor bench (actor_${i})`,
    ...demandAt(i),
  }));
  const start = performance.now();
  let placed = 0;
  for (const demand of demands) if (scheduler.placeActor(demand).ok) placed++;
  const seconds = (performance.now() - start) / 1000;
  if (placed !== ACTORS)
    throw new Error(`scheduler bench placed ${placed} of ${ACTORS} actors; all should fit`);
  return { actors: ACTORS, nodes: NODES, seconds, actorsPerSecond: ACTORS / seconds };
}
