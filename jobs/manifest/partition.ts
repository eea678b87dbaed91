/**
 * The GPU partition of a job: `spec.resources` as placement groups, checked against the whole
 * cluster before anything is reserved.
 *
 * One placement group per role (rollout, judge, trainer, env) rather than OpenClaw-RL's single
 * PACK group sliced `actor | critic | rollout | prm`:
 * - bundle i of a role's group is rank i of that role, so trainer shard ranks get GPU ids in
 *   rank order without slicing a shared bundle list;
 * - removing a group kills only its actors, so the driver can restart or rescale one role
 *   (say the rollout engines) without tearing down the trainer;
 * - each role has its own strategy: STRICT_PACK keeps an all-reducing trainer on one node's
 *   loopback, SPREAD keeps rollout engines apart.
 * The cost is that groups are reserved one at a time, so a job could hold some and wait for
 * the rest; `planPartition` therefore proves that all groups fit the cluster *together*
 * before the driver creates any of them.
 *
 * Feasibility is checked against every node, not one (OpenClaw-RL's sum check is single-node
 * only): a fraction of a GPU must sit on one GPU, a whole GPU is never shared with a fraction,
 * and a bundle never spans nodes. Bundles are packed best-fit-decreasing in two orders, and
 * when both miss, by an exact backtracking search with a step budget: bin packing is NP-hard,
 * so a job too large for the budget that greedy cannot place is reported as not fitting, but
 * every plan returned is a real placement.
 */
import type { NodeView } from '../../actors/runtime/views.js';
import { ConfigError } from '../../common/errors.js';
import type { GpuShare, PlacementStrategy } from '../../common/resources.js';
import { manifestLocation } from './load.js';
import type { RLJobManifest } from './schema.js';

/** A node as `Cluster.status()` reports it (`total` keyed `CPU`, `GPU`, `memory_mb`, …). */
export type ClusterNode = Pick<NodeView, 'nodeId' | 'total'> &
  Partial<Pick<NodeView, 'available' | 'gpusAvailable'>>;

export const ROLES = ['rollout', 'judge', 'trainer', 'env'] as const;
export type Role = (typeof ROLES)[number];

/** One bundle, in the form `Cluster.createPlacementGroup({ bundles })` takes. */
export interface BundleSpec {
  numCpus: number;
  numGpus: number;
  memoryMb: number;
}

export interface PlannedGroup {
  role: Role;
  /** `<metadata.name>-<role>`. */
  name: string;
  strategy: PlacementStrategy;
  bundles: BundleSpec[];
}

/** Where a bundle could go: one witness that the plan fits (the head still decides). */
export interface BundleAssignment {
  role: Role;
  bundleIndex: number;
  nodeId: string;
  gpus: GpuShare[];
}

export interface PartitionPlan {
  groups: PlannedGroup[];
  assignments: BundleAssignment[];
  /** What the job reserves in total and what the cluster has. */
  need: { GPU: number; CPU: number; memoryMb: number };
  cluster: { GPU: number; CPU: number; memoryMb: number };
}

export interface PlanOptions {
  /** Check against nodes' totals (can the job ever run?) or what is free now. Default total. */
  against?: 'total' | 'available';
}

/** Resources in 1/10000 units, Ray's precision, so sums of fractions are exact. */
const UNIT = 10_000;
const units = (x: number) => Math.round(x * UNIT);
const fromUnits = (u: number) => u / UNIT;

interface Bundle {
  role: Role;
  index: number;
  gpu: number;
  cpu: number;
  mem: number;
}

interface NodeState {
  id: string;
  cpu: number;
  /** MiB; Infinity when the node does not report memory. */
  mem: number;
  gpuIds: number[];
  /** Free units per device; UNIT is a whole free GPU. */
  free: number[];
}

const COUNT_NOUN: Record<Role, [string, string]> = {
  rollout: ['replica', 'replicas'],
  judge: ['replica', 'replicas'],
  trainer: ['shard', 'shards'],
  env: ['replica', 'replicas'],
};

