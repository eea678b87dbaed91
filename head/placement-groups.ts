/**
 * Placement groups: bundles reserved all-or-nothing, waiting while the cluster is busy,
 * re-placed when a node holding some of their bundles is lost, and removed together with the
 * actors placed in them.
 */

import { AlreadyExistsError, ConfigError, NotFoundError, SchedulingTimeoutError } from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import {
  PLACEMENT_STRATEGIES,
  type PlacementStrategy,
  resourceRequestSchema,
  toResourceRequest,
} from '../common/resources.js';
import type * as m from '../proto/messages.js';
import { parseWith, resourcesFromWire, resourcesToWire } from '../runtime/index.js';
import type { PlacementGroupRecord } from './model.js';
import type { PendingQueue } from './pending-queue.js';
import type { Scheduler } from './scheduler/scheduler.js';
import type { BundlePlacement } from './scheduler/types.js';
import type { ClusterStore } from './store/types.js';

interface Waiter {
  resolve(record: PlacementGroupRecord): void;
  reject(err: Error): void;
}

const nameKey = (namespace: string, name: string) => `${namespace}\u0000${name}`;

export class PlacementGroups {
  private readonly groups = new Map<string, PlacementGroupRecord>();
  private readonly names = new Map<string, string>();
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly timeouts = new Map<string, NodeJS.Timeout>();
  /** Wall-clock time each group waiting for resources started waiting (for pending demands). */
  private readonly waitingSinceMs = new Map<string, number>();
  /** Groups being removed: a placement that was under way when removal began is not announced. */
  private readonly removing = new Set<string>();
  /** A non-detached group owned by a session was recorded (the owner registry watches it). */
  onOwned?: (ownerId: string) => void;

  constructor(
    private readonly store: ClusterStore,
    private readonly scheduler: Scheduler,
    private readonly pending: PendingQueue,
    private readonly logger: Logger,
    /** Kills the group's actors (no restart) when it is removed. */
    private readonly killActorsOf: (placementGroupId: string) => Promise<void>,
  ) {}

  state(placementGroupId: string): 'CREATED' | 'WAITING' | 'MISSING' {
    const g = this.groups.get(placementGroupId);
    if (!g || g.state === 'REMOVED') return 'MISSING';
    return g.state === 'CREATED' ? 'CREATED' : 'WAITING';
  }

  get(placementGroupId: string): PlacementGroupRecord {
    const g = this.groups.get(placementGroupId);
    if (!g)
      throw new NotFoundError(`no placement group ${placementGroupId}`, { fields: { placementGroupId } });
    return g;
  }

  getByName(name: string, namespace: string): PlacementGroupRecord {
    const id = this.names.get(nameKey(namespace, name));
    if (!id) throw new NotFoundError(`no placement group named '${name}' in namespace '${namespace}'`);
    return this.get(id);
  }

  list(): PlacementGroupRecord[] {
    return [...this.groups.values()];
  }

  async create(req: m.CreatePlacementGroupRequest__Output): Promise<PlacementGroupRecord> {
    const existing = this.groups.get(req.placementGroupId);
    if (existing) return this.settled(existing);
    if (!PLACEMENT_STRATEGIES.includes(req.strategy as PlacementStrategy)) {
      throw new ConfigError(
        `unknown placement strategy '${req.strategy}'; use one of ${PLACEMENT_STRATEGIES.join(', ')}`,
        {
          fields: { strategy: req.strategy },
        },
      );
    }
    if (req.bundles.length === 0) throw new ConfigError('a placement group needs at least one bundle');
    const namespace = req.namespace || 'default';
    if (req.name && this.names.has(nameKey(namespace, req.name))) {
      throw new AlreadyExistsError(
        `a placement group named '${req.name}' already exists in namespace '${namespace}'`,
        {
          fields: { name: req.name, namespace },
        },
      );
    }
    const bundles = req.bundles.map((b, i) => {
      const r = resourcesFromWire(b);
      return toResourceRequest(
        parseWith(
          resourceRequestSchema,
          { numCpus: r.numCpus, numGpus: r.numGpus, memoryMb: r.memoryMb, resources: r.custom },
          `bundle ${i} of placement group ${req.name || req.placementGroupId}`,
        ),
      );
    });
    const record: PlacementGroupRecord = {
      placementGroupId: req.placementGroupId,
      name: req.name,
      namespace,
      strategy: req.strategy as PlacementStrategy,
      bundles: bundles.map((resources) => ({ resources, nodeId: '', gpus: [] })),
      state: 'PENDING',
      jobId: req.jobId,
      createdAtMs: Date.now(),
      ...(req.ownerId ? { ownerId: req.ownerId } : {}),
      ...(req.ownerActorId ? { ownerActorId: req.ownerActorId, ownerIncarnation: req.ownerIncarnation } : {}),
      ...(req.detached ? { detached: true } : {}),
    };
    const attempt = this.scheduler.placeGroup({
      placementGroupId: record.placementGroupId,
      what: `placement group ${record.name || record.placementGroupId}`,
      strategy: record.strategy,
      bundles,
    });
    this.groups.set(record.placementGroupId, record);
    if (record.name) this.names.set(nameKey(namespace, record.name), record.placementGroupId);
    if (isSessionOwned(record)) this.onOwned?.(record.ownerId!);
    if (attempt.ok) {
      this.assign(record, attempt.placement);
      record.state = 'CREATED';
      await this.save(record);
      return record;
    }
    await this.save(record);
    const done = this.settled(record);
    this.enqueue(record, req.timeoutMs);
    return done;
  }

