/**
 * The messages of requests that can never be placed. They name the resource that is short and
 * the largest place that could have held it, because "infeasible" alone sends users digging.
 */
import { type ErrorFields, InfeasibleError, ResourcesBusyError } from '../../common/errors.js';
import type { PlacementStrategy } from '../../common/resources.js';
import type { CompiledSelector } from './label-selector.js';
import {
  amountOf,
  CPU,
  describeVector,
  formatAmount,
  fromUnits,
  GPU,
  kindsOf,
  sumVectors,
  type UnitVector,
} from './units.js';

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** Something that holds resources and has a name in messages: a node or a bundle. */
export interface Holder {
  id: string;
  /** `node_x (127.0.0.1:7001)` or `bundle 2`. */
  title: string;
  total: UnitVector;
  canEverHold(need: UnitVector): boolean;
}

interface Shortfall {
  kind: string;
  requested: number;
  holder: Holder;
  amount: number;
  /** True when every kind fits somewhere but no single holder has all of them. */
  together: boolean;
}

function largestFor(kind: string, holders: readonly Holder[]): { holder: Holder; amount: number } {
  let best = holders[0];
  for (const h of holders) if (amountOf(h.total, kind) > amountOf(best.total, kind)) best = h;
  return { holder: best, amount: amountOf(best.total, kind) };
}

/** Why none of `holders` (non-empty) can ever hold `need`. */
function findShortfall(need: UnitVector, holders: readonly Holder[]): Shortfall {
  const kinds = kindsOf(need);
  for (const kind of kinds) {
    const { holder, amount } = largestFor(kind, holders);
    if (amountOf(need, kind) > amount) {
      return { kind, requested: amountOf(need, kind), holder, amount, together: false };
    }
  }
  // Each kind fits somewhere, just not all on one holder: name the holder missing the fewest.
  let closest = holders[0];
  let closestShort = Number.POSITIVE_INFINITY;
  let closestKind = kinds[0] ?? GPU;
  for (const h of holders) {
    const short = kinds.filter((k) => amountOf(need, k) > amountOf(h.total, k));
    // A GPU request can also fail on per-device rules with enough GPU in total.
    const shortKinds = short.length > 0 ? short : need.gpu > 0 ? [GPU] : [];
    if (shortKinds.length > 0 && shortKinds.length < closestShort) {
      closest = h;
      closestShort = shortKinds.length;
      closestKind = shortKinds[0];
    }
  }
  return {
    kind: closestKind,
    requested: amountOf(need, closestKind),
    holder: closest,
    amount: amountOf(closest.total, closestKind),
    together: true,
  };
}

function shortfallFields(s: Shortfall) {
  return {
    resource: s.kind,
    requested: fromUnits(s.requested),
    largestNodeId: s.holder.id,
    largestAmount: fromUnits(s.amount),
  };
}

const NEVER_ON_NODES = 'no node in the cluster can ever run it';

/** `what` can run on no node: labels match none, or no matching node is big enough. */
export function actorInfeasible(
  what: string,
  need: UnitVector,
  nodes: readonly Holder[],
  matching: readonly Holder[],
  selector: CompiledSelector,
): InfeasibleError {
  if (matching.length === 0) {
    return new InfeasibleError(
      `${what} needs a node matching labelSelector ${selector.text}, but none of the ` +
        `${plural(nodes.length, 'node')} has such labels; ${NEVER_ON_NODES}`,
      { fields: { resource: 'labelSelector', requested: selector.text } },
    );
  }
  const s = findShortfall(need, matching);
  const scope = selector.empty ? 'node' : `node matching labelSelector ${selector.text},`;
  const message = s.together
    ? `${what} needs ${describeVector(need)} on one node, but no ${selector.empty ? '' : 'matching '}node ` +
      `has all of it: the closest, ${s.holder.title}, has ${formatAmount(s.kind, s.amount)}; ${NEVER_ON_NODES}`
    : `${what} needs ${formatAmount(s.kind, s.requested)}, but the largest ${scope} ${s.holder.title}` +
      `${selector.empty ? '' : ','} has ${formatAmount(s.kind, s.amount)}; ${NEVER_ON_NODES}`;
  const noGpus = s.kind === GPU && nodes.every((n) => n.total.gpu === 0);
  return new InfeasibleError(noGpus ? `${message}. ${NO_GPUS_FIX}` : message, {
    fields: shortfallFields(s),
  });
}

/**
 * What to do when an actor asks for a GPU of a cluster that has none: the embedded cluster of
 * a machine without GPUs is where a first script meets it.
 */
const NO_GPUS_FIX =
  'The cluster has no GPUs: run on one that declares some (`clawray start --local --gpus-per-worker 1` ' +
  'starts one on this machine, no GPU needed to try it), or remove numGpus';