const fmt = (x: number) => String(Number(x.toFixed(4)));
const plural = (n: number, [one, many]: [string, string]) => `${fmt(n)} ${n === 1 ? one : many}`;
const gpuWord = (g: number) => `${fmt(g)} GPU${g > 1 ? 's' : ''}`;

function roleBundles(manifest: RLJobManifest): { group: PlannedGroup; bundles: Bundle[] }[] {
  const r = manifest.spec.resources;
  const roles: {
    role: Role;
    count: number;
    gpus: number;
    cpus: number;
    memoryMb: number;
    strategy: PlacementStrategy;
  }[] = [
    { role: 'rollout', count: r.rollout.replicas, ...r.rollout },
    { role: 'judge', count: r.judge.replicas, ...r.judge },
    { role: 'trainer', count: r.trainer.shards, ...r.trainer },
  ];
  // Personal jobs take their samples from live sessions: no env pool to place.
  if (manifest.spec.env) roles.push({ role: 'env', count: r.env.replicas, gpus: 0, ...r.env });
  return roles.map(({ role, count, gpus, cpus, memoryMb, strategy }) => {
    const spec: BundleSpec = { numCpus: cpus, numGpus: gpus, memoryMb };
    const bundles = Array.from({ length: count }, (_, index) => ({
      role,
      index,
      gpu: units(gpus),
      cpu: units(cpus),
      mem: memoryMb,
    }));
    return {
      group: {
        role,
        name: `${manifest.metadata.name}-${role}`,
        strategy,
        bundles: bundles.map(() => ({ ...spec })),
      },
      bundles,
    };
  });
}

function nodeStates(cluster: readonly ClusterNode[], against: 'total' | 'available'): NodeState[] {
  return cluster.map((n) => {
    const res = against === 'available' && n.available ? n.available : n.total;
    const devices = Math.max(0, Math.floor(n.total.GPU ?? 0));
    let gpuIds = Array.from({ length: devices }, (_, i) => i);
    let free = gpuIds.map(() => UNIT);
    if (against === 'available') {
      if (n.gpusAvailable) {
        gpuIds = n.gpusAvailable.map((g) => g.gpuId);
        free = n.gpusAvailable.map((g) => units(g.fraction));
      } else {
        // Without per-device shares, free GPU is read as whole devices first, then one partial.
        let left = units(res.GPU ?? 0);
        free = gpuIds.map(() => {
          const take = Math.min(UNIT, Math.max(0, left));
          left -= take;
          return take;
        });
      }
    }
    const mem = res.memory_mb;
    return {
      id: n.nodeId,
      cpu: units(res.CPU ?? 0),
      mem: mem === undefined || mem <= 0 ? Number.POSITIVE_INFINITY : mem,
      gpuIds,
      free,
    };
  });
}

const cloneNodes = (nodes: readonly NodeState[]) => nodes.map((n) => ({ ...n, free: [...n.free] }));

/** The devices `b` would take on `node` (best fit), or undefined when it does not fit there. */
function devicesOn(node: NodeState, b: Bundle): number[] | undefined {
  if (b.cpu > node.cpu || b.mem > node.mem) return undefined;
  if (b.gpu === 0) return [];
  if (b.gpu < UNIT) {
    let best = -1;
    for (let i = 0; i < node.free.length; i++) {
      if (node.free[i] >= b.gpu && (best < 0 || node.free[i] < node.free[best])) best = i;
    }
    return best < 0 ? undefined : [best];
  }
  const whole = b.gpu / UNIT;
  const picks: number[] = [];
  for (let i = 0; i < node.free.length && picks.length < whole; i++) if (node.free[i] === UNIT) picks.push(i);
  return picks.length === whole ? picks : undefined;
}

function take(node: NodeState, b: Bundle, devices: number[]): BundleAssignment {
  node.cpu -= b.cpu;
  node.mem -= b.mem;
  const each = Math.min(b.gpu, UNIT);
  for (const d of devices) node.free[d] -= each;
  return {
    role: b.role,
    bundleIndex: b.index,
    nodeId: node.id,
    gpus: devices.map((d) => ({ gpuId: node.gpuIds[d], fraction: fromUnits(each) })),
  };
}

