/**
 * Where a placement group's bundles go, per strategy. Every function here reserves for real on
 * the nodes it is given and rolls everything back when any bundle does not fit, so a group is
 * all-or-nothing. Run on empty clones of the nodes, the same code answers "could this ever fit".
 *
 * Bundles are taken in bundle order, node by node, and whole GPUs go lowest id first, so
 * bundles sharing a node get ascending GPU ids: bundle 0 the lowest (rank order).
 */
import type { GpuShare, PlacementStrategy } from '../../common/resources.js';
import type { NodeResources } from './node-resources.js';
import { fitsIn, sumVectors, type UnitVector, vectorsEqual } from './units.js';

export interface BundleAsk {
  index: number;
  need: UnitVector;
}

export interface Reserved {
  index: number;
  node: NodeResources;
  gpus: GpuShare[];
}

export type PlanResult = { ok: true; reserved: Reserved[] } | { ok: false; failedIndex: number };

class Tentative {
  readonly reserved: Reserved[] = [];
  private readonly needs: UnitVector[] = [];

  take(ask: BundleAsk, node: NodeResources): boolean {
    const gpus = node.tryTake(ask.need);
    if (gpus === undefined) return false;
    this.reserved.push({ index: ask.index, node, gpus });
    this.needs.push(ask.need);
    return true;
  }

  rollback(): void {
    for (let i = this.reserved.length - 1; i >= 0; i--) {
      this.reserved[i].node.give(this.needs[i], this.reserved[i].gpus);
    }
    this.reserved.length = 0;
    this.needs.length = 0;
  }
}

function unique(nodes: readonly NodeResources[]): NodeResources[] {
  return [...new Set(nodes)];
}

/** Everything on the first node of `candidates` that holds all of it now. */
function allOnOneNode(
  asks: readonly BundleAsk[],
  candidates: readonly NodeResources[],
): Reserved[] | undefined {
  const sum = sumVectors(asks.map((a) => a.need));
  for (const node of candidates) {
    if (!fitsIn(sum, node.avail)) continue;
    const t = new Tentative();
    if (asks.every((ask) => t.take(ask, node))) return t.reserved;
    t.rollback();
  }
  return undefined;
}

function strictPack(
  asks: readonly BundleAsk[],
  nodes: readonly NodeResources[],
  occupied: readonly NodeResources[],
) {
  // Surviving bundles pin the group's one node.
  const reserved = allOnOneNode(asks, occupied.length > 0 ? [occupied[0]] : nodes);
  return reserved ? ok(reserved) : fail(asks[0].index);
}

/** One node if any holds everything; else fill the nodes already used, then new ones in order. */
function pack(
  asks: readonly BundleAsk[],
  nodes: readonly NodeResources[],
  occupied: readonly NodeResources[],
) {
  const oneNode = allOnOneNode(asks, occupied.length === 0 ? nodes : unique([...occupied, ...nodes]));
  if (oneNode) return ok(oneNode);
  const used = unique(occupied);
  const t = new Tentative();
  for (const ask of asks) {
    let placed = used.some((node) => t.take(ask, node));
    if (!placed) {
      for (const node of nodes) {
        if (used.includes(node) || !t.take(ask, node)) continue;
        used.push(node);
        placed = true;
        break;
      }
    }
    if (!placed) {
      t.rollback();
      return fail(ask.index);
    }
  }
  return ok(t.reserved);
}

/** The node holding the fewest of this group's bundles, then the least loaded after placement. */
function spread(
  asks: readonly BundleAsk[],
  nodes: readonly NodeResources[],
  occupied: readonly NodeResources[],
) {
  const counts = new Map<NodeResources, number>();
  for (const node of occupied) counts.set(node, (counts.get(node) ?? 0) + 1);
  const t = new Tentative();
  const spreadOut = sameNeeds(asks)
    ? leastLoaded(asks[0].need, nodes, new Set(occupied), asks.length)
    : undefined;
  if (spreadOut && asks.every((ask, i) => t.take(ask, spreadOut[i]))) return ok(t.reserved);
  t.rollback();
  for (const ask of asks) {
    let best: NodeResources | undefined;
    let bestCount = 0;
    let bestUtil = 0;
    for (const node of nodes) {
      const count = counts.size === 0 ? 0 : (counts.get(node) ?? 0);
      if (best !== undefined && count > bestCount) continue;
      if (!node.fitsNow(ask.need)) continue;
      const util = node.utilizationAfter(ask.need);
      if (best === undefined || count < bestCount || (count === bestCount && util < bestUtil)) {
        best = node;
        bestCount = count;
        bestUtil = util;
      }
    }
    if (best === undefined || !t.take(ask, best)) {
      t.rollback();
      return fail(ask.index);
    }
    counts.set(best, bestCount + 1);
  }
  return ok(t.reserved);
}