/** An actor of a placement group asks more than its bundle (or every bundle) reserves. */
export function bundleActorInfeasible(
  what: string,
  need: UnitVector,
  groupWhat: string,
  placementGroupId: string,
  bundles: readonly (Holder & { index: number })[],
  anyBundle: boolean,
): InfeasibleError {
  const s = findShortfall(need, bundles);
  const bundle = s.holder as Holder & { index: number };
  const fields = {
    resource: s.kind,
    requested: fromUnits(s.requested),
    placementGroupId,
    bundleIndex: bundle.index,
    bundleAmount: fromUnits(s.amount),
  };
  let message: string;
  if (!anyBundle) {
    message =
      `${what} needs ${formatAmount(s.kind, s.requested)}, but bundle ${bundle.index} of ${groupWhat} reserves ` +
      `${formatAmount(s.kind, s.amount)}; it can never run there`;
  } else if (s.together) {
    message =
      `${what} needs ${describeVector(need)} in one bundle, but no bundle of ${groupWhat} reserves all of it ` +
      `(bundle ${bundle.index} has ${formatAmount(s.kind, s.amount)}); no bundle of the group can ever run it`;
  } else {
    message =
      `${what} needs ${formatAmount(s.kind, s.requested)}, but the largest bundle of ${groupWhat}, ` +
      `bundle ${bundle.index}, reserves ${formatAmount(s.kind, s.amount)}; no bundle of the group can ever run it`;
  }
  return new InfeasibleError(message, { fields });
}

export interface GroupFailure {
  groupWhat: string;
  placementGroupId: string;
  strategy: PlacementStrategy;
  /** The bundles that were being placed (all of them, or the lost ones when rescheduling). */
  asks: readonly { index: number; need: UnitVector }[];
  /** The first bundle the dry run on an empty cluster could not place. */
  failedIndex: number;
  nodes: readonly Holder[];
  /** The nodes of the group's bundles that stay where they are (when rescheduling). */
  occupied: readonly Holder[];
}

const NEVER_GROUP = 'it can never be placed';

/** A group that does not fit even an empty cluster: say which bundle, resource and node. */
export function groupInfeasible(f: GroupFailure): InfeasibleError {
  const base = { placementGroupId: f.placementGroupId, strategy: f.strategy };
  const label = `${f.strategy} ${f.groupWhat}`;
  for (const ask of f.asks) {
    if (f.nodes.some((n) => n.canEverHold(ask.need))) continue;
    const s = findShortfall(ask.need, f.nodes);
    const message = s.together
      ? `${label}: bundle ${ask.index} needs ${describeVector(ask.need)} on one node, but no node has all of it: ` +
        `the closest, ${s.holder.title}, has ${formatAmount(s.kind, s.amount)}; ${NEVER_GROUP}`
      : `${label}: bundle ${ask.index} needs ${formatAmount(s.kind, s.requested)}, but the largest node ` +
        `${s.holder.title} has ${formatAmount(s.kind, s.amount)}; ${NEVER_GROUP}`;
    return new InfeasibleError(message, {
      fields: { ...base, bundleIndex: ask.index, ...shortfallFields(s), limit: 'bundle' },
    });
  }
  if (f.strategy === 'STRICT_PACK') {
    const sum = sumVectors(f.asks.map((a) => a.need));
    const s = findShortfall(sum, f.nodes);
    const message = s.together
      ? `${label} needs ${describeVector(sum)} on one node for its ${f.asks.length} bundles, but no node has ` +
        `all of it: the closest, ${s.holder.title}, has ${formatAmount(s.kind, s.amount)}; ${NEVER_GROUP}`
      : `${label} needs ${formatAmount(s.kind, s.requested)} on one node for its ${f.asks.length} bundles, ` +
        `but the largest node ${s.holder.title} has ${formatAmount(s.kind, s.amount)}; ${NEVER_GROUP}`;
    return new InfeasibleError(message, {
      fields: { ...base, bundleIndex: f.failedIndex, ...shortfallFields(s), limit: 'strictPack' },
    });
  }
  if (f.strategy === 'STRICT_SPREAD') {
    const free = f.nodes.filter((n) => !f.occupied.includes(n));
    const holders = free.filter((n) => f.asks.some((a) => n.canEverHold(a.need))).length;
    const others =
      f.occupied.length > 0
        ? ` other than the ${plural(f.occupied.length, 'node')} its other bundles hold`
        : '';
    const message =
      `${label} needs ${plural(f.asks.length, 'distinct node')}${others}, one per bundle, but only ${holders} of ` +
      `the ${plural(free.length, 'such node')} can hold one of its bundles and bundle ${f.failedIndex} is left ` +
      `without a node; ${NEVER_GROUP}`;
    return new InfeasibleError(message, {
      fields: {
        ...base,
        bundleIndex: f.failedIndex,
        resource: 'nodes',
        requested: f.asks.length,
        largestAmount: holders,
        limit: 'strictSpread',
      },
    });
  }
  // PACK/SPREAD: every bundle fits some node, but not all of them together.
  const failed = f.asks.find((a) => a.index === f.failedIndex) ?? f.asks[0];
  const kind = failed.need.gpu > 0 ? GPU : (kindsOf(failed.need)[0] ?? CPU);
  const { holder, amount } = largestFor(kind, f.nodes);
  const message =
    `${label}: bundle ${failed.index} needs ${formatAmount(kind, amountOf(failed.need, kind))}, but the ` +
    `cluster cannot hold all ${f.asks.length}${f.occupied.length > 0 ? ' lost' : ''} bundles at once (the largest node ${holder.title} has ` +
    `${formatAmount(kind, amount)}); ${NEVER_GROUP}`;
  const s: Shortfall = { kind, requested: amountOf(failed.need, kind), holder, amount, together: true };
  return new InfeasibleError(message, {
    fields: { ...base, bundleIndex: failed.index, ...shortfallFields(s), limit: 'group' },
  });
}