/** How tightly `b` fills `node`: lower is tighter (best fit keeps big holes for big bundles). */
function slack(node: NodeState, b: Bundle, devices: number[]): number {
  if (b.gpu === 0) return node.cpu - b.cpu;
  if (b.gpu < UNIT) return (node.free[devices[0]] - b.gpu) * 1e6 + (node.cpu - b.cpu);
  return node.free.filter((f) => f === UNIT).length * 1e9 + (node.cpu - b.cpu);
}

/** Places one bundle on the best-fitting allowed node; undefined when none has room. */
function placeOne(
  nodes: NodeState[],
  b: Bundle,
  allowed: (n: NodeState) => boolean,
): BundleAssignment | undefined {
  let best: { node: NodeState; devices: number[]; slack: number } | undefined;
  for (const node of nodes) {
    if (!allowed(node)) continue;
    const devices = devicesOn(node, b);
    if (!devices) continue;
    const s = slack(node, b, devices);
    if (!best || s < best.slack) best = { node, devices, slack: s };
  }
  return best && take(best.node, b, best.devices);
}

interface Item {
  strategy: PlacementStrategy;
  bundles: Bundle[];
}

/** Places every item or reports the first bundle that found no room. */
function pack(
  nodes: readonly NodeState[],
  items: readonly Item[],
): { ok: true; assignments: BundleAssignment[] } | { ok: false; placed: number; failed: Bundle } {
  const state = cloneNodes(nodes);
  const assignments: BundleAssignment[] = [];
  for (const item of items) {
    if (item.strategy === 'STRICT_PACK') {
      let done = false;
      for (const home of state) {
        const trial = cloneNodes([home]);
        const got = item.bundles.map((b) => placeOne(trial, b, () => true));
        if (got.every((a) => a !== undefined)) {
          Object.assign(home, trial[0]);
          assignments.push(...(got as BundleAssignment[]));
          done = true;
          break;
        }
      }
      if (!done) return { ok: false, placed: assignments.length, failed: item.bundles[0] };
      continue;
    }
    const used = new Set<string>();
    for (const b of item.bundles) {
      const spread = item.strategy === 'STRICT_SPREAD';
      const a = placeOne(state, b, (n) => !spread || !used.has(n.id));
      if (!a) return { ok: false, placed: assignments.length, failed: b };
      used.add(a.nodeId);
      assignments.push(a);
    }
  }
  return { ok: true, assignments };
}

/** STRICT_PACK groups stay whole; every other bundle is its own item, largest first. */
function itemsOf(groups: readonly { group: PlannedGroup; bundles: Bundle[] }[], by: 'gpu' | 'cpu'): Item[] {
  const items: Item[] = [];
  for (const { group, bundles } of groups) {
    if (bundles.length === 0) continue;
    if (group.strategy === 'STRICT_PACK' || group.strategy === 'STRICT_SPREAD') {
      items.push({ strategy: group.strategy, bundles });
    } else {
      for (const b of bundles) items.push({ strategy: group.strategy, bundles: [b] });
    }
  }
  const size = (i: Item) => {
    const gpu = i.bundles.reduce((s, b) => s + b.gpu, 0);
    const cpu = i.bundles.reduce((s, b) => s + b.cpu, 0);
    return by === 'gpu' ? [gpu, cpu] : [cpu, gpu];
  };
  return items
    .map((item, order) => ({ item, order, size: size(item) }))
    .sort((a, b) => b.size[0] - a.size[0] || b.size[1] - a.size[1] || a.order - b.order)
    .map(({ item }) => item);
}

/** Backtracking steps before the exact search gives up (it is only reached when greedy fails). */
const SEARCH_BUDGET = 10_000;

/**
 * Exact search for a placement, for the cases greedy packing misses (a CPU-tight node taking
 * the GPU bundle another node needed). Identical bundles of one role take non-decreasing nodes,
 * nodes in the same state are tried once, and a fraction tries one device per distinct free
 * amount, so symmetric placements are not revisited. Gives up (undefined) after SEARCH_BUDGET
 * steps.
 */