/**
 * One bundle per node, none on nodes the group already holds. Each node takes a single bundle,
 * so "bundle b fits node n now" is independent per pair and this is bipartite matching: greedy
 * first (least loaded node), then augmenting paths when greedy strands a bundle.
 */
function strictSpread(
  asks: readonly BundleAsk[],
  nodes: readonly NodeResources[],
  occupied: readonly NodeResources[],
) {
  const excluded = new Set(occupied);
  const free = nodes.filter((n) => !excluded.has(n));
  const fast = sameNeeds(asks)
    ? leastLoaded(asks[0].need, free, new Set(), asks.length)
    : greedySpread(asks, free);
  const assigned = fast ?? matchSpread(asks, free);
  if (!Array.isArray(assigned)) return fail(assigned.failedIndex);
  const t = new Tentative();
  for (let i = 0; i < asks.length; i++) {
    if (!t.take(asks[i], assigned[i])) {
      t.rollback();
      return fail(asks[i].index);
    }
  }
  return ok(t.reserved);
}

function sameNeeds(asks: readonly BundleAsk[]): boolean {
  return asks.every((a) => vectorsEqual(a.need, asks[0].need));
}

/**
 * The `k` least loaded nodes (after placing `need`, ties to the earliest) that hold `need` now,
 * or undefined when fewer do. For identical bundles this is what one scan per bundle would pick,
 * since taking a bundle changes only the load of the node it lands on, in one scan instead of k.
 */
function leastLoaded(
  need: UnitVector,
  nodes: readonly NodeResources[],
  excluded: ReadonlySet<NodeResources>,
  k: number,
): NodeResources[] | undefined {
  const best: NodeResources[] = [];
  const utils: number[] = [];
  for (const node of nodes) {
    if (excluded.size > 0 && excluded.has(node)) continue;
    if (!node.fitsNow(need)) continue;
    const util = node.utilizationAfter(need);
    if (best.length === k && util >= utils[k - 1]) continue;
    let i = Math.min(best.length, k - 1);
    while (i > 0 && utils[i - 1] > util) {
      best[i] = best[i - 1];
      utils[i] = utils[i - 1];
      i--;
    }
    best[i] = node;
    utils[i] = util;
  }
  return best.length === k ? best : undefined;
}

function greedySpread(
  asks: readonly BundleAsk[],
  nodes: readonly NodeResources[],
): NodeResources[] | undefined {
  const taken = new Set<NodeResources>();
  const out: NodeResources[] = [];
  for (const ask of asks) {
    let best: NodeResources | undefined;
    let bestUtil = 0;
    for (const node of nodes) {
      if (taken.has(node) || !node.fitsNow(ask.need)) continue;
      const util = node.utilizationAfter(ask.need);
      if (best === undefined || util < bestUtil) {
        best = node;
        bestUtil = util;
      }
    }
    if (best === undefined) return undefined;
    taken.add(best);
    out.push(best);
  }
  return out;
}

function matchSpread(
  asks: readonly BundleAsk[],
  nodes: readonly NodeResources[],
): NodeResources[] | { failedIndex: number } {
  const candidates = asks.map((ask) => nodes.filter((n) => n.fitsNow(ask.need)));
  const owner = new Map<NodeResources, number>();
  const assigned: NodeResources[] = [];
  const augment = (b: number, seen: Set<NodeResources>): boolean => {
    for (const node of candidates[b]) {
      if (seen.has(node)) continue;
      seen.add(node);
      const holder = owner.get(node);
      if (holder === undefined || augment(holder, seen)) {
        owner.set(node, b);
        assigned[b] = node;
        return true;
      }
    }
    return false;
  };
  for (let b = 0; b < asks.length; b++) {
    if (!augment(b, new Set())) return { failedIndex: asks[b].index };
  }
  return assigned;
}

function ok(reserved: Reserved[]): PlanResult {
  return { ok: true, reserved: [...reserved].sort((a, b) => a.index - b.index) };
}

function fail(failedIndex: number): PlanResult {
  return { ok: false, failedIndex };
}

/**
 * Reserves `asks` on `nodes` per `strategy`, or nothing. `occupied` lists the nodes of the
 * group's bundles that stay put (when rescheduling lost bundles), which the strategy respects.
 */
export function reserveBundles(
  strategy: PlacementStrategy,
  asks: readonly BundleAsk[],
  nodes: readonly NodeResources[],
  occupied: readonly NodeResources[] = [],
): PlanResult {
  switch (strategy) {
    case 'STRICT_PACK':
      return strictPack(asks, nodes, occupied);
    case 'PACK':
      return pack(asks, nodes, occupied);
    case 'SPREAD':
      return spread(asks, nodes, occupied);
    case 'STRICT_SPREAD':
      return strictSpread(asks, nodes, occupied);
  }
}