  async remove(placementGroupId: string): Promise<void> {
    const record = this.groups.get(placementGroupId);
    if (!record) return;
    this.withdraw(placementGroupId);
    await this.killActorsOf(placementGroupId);
    this.scheduler.releaseGroup(placementGroupId);
    this.groups.delete(placementGroupId);
    this.removing.delete(placementGroupId);
    if (record.name) this.names.delete(nameKey(record.namespace, record.name));
    await this.store.delete('placementGroups', placementGroupId);
    this.reject(
      record,
      new NotFoundError(`placement group ${record.name || placementGroupId} was removed while it waited`),
    );
    this.pending.kick();
  }

  /** Removes every placement group of a job (and so their actors); resolves with how many. */
  async removeJob(jobId: string): Promise<number> {
    if (!jobId) return 0;
    return this.removeAll(this.list().filter((g) => g.jobId === jobId));
  }

  /**
   * Removes the non-detached groups of an owner session that is gone; resolves with how many.
   * None of them is placed once this is called, even by resources the owner's own actors free
   * while they are killed (see removeAll).
   */
  async removeOwned(ownerId: string): Promise<number> {
    return this.removeAll(this.list().filter((g) => g.ownerId === ownerId && isSessionOwned(g)));
  }

  /** Removes the non-detached groups created by an incarnation of an actor that ended. */
  async removeOwnedByActor(actorId: string, incarnation: number): Promise<number> {
    return this.removeAll(
      this.list().filter(
        (g) => g.ownerActorId === actorId && !g.detached && (g.ownerIncarnation ?? 0) <= incarnation,
      ),
    );
  }

  /**
   * Removes the groups one by one, after taking every one of them off the queue at once: one
   * that still waited must not be placed (and reported created) by the resources that removing
   * the others, or killing their owner's actors, frees meanwhile.
   */
  private async removeAll(records: PlacementGroupRecord[]): Promise<number> {
    for (const g of records) this.withdraw(g.placementGroupId);
    for (const g of records) await this.remove(g.placementGroupId);
    return records.length;
  }

  /** The group stops waiting for resources (it is being removed). */
  private withdraw(placementGroupId: string): void {
    this.removing.add(placementGroupId);
    this.pending.delete(`pg:${placementGroupId}`);
    clearTimeout(this.timeouts.get(placementGroupId));
    this.timeouts.delete(placementGroupId);
    this.waitingSinceMs.delete(placementGroupId);
  }

  /** Groups waiting for resources (Ray's pending demands), oldest first. */
  pendingDemands(): m.PendingDemand[] {
    const out: m.PendingDemand[] = [];
    for (const [id, since] of this.waitingSinceMs) {
      const g = this.groups.get(id);
      if (!g || (g.state !== 'PENDING' && g.state !== 'RESCHEDULING')) continue;
      out.push({
        kind: 'placement group',
        id,
        name: g.name,
        bundles: g.bundles.map((b) => resourcesToWire(b.resources)),
        strategy: g.strategy,
        labelSelector: {},
        pendingSinceMs: since,
        state: g.state,
        ownerId: g.ownerId ?? '',
      });
    }
    return out.sort((x, y) => Number(x.pendingSinceMs) - Number(y.pendingSinceMs));
  }

  /** Bundles on a lost node go back to waiting for room, keeping the group's strategy. */
  async onNodeLost(groupIds: string[]): Promise<void> {
    for (const id of groupIds) {
      const record = this.groups.get(id);
      if (!record || record.state === 'PENDING') continue;
      record.state = 'RESCHEDULING';
      await this.save(record);
      this.logger.warn({ placementGroupId: id }, 'placement group lost bundles with a node; re-placing them');
      this.enqueue(record, 0);
      this.pending.kick();
    }
  }