function search(
  nodes: readonly NodeState[],
  groups: readonly { group: PlannedGroup; bundles: Bundle[] }[],
): BundleAssignment[] | undefined {
  const strategyOf = new Map(groups.map((g) => [g.group.role, g.group.strategy]));
  const bundles = groups
    .flatMap((g) => g.bundles)
    .sort(
      (a, b) =>
        b.gpu - a.gpu || b.cpu - a.cpu || b.mem - a.mem || a.role.localeCompare(b.role) || a.index - b.index,
    );
  // No two bundles over half a GPU share one, so each takes a device of its own.
  const big = bundles.reduce((s, b) => s + (b.gpu > UNIT / 2 ? Math.ceil(b.gpu / UNIT) : 0), 0);
  const roomy = nodes.reduce((s, n) => s + n.free.filter((f) => f > UNIT / 2).length, 0);
  if (big > roomy) return undefined;
  const state = cloneNodes(nodes);
  const signatureOf = (n: NodeState) => `${n.cpu}|${n.mem}|${[...n.free].sort((x, y) => x - y).join(',')}`;
  const signatures = state.map(signatureOf);
  const placed: BundleAssignment[] = [];
  const nodesOfRole = new Map<Role, Map<number, number>>();
  let steps = 0;
  const rec = (i: number, prevNode: number): boolean | undefined => {
    if (i === bundles.length) return true;
    if (++steps > SEARCH_BUDGET) return undefined;
    const b = bundles[i];
    const prev = bundles[i - 1];
    const same =
      prev && prev.role === b.role && prev.gpu === b.gpu && prev.cpu === b.cpu && prev.mem === b.mem;
    const strategy = strategyOf.get(b.role);
    const used = nodesOfRole.get(b.role) ?? new Map<number, number>();
    nodesOfRole.set(b.role, used);
    // Nodes in the same state are interchangeable for this bundle: try one of them.
    const tried = new Set<string>();
    for (let n = same ? prevNode : 0; n < state.length; n++) {
      if (strategy === 'STRICT_PACK' && used.size > 0 && !used.has(n)) continue;
      if (strategy === 'STRICT_SPREAD' && used.has(n)) continue;
      const node = state[n];
      if (b.cpu > node.cpu || b.mem > node.mem) continue;
      const signature = `${used.get(n) ?? 0}|${signatures[n]}`;
      if (tried.has(signature)) continue;
      tried.add(signature);
      for (const devices of deviceOptions(node, b)) {
        const before = signatures[n];
        placed.push(take(node, b, devices));
        signatures[n] = signatureOf(node);
        used.set(n, (used.get(n) ?? 0) + 1);
        const result = rec(i + 1, n);
        if (result !== false) return result;
        placed.pop();
        give(node, b, devices);
        signatures[n] = before;
        const left = used.get(n)! - 1;
        if (left === 0) used.delete(n);
        else used.set(n, left);
      }
    }
    return false;
  };
  return rec(0, 0) ? placed : undefined;
}

/** The device choices worth trying for `b` on `node` (the caller checked CPU and memory). */
function deviceOptions(node: NodeState, b: Bundle): number[][] {
  if (b.gpu === 0) return [[]];
  if (b.gpu >= UNIT) {
    const picks = devicesOn(node, b);
    return picks ? [picks] : [];
  }
  const seen = new Set<number>();
  return node.free
    .map((free, d) => ({ free, d }))
    .filter(({ free }) => free >= b.gpu)
    .sort((x, y) => x.free - y.free || x.d - y.d)
    .filter(({ free }) => !seen.has(free) && seen.add(free) !== undefined)
    .map(({ d }) => [d]);
}

function give(node: NodeState, b: Bundle, devices: number[]): void {
  node.cpu += b.cpu;
  node.mem += b.mem;
  const each = Math.min(b.gpu, UNIT);
  for (const d of devices) node.free[d] += each;
}