/** A planned group and where it failed, as the planner (`group-plan.ts`) saw it. */
export interface PlannedGroupFailure {
  /** `STRICT_PACK placement group job-trainer`. */
  label: string;
  /** All the group's bundles, and the one that found no room. */
  asks: readonly { index: number; need: UnitVector }[];
  failed: { index: number; need: UnitVector };
  /** The groups planned before this one, which hold their share of the nodes. */
  before: readonly string[];
  /** The nodes as they were left when this group failed (free amounts as `total`). */
  left: readonly (Holder & { gpuRoom(need: number): number })[];
}

/**
 * The kind the failed bundle is short of (GPU when it asks for any: per-device rules bind
 * most often), what the whole group needs of it, what the nodes have left in all, and the
 * most one node could give the bundle.
 */
function shortage(f: PlannedGroupFailure) {
  const need = f.failed.need;
  const kind =
    need.gpu > 0
      ? GPU
      : (kindsOf(need).find((k) => f.left.every((h) => amountOf(h.total, k) < amountOf(need, k))) ??
        kindsOf(need)[0] ??
        CPU);
  const room = (h: PlannedGroupFailure['left'][number]) =>
    kind === GPU ? h.gpuRoom(need.gpu) : Math.max(0, amountOf(h.total, kind));
  let holder = f.left[0];
  let most = holder ? room(holder) : 0;
  for (const h of f.left) {
    if (room(h) > most) {
      holder = h;
      most = room(h);
    }
  }
  const groupNeed = f.asks.reduce((sum, a) => sum + amountOf(a.need, kind), 0);
  const left = f.left.reduce((sum, h) => sum + Math.max(0, amountOf(h.total, kind)), 0);
  return { kind, groupNeed, left, holder, most };
}

function shortageMessage(f: PlannedGroupFailure, now: boolean): { message: string; fields: ErrorFields } {
  const s = shortage(f);
  const after = f.before.length === 0 ? '' : ` after ${f.before.join(', ')}`;
  const needs =
    f.asks.length === 1
      ? `needs ${formatAmount(s.kind, s.groupNeed)}`
      : `needs ${formatAmount(s.kind, s.groupNeed)} for its ${plural(f.asks.length, 'bundle')} (bundle ${f.failed.index} found no room)`;
  const most = s.holder
    ? `, at most ${formatAmount(s.kind, s.most)} for one bundle on ${s.holder.title}`
    : '';
  const message = `${f.label} ${needs}, but${after} the nodes have ${formatAmount(s.kind, s.left)}${now ? ' free now' : ' left'}${most}`;
  return {
    message,
    fields: {
      bundleIndex: f.failed.index,
      resource: s.kind,
      requested: fromUnits(s.groupNeed),
      largestNodeId: s.holder?.id,
      largestAmount: fromUnits(s.most),
    },
  };
}

/**
 * Each group fits an idle cluster alone, but not after the groups planned before it: the
 * cluster is too small for all of them at once.
 */
export function groupsTogetherInfeasible(f: PlannedGroupFailure): InfeasibleError {
  const { message, fields } = shortageMessage(f, false);
  return new InfeasibleError(
    `${message}; each group fits the cluster alone, but they can never all be placed together`,
    { fields: { ...fields, limit: 'together' } },
  );
}

/** A group that fits the cluster's totals but not what is free now: it would wait. */
export function groupBusy(f: PlannedGroupFailure): ResourcesBusyError {
  const { message, fields } = shortageMessage(f, true);
  return new ResourcesBusyError(
    `${message}; it fits the cluster when idle, so it would wait for resources to be freed`,
    {
      fields: { ...fields, limit: 'busy' },
    },
  );
}
