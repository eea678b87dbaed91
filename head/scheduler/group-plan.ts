/**
 * The dry run of placement groups: would these groups be placed, one after another in the
 * order given, on what is free now, and could they ever be, on the same nodes idle? It runs
 * `reserveBundles` — the code the head places groups with — on clones of the nodes, so its
 * answer is what creating the groups in that order would do (while nothing else changes), and
 * it reserves nothing. Jobs ask it before they create their groups one at a time, so that a
 * job that could never hold all of its groups is refused instead of holding some and waiting
 * for the rest.
 */
import type { ClawrayError } from '../../common/errors.js';
import { InfeasibleError } from '../../common/errors.js';
import type { PlacementStrategy, ResourceRequest } from '../../common/resources.js';
import { type BundleAsk, reserveBundles } from './group-placement.js';
import { groupBusy, groupInfeasible, groupsTogetherInfeasible, type Holder } from './infeasible.js';
import type { NodeResources } from './node-resources.js';
import type { BundlePlacement } from './types.js';
import { toUnitVector, UNIT, type UnitVector } from './units.js';

export interface GroupPlanAsk {
  /** Names the group in answers and errors (`placement group <name>`). */
  name: string;
  strategy: PlacementStrategy;
  bundles: ResourceRequest[];
}

export interface GroupPlan {
  name: string;
  /** Where each bundle would go, in bundle order; undefined when the group was not placed. */
  placement?: BundlePlacement[];
  /**
   * Why it was not placed: an InfeasibleError (never, `fields.limit` says which rule), or a
   * ResourcesBusyError (not with what is free now). Groups after the first failure of an
   * in-order plan have neither placement nor error: they were not tried.
   */
  error?: ClawrayError;
}

export interface PlacementPlan {
  /** Every group was placed. */
  fits: boolean;
  /** One per asked group, in the order asked. */
  groups: GroupPlan[];
}

export interface GroupsPlan {
  /** On what is free now. */
  now: PlacementPlan;
  /** On the same nodes with nothing allocated: false means never, whatever frees up. */
  ever: PlacementPlan;
}

interface Compiled {
  name: string;
  label: string;
  strategy: PlacementStrategy;
  asks: BundleAsk[];
}

/** Plans `asks` on `nodes` (the scheduler's live nodes, which are only cloned). */
export function planGroups(nodes: readonly NodeResources[], asks: readonly GroupPlanAsk[]): GroupsPlan {
  const groups = asks.map(compile);
  const ever = planEver(nodes, groups);
  const now = planInOrder(
    nodes.map((n) => n.currentClone()),
    groups,
    (_g, i, failure) => ever.groups[i].error ?? groupBusy(failure),
  );
  // Placing in order is greedy, so in a rare state the busy cluster takes a path the idle one
  // does not; a placement found now is one on the idle cluster too.
  return { now, ever: now.fits && !ever.fits ? now : ever };
}

function compile(ask: GroupPlanAsk): Compiled {
  const what = `placement group ${ask.name}`;
  return {
    name: ask.name,
    label: `${ask.strategy} ${what}`,
    strategy: ask.strategy,
    asks: ask.bundles.map((r, index) => ({ index, need: toUnitVector(r, `${what} bundle ${index}`) })),
  };
}

/**
 * Every group that can never fit alone gets its own error (the same one creating it would
 * throw); when each fits alone, they are placed in order on one idle copy of the cluster.
 */
function planEver(nodes: readonly NodeResources[], groups: readonly Compiled[]): PlacementPlan {
  if (nodes.length === 0) {
    return {
      fits: false,
      groups: groups.map((g) => ({
        name: g.name,
        error: new InfeasibleError(`${g.label}: the cluster has no nodes (no worker has registered)`, {
          fields: { resource: 'nodes', requested: 1, largestAmount: 0, limit: 'nodes' },
        }),
      })),
    };
  }
  const alone = groups.map((g): GroupPlan => {
    const clones = nodes.map((n) => n.emptyClone());
    const result = reserveBundles(g.strategy, g.asks, clones);
    if (result.ok) return { name: g.name };
    return {
      name: g.name,
      error: groupInfeasible({
        groupWhat: `placement group ${g.name}`,
        placementGroupId: '',
        strategy: g.strategy,
        asks: g.asks,
        failedIndex: result.failedIndex,
        nodes: clones,
        occupied: [],
      }),
    };
  });
  if (alone.some((g) => g.error)) return { fits: false, groups: alone };
  return planInOrder(
    nodes.map((n) => n.emptyClone()),
    groups,
    (_g, _i, failure) => groupsTogetherInfeasible(failure),
  );
}

/** Places the groups one after another on `clones`; the first that fails ends the plan. */
function planInOrder(
  clones: readonly NodeResources[],
  groups: readonly Compiled[],
  explain: (g: Compiled, i: number, failure: Parameters<typeof groupBusy>[0]) => ClawrayError,
): PlacementPlan {
  const out: GroupPlan[] = groups.map((g) => ({ name: g.name }));
  for (const [i, g] of groups.entries()) {
    const result = clones.length === 0 ? undefined : reserveBundles(g.strategy, g.asks, clones);
    if (result?.ok) {
      out[i].placement = result.reserved.map((r) => ({ nodeId: r.node.nodeId, gpus: r.gpus }));
      continue;
    }
    const failedIndex = result ? result.failedIndex : 0;
    out[i].error = explain(g, i, {
      label: g.label,
      asks: g.asks,
      failed: g.asks.find((a) => a.index === failedIndex) ?? g.asks[0],
      before: groups.slice(0, i).map((x) => `placement group ${x.name}`),
      left: clones.map(leftHolder),
    });
    return { fits: false, groups: out };
  }
  return { fits: true, groups: out };
}

/** A node as it was left by the groups before, for messages: `total` is what is free. */
function leftHolder(node: NodeResources): Holder & { gpuRoom(need: number): number } {
  return {
    id: node.id,
    title: node.title,
    total: node.avail,
    canEverHold: (need: UnitVector) => node.fitsNow(need),
    // What a GPU request of `need` units could get on one node: a fraction sits on one
    // device, whole GPUs take devices that are entirely free.
    gpuRoom: (need: number) => {
      const { capacity, free } = node.gpus;
      if (need < UNIT) return Math.max(0, ...free);
      return free.filter((f, d) => capacity[d] >= UNIT && f === capacity[d]).length * UNIT;
    },
  };
}
