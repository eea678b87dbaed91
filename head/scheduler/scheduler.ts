/**
 * The head's scheduler: which node (and which GPUs) an actor or a placement-group bundle gets.
 * Pure bookkeeping, deterministic for a given sequence of calls; see `types.ts` for the
 * contract. A request is infeasible (thrown at once) when no node could hold it even if the
 * cluster were idle, busy (returned) when it could but not now. With no nodes at all the answer
 * is busy: a worker may still be registering.
 */
import { ConfigError } from '../../common/errors.js';
import {
  PLACEMENT_STRATEGIES,
  type PlacementStrategy,
  type ResourceRequest,
} from '../../common/resources.js';
import { chooseGpus, fractionDevice, hasWholeFree } from './gpu-allocator.js';
import { type BundleAsk, reserveBundles } from './group-placement.js';
import { type GroupPlanAsk, type GroupsPlan, planGroups } from './group-plan.js';
import { type GroupState, newBundle, placeInGroup, toBundleView } from './group-state.js';
import { actorInfeasible, groupInfeasible } from './infeasible.js';
import { type CompiledSelector, compileLabelSelector } from './label-selector.js';
import { NodeResources } from './node-resources.js';
import type {
  ActorDemand,
  ActorPlacement,
  Attempt,
  BundlePlacement,
  BundleView,
  GroupDemand,
  NodeCapacity,
  NodeView,
  ResourceTotals,
  SchedulerOptions,
} from './types.js';
import {
  addInto,
  fitsIn,
  isZero,
  subtractFrom,
  toKeyedRecord,
  toUnitVector,
  UNIT,
  type UnitVector,
  zeroVector,
} from './units.js';

const BUSY = { ok: false, reason: 'busy' } as const;

export class Scheduler {
  private readonly nodes = new Map<string, NodeResources>();
  /** Registration order; the final tie-breaker everywhere. */
  private nodeList: NodeResources[] = [];
  private nextOrder = 0;
  private gpulessNodes = 0;
  private roundRobin = 0;
  private readonly groups = new Map<string, GroupState>();
  private readonly spreadThreshold: number;
  private readonly avoidGpuNodes: boolean;

  constructor(options: SchedulerOptions = {}) {
    this.spreadThreshold = options.spreadThreshold ?? 0.5;
    this.avoidGpuNodes = options.avoidGpuNodes ?? true;
  }

  // ---- nodes ----

  addNode(capacity: NodeCapacity): void {
    if (this.nodes.has(capacity.nodeId)) {
      throw new ConfigError(
        `node ${capacity.nodeId} is already registered; remove it before adding it again`,
        {
          fields: { nodeId: capacity.nodeId },
        },
      );
    }
    const node = NodeResources.fromCapacity(capacity, this.nextOrder++);
    this.nodes.set(node.nodeId, node);
    this.nodeList.push(node);
    if (!node.hasGpus) this.gpulessNodes++;
  }

  /**
   * Forgets the node and everything allocated on it. Bundles that were there become lost (see
   * `rescheduleLostBundles`). Returns the ids of the placement groups that lost bundles.
   */
  removeNode(nodeId: string): string[] {
    const node = this.nodes.get(nodeId);
    if (node === undefined) return [];
    this.nodes.delete(nodeId);
    this.nodeList = this.nodeList.filter((n) => n !== node);
    if (!node.hasGpus) this.gpulessNodes--;
    const affected: string[] = [];
    for (const group of this.groups.values()) {
      let lost = false;
      for (let i = 0; i < group.bundles.length; i++) {
        if (group.bundles[i].node !== node) continue;
        group.bundles[i] = newBundle(i, group.bundles[i].request, group.bundles[i].need, undefined, []);
        lost = true;
      }
      if (lost) affected.push(group.id);
    }
    return affected;
  }

  hasNode(nodeId: string): boolean {
    return this.nodes.has(nodeId);
  }

  nodeView(nodeId: string): NodeView | undefined {
    return this.nodes.get(nodeId)?.view();
  }