/** Greedy in two orders, then exact search; the failure reported is greedy's first. */
function tryPack(nodes: readonly NodeState[], groups: readonly { group: PlannedGroup; bundles: Bundle[] }[]) {
  const first = pack(nodes, itemsOf(groups, 'gpu'));
  if (first.ok) return first;
  const second = pack(nodes, itemsOf(groups, 'cpu'));
  if (second.ok) return second;
  const found = search(nodes, groups);
  return found ? ({ ok: true, assignments: found } as const) : first;
}

function describeNodes(nodes: readonly NodeState[], value: (n: NodeState) => string): string {
  if (nodes.length === 0) return 'no nodes';
  const shown = nodes.slice(0, 6).map((n) => `${n.id} ${value(n)}`);
  if (nodes.length > 6) shown.push(`… ${nodes.length - 6} more`);
  return shown.join(', ');
}

const nodeGpus = (n: NodeState) => fmt(fromUnits(n.free.reduce((s, f) => s + f, 0)));
const nodeCpus = (n: NodeState) => fmt(fromUnits(n.cpu));
const nodeMem = (n: NodeState) => (Number.isFinite(n.mem) ? `${fmt(n.mem)} MiB` : 'untracked');

interface Problem {
  path: string;
  message: string;
}

/** Why one role cannot be placed on an empty cluster, or undefined when it can. */
function roleProblem(nodes: NodeState[], group: PlannedGroup, bundles: Bundle[]): Problem | undefined {
  if (bundles.length === 0) return undefined;
  const base = `spec.resources.${group.role}`;
  const noun = COUNT_NOUN[group.role];
  const n = bundles.length;
  const b = bundles[0];
  const per = noun[0];
  const totalGpu = nodes.reduce((s, x) => s + x.free.reduce((a, f) => a + f, 0), 0);
  const totalCpu = nodes.reduce((s, x) => s + x.cpu, 0);
  const totalMem = nodes.reduce((s, x) => s + x.mem, 0);

  if (b.gpu > UNIT) {
    const largest = [...nodes].sort((x, y) => wholeFree(y) - wholeFree(x))[0];
    if (!largest || wholeFree(largest) < b.gpu / UNIT) {
      return {
        path: `${base}.gpus`,
        message: `${gpuWord(fromUnits(b.gpu))} per ${per} must sit on one node; the largest node has ${largest ? `${wholeFree(largest)} (${largest.id})` : 'none'}`,
      };
    }
  }
  if (b.gpu > 0 && b.gpu <= UNIT && !nodes.some((x) => x.free.some((f) => f >= b.gpu))) {
    return {
      path: `${base}.gpus`,
      message: `needs a GPU with ${gpuWord(fromUnits(b.gpu))} free for each ${per}; the cluster has none (${describeNodes(nodes, nodeGpus)})`,
    };
  }
  if (b.cpu > 0 && !nodes.some((x) => x.cpu >= b.cpu)) {
    return {
      path: `${base}.cpus`,
      message: `${fmt(fromUnits(b.cpu))} CPUs per ${per} must sit on one node; the largest has ${fmt(fromUnits(Math.max(0, ...nodes.map((x) => x.cpu))))} (${describeNodes(nodes, nodeCpus)})`,
    };
  }
  if (b.mem > 0 && !nodes.some((x) => x.mem >= b.mem)) {
    return {
      path: `${base}.memoryMb`,
      message: `${fmt(b.mem)} MiB per ${per} must sit on one node; the nodes have ${describeNodes(nodes, nodeMem)}`,
    };
  }
  if (!nodes.some((x) => devicesOn(x, b))) {
    return {
      path: base,
      message: `one ${per} needs ${gpuWord(fromUnits(b.gpu))}, ${fmt(fromUnits(b.cpu))} CPUs and ${fmt(b.mem)} MiB on one node; no node has all of them (${describeNodes(nodes, (x) => `${nodeGpus(x)} GPU/${nodeCpus(x)} CPU/${nodeMem(x)}`)})`,
    };
  }
  const times = (what: string, each: number, sum: number) =>
    `${plural(n, noun)} × ${what === 'GPU' ? gpuWord(each) : `${fmt(each)} ${what}`} need ${what === 'GPU' ? gpuWord(sum) : `${fmt(sum)} ${what}`}`;
  if (b.gpu * n > totalGpu) {
    return {
      path: base,
      message: `${times('GPU', fromUnits(b.gpu), fromUnits(b.gpu * n))}, the cluster has ${fmt(fromUnits(totalGpu))} (${describeNodes(nodes, nodeGpus)})`,
    };
  }
  if (b.cpu * n > totalCpu) {
    return {
      path: base,
      message: `${times('CPUs', fromUnits(b.cpu), fromUnits(b.cpu * n))}, the cluster has ${fmt(fromUnits(totalCpu))} (${describeNodes(nodes, nodeCpus)})`,
    };
  }
  if (b.mem * n > totalMem) {
    return {
      path: base,
      message: `${times('MiB', b.mem, b.mem * n)}, the cluster has ${fmt(totalMem)} MiB (${describeNodes(nodes, nodeMem)})`,
    };
  }
  const result = tryPack(nodes, [{ group, bundles }]);
  if (result.ok) return undefined;
  if (group.strategy === 'STRICT_PACK') {
    return {
      path: `${base}.strategy`,
      message: `STRICT_PACK puts all ${plural(n, noun)} (${gpuWord(fromUnits(b.gpu * n))}, ${fmt(fromUnits(b.cpu * n))} CPUs) on one node; no node has that much (${describeNodes(nodes, (x) => `${nodeGpus(x)} GPU/${nodeCpus(x)} CPU`)})`,
    };
  }
  const fits = greedyCount(nodes, bundles, group.strategy);
  if (group.strategy === 'STRICT_SPREAD' && n > nodes.length) {
    return {
      path: `${base}.strategy`,
      message: `STRICT_SPREAD puts each of the ${plural(n, noun)} on its own node; the cluster has ${nodes.length} node${nodes.length === 1 ? '' : 's'}`,
    };
  }
  const why =
    b.gpu > 0 && b.gpu < UNIT
      ? 'a fraction of a GPU cannot span GPUs'
      : b.gpu >= UNIT
        ? 'whole GPUs are never shared with fractions'
        : 'a bundle cannot span nodes';
  return {
    path: base,
    message: `${plural(n, noun)} × ${gpuWord(fromUnits(b.gpu))} do not fit: ${why}, so the cluster (${describeNodes(nodes, nodeGpus)}) holds only ${fits}`,
  };
}