  /** Reloads groups after a head restart. Call after nodes are restored. */
  restore(records: PlacementGroupRecord[]): void {
    for (const record of records) {
      this.groups.set(record.placementGroupId, record);
      if (record.name) this.names.set(nameKey(record.namespace, record.name), record.placementGroupId);
      if (isSessionOwned(record)) this.onOwned?.(record.ownerId!);
      if (record.state === 'PENDING') {
        this.enqueue(record, 0);
        continue;
      }
      this.scheduler.restoreGroup(
        record.placementGroupId,
        record.strategy,
        record.bundles.map((b) => ({
          resources: b.resources,
          placement: { nodeId: b.nodeId, gpus: b.gpus },
        })),
      );
      if (this.scheduler.groupBundles(record.placementGroupId)?.some((b) => !b.placement)) {
        record.state = 'RESCHEDULING';
        this.enqueue(record, 0);
      }
    }
  }

  private settled(record: PlacementGroupRecord): Promise<PlacementGroupRecord> {
    if (record.state === 'CREATED' || record.state === 'RESCHEDULING') return Promise.resolve(record);
    return new Promise((resolve, reject) => {
      const list = this.waiters.get(record.placementGroupId) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(record.placementGroupId, list);
    });
  }

  private enqueue(record: PlacementGroupRecord, timeoutMs: number): void {
    const id = record.placementGroupId;
    if (!this.waitingSinceMs.has(id)) this.waitingSinceMs.set(id, Date.now());
    this.pending.add(`pg:${id}`, async () => {
      const current = this.groups.get(id);
      if (!current) return true;
      if (current.state === 'PENDING') {
        const attempt = this.scheduler.placeGroup({
          placementGroupId: id,
          what: `placement group ${current.name || id}`,
          strategy: current.strategy,
          bundles: current.bundles.map((b) => b.resources),
        });
        if (!attempt.ok) return false;
        this.assign(current, attempt.placement);
      } else if (current.state === 'RESCHEDULING') {
        let attempt: ReturnType<Scheduler['rescheduleLostBundles']>;
        try {
          attempt = this.scheduler.rescheduleLostBundles(id);
        } catch {
          return false; // not placeable with the nodes we have; wait for a new node
        }
        if (!attempt.ok) return false;
        for (const { bundleIndex, placement } of attempt.placement) {
          current.bundles[bundleIndex] = {
            ...current.bundles[bundleIndex],
            nodeId: placement.nodeId,
            gpus: placement.gpus,
          };
        }
      } else return true;
      clearTimeout(this.timeouts.get(id));
      this.timeouts.delete(id);
      this.waitingSinceMs.delete(id);
      current.state = 'CREATED';
      await this.save(current);
      // Removed while it was stored: remove() rejects the waiters and drops the record.
      if (this.removing.has(id) || this.groups.get(id) !== current) return true;
      const waiters = this.waiters.get(id) ?? [];
      this.waiters.delete(id);
      for (const w of waiters) w.resolve(current);
      return true;
    });
    if (timeoutMs > 0) {
      const timer = setTimeout(() => {
        const current = this.groups.get(id);
        if (current?.state !== 'PENDING') return;
        this.reject(
          current,
          new SchedulingTimeoutError(
            `placement group ${current.name || id} could not reserve its bundles within ${timeoutMs} ms`,
            { fields: { placementGroupId: id, timeoutMs } },
          ),
        );
        void this.remove(id);
      }, timeoutMs);
      timer.unref();
      this.timeouts.set(id, timer);
    }
  }

  private reject(record: PlacementGroupRecord, err: Error): void {
    const waiters = this.waiters.get(record.placementGroupId) ?? [];
    this.waiters.delete(record.placementGroupId);
    for (const w of waiters) w.reject(err);
  }

  private assign(record: PlacementGroupRecord, placements: BundlePlacement[]): void {
    record.bundles = record.bundles.map((b, i) => ({
      ...b,
      nodeId: placements[i].nodeId,
      gpus: placements[i].gpus,
    }));
  }

  private save(record: PlacementGroupRecord): Promise<void> {
    return this.store.put('placementGroups', record.placementGroupId, record);
  }
}

/** Owned by a session and not by an actor (an actor's groups follow that actor), not detached. */
function isSessionOwned(g: PlacementGroupRecord): boolean {
  return Boolean(g.ownerId) && !g.ownerActorId && !g.detached;
}