  totals(): ResourceTotals {
    const total = zeroVector();
    const free = zeroVector();
    for (const node of this.nodeList) {
      addInto(total, node.total);
      // An over-committed restore leaves negative availability; used is capped at the total.
      addInto(free, {
        cpu: Math.max(0, node.avail.cpu),
        gpu: Math.max(0, node.avail.gpu),
        mem: Math.max(0, node.avail.mem),
        custom: new Map([...node.avail.custom].map(([k, v]) => [k, Math.max(0, v)])),
      });
    }
    const used = { ...total, custom: new Map(total.custom) };
    subtractFrom(used, free);
    return { total: toKeyedRecord(total), used: toKeyedRecord(used) };
  }

  // ---- actors ----

  placeActor(demand: ActorDemand): Attempt<ActorPlacement> {
    const need = toUnitVector(demand.resources, demand.what);
    if (demand.placementGroupId) return this.placeActorInGroup(demand, need);
    const selector = compileLabelSelector(demand.labelSelector);
    if (this.nodeList.length === 0) return BUSY;
    if (isZero(need)) return this.placeRoundRobin(demand, need, selector);
    return this.placeByScore(demand, need, selector);
  }

  /**
   * Ray's DEFAULT (hybrid) policy, deterministic: a node's score is 0 while its utilization
   * after placement (the highest used/total over the kinds the actor asks for) stays below the
   * spread threshold, else that utilization; lowest score wins, ties go to the earliest node.
   * So nodes fill to half before work spreads, then the least loaded wins. Two preferences
   * rank above the score: a fractional GPU request goes where it packs onto an already shared
   * GPU (whole GPUs stay whole), and CPU-only work stays off GPU nodes while a GPU-less node
   * has room (Ray's `scheduler_avoid_gpu_nodes`).
   */
  private placeByScore(
    demand: ActorDemand,
    need: UnitVector,
    selector: CompiledSelector,
  ): Attempt<ActorPlacement> {
    const fractional = need.gpu > 0 && need.gpu < UNIT;
    const avoid = this.avoidGpuNodes && need.gpu === 0;
    // The best rank any node can reach; reaching it ends the scan early.
    const floor = avoid && this.gpulessNodes === 0 ? 4 : 0;
    const wholeGpus = need.gpu >= UNIT ? need.gpu / UNIT : 0;
    let best: NodeResources | undefined;
    let bestRank = Number.POSITIVE_INFINITY;
    let feasible = false;
    for (const node of this.nodeList) {
      if (!selector.empty && !selector.matches(node.labels)) continue;
      if (!fitsIn(need, node.total)) continue;
      feasible = true;
      if (!fitsIn(need, node.avail)) continue;
      let packs = false;
      if (fractional) {
        const device = fractionDevice(node.gpus, need.gpu);
        if (device < 0) continue;
        packs = node.gpus.free[device] < node.gpus.capacity[device];
      } else if (wholeGpus > 0 && !hasWholeFree(node.gpus, wholeGpus)) {
        continue;
      }
      const penalty = (avoid && node.hasGpus ? 4 : 0) + (fractional && !packs ? 2 : 0);
      if (penalty >= bestRank) continue;
      const util = node.utilizationAfter(need);
      const rank = penalty + (util < this.spreadThreshold ? 0 : util);
      if (rank < bestRank) {
        best = node;
        bestRank = rank;
        if (rank <= floor) break;
      }
    }
    if (best !== undefined) {
      const picks = chooseGpus(best.gpus, need.gpu)!;
      return { ok: true, placement: { nodeId: best.nodeId, gpus: best.take(need, picks) } };
    }
    if (!feasible) throw this.actorInfeasible(demand, need, selector);
    return BUSY;
  }

  /** Ray places resource-less actors at random; we rotate through the nodes, which is as even and repeatable. */
  private placeRoundRobin(
    demand: ActorDemand,
    need: UnitVector,
    selector: CompiledSelector,
  ): Attempt<ActorPlacement> {
    const n = this.nodeList.length;
    for (let k = 0; k < n; k++) {
      const i = (this.roundRobin + k) % n;
      const node = this.nodeList[i];
      if (!selector.matches(node.labels)) continue;
      this.roundRobin = (i + 1) % n;
      return { ok: true, placement: { nodeId: node.nodeId, gpus: [] } };
    }
    throw this.actorInfeasible(demand, need, selector);
  }

  private actorInfeasible(demand: ActorDemand, need: UnitVector, selector: CompiledSelector) {
    const matching = this.nodeList.filter((n) => selector.matches(n.labels));
    return actorInfeasible(demand.what, need, this.nodeList, matching, selector);
  }