function wholeFree(n: NodeState): number {
  return n.free.filter((f) => f === UNIT).length;
}

function greedyCount(nodes: readonly NodeState[], bundles: Bundle[], strategy: PlacementStrategy): number {
  const state = cloneNodes(nodes);
  const used = new Set<string>();
  let placed = 0;
  for (const b of bundles) {
    const a = placeOne(state, b, (n) => strategy !== 'STRICT_SPREAD' || !used.has(n.id));
    if (!a) break;
    used.add(a.nodeId);
    placed++;
  }
  return placed;
}

function jointProblem(
  nodes: NodeState[],
  groups: { group: PlannedGroup; bundles: Bundle[] }[],
  failed: Bundle,
  placed: number,
): Problem {
  const sum = (f: (b: Bundle) => number) =>
    groups.reduce((s, g) => s + g.bundles.reduce((a, b) => a + f(b), 0), 0);
  const totalGpu = nodes.reduce((s, x) => s + x.free.reduce((a, f) => a + f, 0), 0);
  const totalCpu = nodes.reduce((s, x) => s + x.cpu, 0);
  const parts = (f: (b: Bundle) => number, show: (x: number) => string) =>
    groups
      .filter((g) => g.bundles.length > 0 && f(g.bundles[0]) > 0)
      .map((g) => `${g.group.role} ${g.bundles.length} × ${show(f(g.bundles[0]))}`)
      .join(' + ');
  const needGpu = sum((b) => b.gpu);
  if (needGpu > totalGpu) {
    return {
      path: 'spec.resources',
      message: `the roles need ${gpuWord(fromUnits(needGpu))} together (${parts(
        (b) => b.gpu,
        (u) => fmt(fromUnits(u)),
      )}), the cluster has ${fmt(fromUnits(totalGpu))} (${describeNodes(nodes, nodeGpus)})`,
    };
  }
  const needCpu = sum((b) => b.cpu);
  if (needCpu > totalCpu) {
    return {
      path: 'spec.resources',
      message: `the roles need ${fmt(fromUnits(needCpu))} CPUs together (${parts(
        (b) => b.cpu,
        (u) => fmt(fromUnits(u)),
      )}), the cluster has ${fmt(fromUnits(totalCpu))} (${describeNodes(nodes, nodeCpus)})`,
    };
  }
  const all = groups.reduce((s, g) => s + g.bundles.length, 0);
  return {
    path: 'spec.resources',
    message: `each role fits alone and the totals fit (${gpuWord(fromUnits(needGpu))} of ${fmt(fromUnits(totalGpu))}), but not GPU by GPU: a fraction of a GPU cannot span GPUs and a whole GPU is never shared; ${placed} of ${all} bundles fit, then ${failed.role} ${COUNT_NOUN[failed.role][0]} ${failed.index} (${gpuWord(fromUnits(failed.gpu))}) found no room (${describeNodes(nodes, nodeGpus)})`,
  };
}