  private placeActorInGroup(demand: ActorDemand, need: UnitVector): Attempt<ActorPlacement> {
    if (Object.keys(demand.labelSelector ?? {}).length > 0) {
      throw new ConfigError(
        `${demand.what}: labelSelector cannot be combined with a placement group; the group decides the node`,
        { fields: { placementGroupId: demand.placementGroupId } },
      );
    }
    return placeInGroup(this.group(demand.placementGroupId!, demand.what), demand, need);
  }

  /** Returns an actor's resources to its node or to its bundle. Unknown nodes, groups and stale bundles are ignored. */
  releaseActor(placement: ActorPlacement, resources: ResourceRequest): void {
    const need = toUnitVector(resources, 'released actor');
    const bundle = this.bundleOf(placement);
    if (placement.placementGroupId) bundle?.ledger.give(need, placement.gpus);
    else this.nodes.get(placement.nodeId)?.give(need, placement.gpus);
  }

  /**
   * Re-applies an allocation the store knows of (after a head restart), without checks: an
   * over-commit is recorded as negative availability, so nothing new lands there until enough
   * is released. Call after `addNode` and `restoreGroup`.
   */
  restoreActor(placement: ActorPlacement, resources: ResourceRequest): void {
    const need = toUnitVector(resources, 'restored actor');
    const bundle = this.bundleOf(placement);
    if (placement.placementGroupId) bundle?.ledger.debit(need, placement.gpus);
    else this.nodes.get(placement.nodeId)?.debit(need, placement.gpus);
  }

  private bundleOf(placement: ActorPlacement) {
    if (!placement.placementGroupId) return undefined;
    const bundle = this.groups.get(placement.placementGroupId)?.bundles[placement.bundleIndex ?? -1];
    // A bundle that was rescheduled elsewhere no longer holds this actor's share.
    return bundle?.node?.nodeId === placement.nodeId ? bundle : undefined;
  }

  // ---- placement groups ----

  placeGroup(demand: GroupDemand): Attempt<BundlePlacement[]> {
    const { placementGroupId: id, what, strategy } = demand;
    if (this.groups.has(id)) {
      throw new ConfigError(`${what}: placement group ${id} is already placed`, {
        fields: { placementGroupId: id },
      });
    }
    checkStrategy(strategy, what);
    if (demand.bundles.length === 0) {
      throw new ConfigError(`${what}: a placement group needs at least one bundle`, {
        fields: { placementGroupId: id },
      });
    }
    const asks = demand.bundles.map((r, index) => ({
      index,
      need: toUnitVector(r, `${what} bundle ${index}`),
    }));
    if (this.nodeList.length === 0) return BUSY;
    const result = reserveBundles(strategy, asks, this.nodeList);
    if (!result.ok) return this.busyOrInfeasible({ id, what, strategy }, asks, []);
    const bundles = result.reserved.map((r) =>
      newBundle(r.index, demand.bundles[r.index], asks[r.index].need, r.node, r.gpus),
    );
    this.groups.set(id, { id, what, strategy, bundles });
    return { ok: true, placement: bundles.map((b) => ({ nodeId: b.node!.nodeId, gpus: b.gpus })) };
  }

  /**
   * The dry run on an idle copy of the cluster (surviving bundles kept) tells "never" from
   * "not now". Only failed placements pay for it.
   */
  private busyOrInfeasible(
    group: Pick<GroupState, 'id' | 'what' | 'strategy'>,
    asks: readonly BundleAsk[],
    survivors: readonly { need: UnitVector; node: NodeResources; gpus: BundlePlacement['gpus'] }[],
  ): { ok: false; reason: 'busy' } {
    const clones = new Map(this.nodeList.map((n) => [n, n.emptyClone()]));
    for (const s of survivors) clones.get(s.node)?.debit(s.need, s.gpus);
    const cloneList = [...clones.values()];
    const occupied = survivors.map((s) => clones.get(s.node)!);
    const dryRun = reserveBundles(group.strategy, asks, cloneList, occupied);
    if (dryRun.ok) return BUSY;
    throw groupInfeasible({
      groupWhat: group.what,
      placementGroupId: group.id,
      strategy: group.strategy,
      asks,
      failedIndex: dryRun.failedIndex,
      nodes: cloneList,
      occupied: [...new Set(occupied)],
    });
  }