/**
 * Turns `spec.resources` into one placement group per role and proves they fit the cluster
 * together. Throws a ConfigError naming the field (with `file:line:col` when the manifest came
 * from `parseManifest`/`loadManifest`) when they cannot.
 */
export function planPartition(
  manifest: RLJobManifest,
  cluster: readonly ClusterNode[],
  options: PlanOptions = {},
): PartitionPlan {
  const nodes = nodeStates(cluster, options.against ?? 'total');
  const groups = roleBundles(manifest);
  const problems: Problem[] = [];
  for (const { group, bundles } of groups) {
    const p = roleProblem(nodes, group, bundles);
    if (p) problems.push(p);
  }
  let assignments: BundleAssignment[] = [];
  if (problems.length === 0) {
    const result = tryPack(nodes, groups);
    if (result.ok) assignments = result.assignments;
    else problems.push(jointProblem(nodes, groups, result.failed, result.placed));
  }
  if (problems.length > 0) throw partitionError(manifest, problems, options.against ?? 'total');

  const sumOver = (f: (b: BundleSpec) => number) =>
    groups.reduce((s, g) => s + g.group.bundles.reduce((a, b) => a + f(b), 0), 0);
  const clusterSum = (key: string) => cluster.reduce((s, n) => s + (n.total[key] ?? 0), 0);
  assignments.sort((a, b) => ROLES.indexOf(a.role) - ROLES.indexOf(b.role) || a.bundleIndex - b.bundleIndex);
  return {
    groups: groups.map((g) => g.group).filter((g) => g.bundles.length > 0),
    assignments,
    need: {
      GPU: Number(fmt(sumOver((b) => b.numGpus))),
      CPU: Number(fmt(sumOver((b) => b.numCpus))),
      memoryMb: sumOver((b) => b.memoryMb),
    },
    cluster: { GPU: clusterSum('GPU'), CPU: clusterSum('CPU'), memoryMb: clusterSum('memory_mb') },
  };
}

function partitionError(
  manifest: RLJobManifest,
  problems: Problem[],
  against: 'total' | 'available',
): ConfigError {
  const lines = problems.map((p) => {
    const where = manifestLocation(manifest, p.path.split('.'));
    return `${where ? `${where}: ` : ''}${p.path}: ${p.message}`;
  });
  const head = `job ${manifest.metadata.name} does not fit the cluster${against === 'available' ? ' as it is now' : ''}:`;
  return new ConfigError([head, ...lines.map((l) => `  ${l}`)].join('\n'), {
    fields: { job: manifest.metadata.name, field: problems[0].path, problems: problems.length },
  });
}