  /**
   * The dry run of `placeGroup` for several groups, placed one after another in the order
   * given: on what is free now, and on the same nodes idle. Reserves nothing.
   */
  planGroups(asks: readonly GroupPlanAsk[]): GroupsPlan {
    for (const ask of asks) {
      const what = `placement group ${ask.name}`;
      checkStrategy(ask.strategy, what);
      if (ask.bundles.length === 0) {
        throw new ConfigError(`${what}: a placement group needs at least one bundle`, {
          fields: { name: ask.name },
        });
      }
    }
    return planGroups(this.nodeList, asks);
  }

  /** Frees every bundle reservation. The head kills the group's actors itself. */
  releaseGroup(placementGroupId: string): boolean {
    const group = this.groups.get(placementGroupId);
    if (group === undefined) return false;
    for (const b of group.bundles) b.node?.give(b.need, b.gpus);
    this.groups.delete(placementGroupId);
    return true;
  }

  /**
   * Re-applies a reservation the store knows of (after a head restart), without checks. A
   * bundle whose node is unknown comes back lost, for `rescheduleLostBundles`. Restoring a
   * group that is already known replaces it.
   */
  restoreGroup(
    placementGroupId: string,
    strategy: PlacementStrategy,
    bundles: Array<{ resources: ResourceRequest; placement: BundlePlacement }>,
    what = `placement group ${placementGroupId}`,
  ): void {
    this.releaseGroup(placementGroupId);
    const states = bundles.map(({ resources, placement }, i) => {
      const need = toUnitVector(resources, `${what} bundle ${i}`);
      const node = this.nodes.get(placement.nodeId);
      node?.debit(need, placement.gpus);
      return newBundle(i, resources, need, node, node ? placement.gpus : []);
    });
    this.groups.set(placementGroupId, { id: placementGroupId, what, strategy, bundles: states });
  }

  /**
   * Re-places the bundles lost with their nodes, all or nothing, keeping the strategy against
   * the bundles that survived (STRICT_SPREAD avoids their nodes, PACK prefers them, STRICT_PACK
   * needs theirs). Throws InfeasibleError when the surviving cluster can never hold them; the
   * head may keep the group waiting for a new node. GPU rank order holds among the re-placed
   * bundles, not necessarily against the survivors.
   */
  rescheduleLostBundles(
    placementGroupId: string,
  ): Attempt<Array<{ bundleIndex: number; placement: BundlePlacement }>> {
    const group = this.group(placementGroupId, `rescheduling placement group ${placementGroupId}`);
    const lost = group.bundles.filter((b) => b.node === undefined);
    if (lost.length === 0) return { ok: true, placement: [] };
    if (this.nodeList.length === 0) return BUSY;
    const asks = lost.map((b) => ({ index: b.index, need: b.need }));
    const survivors = group.bundles.flatMap((b) =>
      b.node ? [{ need: b.need, node: b.node, gpus: b.gpus }] : [],
    );
    const result = reserveBundles(
      group.strategy,
      asks,
      this.nodeList,
      survivors.map((s) => s.node),
    );
    if (!result.ok) return this.busyOrInfeasible(group, asks, survivors);
    const placed = result.reserved.map((r) => {
      const old = group.bundles[r.index];
      group.bundles[r.index] = newBundle(r.index, old.request, old.need, r.node, r.gpus);
      return { bundleIndex: r.index, placement: { nodeId: r.node.nodeId, gpus: r.gpus } };
    });
    return { ok: true, placement: placed };
  }

  /** The group's bundles in index order; `placement` is null for a bundle lost with its node. */
  groupBundles(placementGroupId: string): BundleView[] | undefined {
    return this.groups.get(placementGroupId)?.bundles.map(toBundleView);
  }

  private group(placementGroupId: string, what: string): GroupState {
    const group = this.groups.get(placementGroupId);
    if (group === undefined) {
      throw new ConfigError(`${what}: placement group ${placementGroupId} does not exist or was removed`, {
        fields: { placementGroupId },
      });
    }
    return group;
  }
}

function checkStrategy(strategy: string, what: string): void {
  if (!PLACEMENT_STRATEGIES.includes(strategy as PlacementStrategy)) {
    throw new ConfigError(
      `${what}: unknown placement strategy "${strategy}"; use ${PLACEMENT_STRATEGIES.join(', ')}`,
      {
        fields: { strategy },
      },
    );
  }
}
