/**
 * The head's actors: creation (placed now, or queued while the cluster is busy), the named
 * actor index, kills, exits, restarts elsewhere within `maxRestarts`, and reconciliation with
 * what nodes report after a head restart. Every state change is in the store before anyone
 * is told about it.
 */
import type { Histogram } from 'prom-client';
import {
  ActorDiedError,
  AlreadyExistsError,
  ConfigError,
  fromErrorInfo,
  NotFoundError,
  SchedulingTimeoutError,
  toErrorInfo,
  UnavailableError,
} from '../common/errors.js';
import type { Logger } from '../common/logger.js';
import { resourceRequestSchema, toResourceRequest } from '../common/resources.js';
import type * as m from '../proto/messages.js';
import { parseWith, resourcesFromWire, resourcesToWire } from '../runtime/index.js';
import type { ActorRecord } from './model.js';
import type { NodeClients } from './node-clients.js';
import type { NodeTable } from './node-table.js';
import type { PendingQueue } from './pending-queue.js';
import type { Scheduler } from './scheduler/scheduler.js';
import type { ActorPlacement } from './scheduler/types.js';
import type { ClusterStore } from './store/types.js';

interface Waiter {
  resolve(record: ActorRecord): void;
  reject(err: Error): void;
}

export interface ActorDirectoryDeps {
  store: ClusterStore;
  scheduler: Scheduler;
  nodes: NodeTable;
  nodeClients: NodeClients;
  pending: PendingQueue;
  logger: Logger;
  /** Whether a placement group exists and is placed (actors in a pending group wait). */
  groupState(placementGroupId: string): 'CREATED' | 'WAITING' | 'MISSING';
  onRestart(record: ActorRecord): void;
  /** After an actor is recorded DEAD for good (the job manager fails jobs whose supervisor died). */
  onDead?(record: ActorRecord, cause: Error): void;
  /**
   * An actor's process is gone (it restarts or is dead): what that incarnation owned goes
   * with it. The directory kills the actors itself; this removes the placement groups.
   */
  onOwnerActorGone?(record: ActorRecord, reason: string): void;
  /** A non-detached actor owned by a session was recorded (the registry watches the owner). */
  onOwned?(ownerId: string): void;
  schedulingLatency: Histogram<string>;
  /** Dead actors' records kept; beyond it the oldest dead are dropped (store included). */
  maxDeadActors: number;
}

const nameKey = (namespace: string, name: string) => `${namespace}\u0000${name}`;

export class ActorDirectory {
  private readonly actors = new Map<string, ActorRecord>();
  private readonly names = new Map<string, string>();
  private readonly waiters = new Map<string, Waiter[]>();
  private readonly placements = new Map<string, ActorPlacement>();
  /** Actors killed with noRestart: whatever exit comes next makes them DEAD. */
  private readonly killing = new Set<string>();
  /** Why an actor was killed, when not by a plain kill (its owner died): its death cause. */
  private readonly killReasons = new Map<string, ActorDiedError>();
  /** Actors with a StartActor in flight from this head. */
  private readonly starting = new Set<string>();
  private readonly queuedAtMs = new Map<string, number>();
  /** Wall-clock time each actor waiting for resources started waiting (for pending demands). */
  private readonly waitingSinceMs = new Map<string, number>();
  private readonly timeouts = new Map<string, NodeJS.Timeout>();
  /** Owner actor id → its live non-detached children (so a death does not scan every actor). */
  private readonly children = new Map<string, Set<string>>();
  /** Dead actors in the order they died: the first is dropped first. */
  private readonly deadOrder = new Set<string>();
  /** Dead actors' records dropped since this head started. */
  droppedDead = 0;
  /**
   * Deaths being recorded (store writes, waiters, children): whoever else ends the same actor
   * meanwhile (a kill racing its process's exit report) waits for this rather than answering
   * before the death is in the store and the dead records are trimmed.
   */
  private readonly finalizing = new Map<string, Promise<void>>();

  constructor(private readonly d: ActorDirectoryDeps) {}

  // --- reads -----------------------------------------------------------------------------------

  get(actorId: string): ActorRecord {
    const record = this.actors.get(actorId);
    if (!record) throw new NotFoundError(`no actor with id ${actorId}`, { fields: { actorId } });
    return record;
  }

  getByName(name: string, namespace: string): ActorRecord {
    const id = this.names.get(nameKey(namespace, name));
    if (!id) {
      throw new NotFoundError(`no live actor named '${name}' in namespace '${namespace}'`, {
        fields: { name, namespace },
      });
    }
    return this.get(id);
  }

  list(filter: { state?: string; jobId?: string } = {}): ActorRecord[] {
    return [...this.actors.values()].filter(
      (a) => (!filter.state || a.state === filter.state) && (!filter.jobId || a.jobId === filter.jobId),
    );
  }

  inGroup(placementGroupId: string): ActorRecord[] {
    return [...this.actors.values()].filter(
      (a) => a.options.placementGroupId === placementGroupId && a.state !== 'DEAD',
    );
  }

  // --- creation --------------------------------------------------------------------------------

  async create(spec: m.ActorSpec__Output): Promise<ActorRecord> {
    const existing = this.actors.get(spec.actorId);
    if (existing) return this.settled(existing);
    const o = spec.options;
    if (!o) throw new ConfigError('actor spec has no options');
    const resources = toResourceRequest(
      parseWith(
        resourceRequestSchema,
        { ...resourceInput(o.resources) },
        `resources of actor ${spec.className} (${spec.actorId})`,
      ),
    );
    if (o.name) {
      const sameName = this.names.get(nameKey(o.namespace, o.name));
      if (sameName) {
        if (o.getIfExists) return this.settled(this.get(sameName));
        throw new AlreadyExistsError(
          `an actor named '${o.name}' already exists in namespace '${o.namespace}'; use getIfExists or another name`,
          { fields: { name: o.name, namespace: o.namespace, actorId: sameName } },
        );
      }
    }
    if (o.placementGroupId && this.d.groupState(o.placementGroupId) === 'MISSING') {
      throw new NotFoundError(`placement group ${o.placementGroupId} does not exist`, {
        fields: { placementGroupId: o.placementGroupId },
      });
    }
    if (spec.ownerActorId && !o.detached) {
      this.assertOwnerActorAlive(
        spec.ownerActorId,
        spec.ownerIncarnation,
        `actor ${spec.className} (${spec.actorId})`,
      );
    }
    const now = Date.now();
    const record: ActorRecord = {
      actorId: spec.actorId,
      module: spec.module,
      className: spec.className,
      argsBase64: Buffer.from(spec.args).toString('base64'),
      jobId: spec.jobId,
      ...(spec.ownerId ? { ownerId: spec.ownerId } : {}),
      ...(spec.ownerActorId
        ? { ownerActorId: spec.ownerActorId, ownerIncarnation: spec.ownerIncarnation }
        : {}),
      options: {
        resources,
        labelSelector: { ...o.labelSelector },
        name: o.name,
        namespace: o.namespace || 'default',
        maxRestarts: o.maxRestarts,
        maxTaskRetries: o.maxTaskRetries,
        maxConcurrency: o.maxConcurrency,
        maxPendingCalls: o.maxPendingCalls,
        placementGroupId: o.placementGroupId,
        bundleIndex: o.bundleIndex,
        env: { ...o.env },
        scheduleTimeoutMs: o.scheduleTimeoutMs,
        ...(o.detached ? { detached: true } : {}),
      },
      state: 'PENDING_CREATION',
      nodeId: '',
      address: '',
      gpus: [],
      bundleIndex: -1,
      pid: 0,
      numRestarts: 0,
      incarnation: 0,
      createdAtMs: now,
      updatedAtMs: now,
    };
    // Infeasible requests fail here, before anything is stored.
    const attempt = this.tryReserve(record);
    this.actors.set(record.actorId, record);
    if (record.options.name)
      this.names.set(nameKey(record.options.namespace, record.options.name), record.actorId);
    const done = this.settled(record);
    if (record.ownerId && !record.ownerActorId && !record.options.detached) this.d.onOwned?.(record.ownerId);
    this.indexChild(record);
    this.queuedAtMs.set(record.actorId, performance.now());
    if (attempt) await this.launch(record, attempt);
    else {
      await this.save(record);
      // Killed while it was being stored: it must not wait for resources (nor be reported so).
      if ((record.state as string) !== 'DEAD') this.enqueue(record);
    }
    return done;
  }

  /** Resolves when the actor is ALIVE, rejects when it ends up DEAD. */
  private settled(record: ActorRecord): Promise<ActorRecord> {
    if (record.state === 'ALIVE') return Promise.resolve(record);
    if (record.state === 'DEAD') return Promise.reject(this.deathError(record));
    return new Promise((resolve, reject) => {
      const list = this.waiters.get(record.actorId) ?? [];
      list.push({ resolve, reject });
      this.waiters.set(record.actorId, list);
    });
  }

  /**
   * An actor may only be created by a live incarnation of its owner actor: a request from one
   * that died (or restarted) since is refused, as Ray fails the creation of an actor whose
   * owner is dead.
   */
  assertOwnerActorAlive(ownerActorId: string, incarnation: number, what: string): void {
    const owner = this.actors.get(ownerActorId);
    if (owner && owner.state !== 'DEAD' && owner.incarnation === incarnation && owner.nodeId) return;
    const state = !owner ? 'gone' : owner.state === 'DEAD' ? 'dead' : 'no longer that incarnation';
    throw new ActorDiedError(
      `cannot create ${what}: its owner, actor ${ownerActorId} (incarnation ${incarnation}), is ${state}; ` +
        "use lifetime: 'detached' for one that outlives its creator",
      { fields: { ownerActorId, incarnation } },
    );
  }

  /** A placement now, undefined when busy; throws when it can never be placed. */
  private tryReserve(record: ActorRecord): ActorPlacement | undefined {
    const o = record.options;
    if (o.placementGroupId && this.d.groupState(o.placementGroupId) !== 'CREATED') return undefined;
    const attempt = this.d.scheduler.placeActor({
      what: `actor ${record.className} (${record.actorId})`,
      resources: o.resources,
      labelSelector: o.labelSelector,
      placementGroupId: o.placementGroupId || undefined,
      bundleIndex: o.bundleIndex,
    });
    return attempt.ok ? attempt.placement : undefined;
  }

  private enqueue(record: ActorRecord): void {
    const id = record.actorId;
    if (!this.waitingSinceMs.has(id)) this.waitingSinceMs.set(id, Date.now());
    this.d.pending.add(`actor:${id}`, async () => {
      const current = this.actors.get(id);
      if (!current || current.state === 'DEAD' || current.nodeId) return true;
      let placement: ActorPlacement | undefined;
      try {
        placement = this.tryReserve(current);
      } catch (err) {
        await this.finalizeDead(current, err as Error);
        return true;
      }
      if (!placement) return false;
      await this.launch(current, placement);
      return true;
    });
    if (record.options.scheduleTimeoutMs > 0 && !this.timeouts.has(id)) {
      const timer = setTimeout(() => {
        this.timeouts.delete(id);
        const current = this.actors.get(id);
        if (!current || current.nodeId || current.state === 'DEAD' || current.state === 'ALIVE') return;
        this.d.pending.delete(`actor:${id}`);
        void this.finalizeDead(
          current,
          new SchedulingTimeoutError(
            `actor ${current.className} (${id}) waited ${current.options.scheduleTimeoutMs} ms for resources that stayed busy`,
            { fields: { actorId: id, scheduleTimeoutMs: current.options.scheduleTimeoutMs } },
          ),
        );
      }, record.options.scheduleTimeoutMs);
      timer.unref();
      this.timeouts.set(id, timer);
    }
  }

  /** Records the placement, then asks the node to start the actor. */
  private async launch(record: ActorRecord, placement: ActorPlacement): Promise<void> {
    clearTimeout(this.timeouts.get(record.actorId));
    this.timeouts.delete(record.actorId);
    this.waitingSinceMs.delete(record.actorId);
    const queuedAt = this.queuedAtMs.get(record.actorId);
    if (queuedAt !== undefined) {
      this.d.schedulingLatency.observe((performance.now() - queuedAt) / 1000);
      this.queuedAtMs.delete(record.actorId);
    }
    this.placements.set(record.actorId, placement);
    record.nodeId = placement.nodeId;
    record.gpus = placement.gpus;
    record.bundleIndex = placement.bundleIndex ?? -1;
    record.incarnation++;
    record.updatedAtMs = Date.now();
    await this.save(record);
    void this.startOnNode(record, record.incarnation);
  }

  private async startOnNode(record: ActorRecord, incarnation: number): Promise<void> {
    const node = this.d.nodes.get(record.nodeId);
    const current = () => this.actors.get(record.actorId) === record && record.incarnation === incarnation;
    if (!node) {
      await this.onFailure(record, new UnavailableError(`node ${record.nodeId} is gone`), {
        preempted: true,
      });
      return;
    }
    this.starting.add(record.actorId);
    let reply: m.StartActorReply__Output;
    try {
      reply = await this.d.nodeClients.startActor(node.record.address, {
        spec: {
          actorId: record.actorId,
          module: record.module,
          className: record.className,
          args: Buffer.from(record.argsBase64, 'base64'),
          jobId: record.jobId,
          options: {
            ...record.options,
            resources: undefined,
            getIfExists: false,
          },
        },
        gpus: placement(record).gpus,
        incarnation,
      });
    } catch (err) {
      this.starting.delete(record.actorId);
      if (!current() || record.state === 'DEAD') return;
      if (err instanceof UnavailableError) {
        // The node could not be reached; it will be declared dead or come back. Try again
        // elsewhere without counting it against the actor.
        await this.onFailure(record, err, { preempted: true });
      } else {
        // The module, class or constructor failed: permanent, as in Ray.
        await this.finalizeDead(record, err as Error);
      }
      return;
    }
    this.starting.delete(record.actorId);
    if (!current() || record.state === 'DEAD') {
      void this.d.nodeClients
        .stopActor(node.record.address, { actorId: record.actorId, graceful: false })
        .catch(() => {});
      return;
    }
    await this.markAlive(record, reply.address, reply.pid);
  }

  private async markAlive(record: ActorRecord, address: string, pid: number): Promise<void> {
    record.state = 'ALIVE';
    record.address = address;
    record.pid = pid;
    record.updatedAtMs = Date.now();
    await this.save(record);
    const waiters = this.waiters.get(record.actorId) ?? [];
    this.waiters.delete(record.actorId);
    for (const w of waiters) w.resolve(record);
    if (this.killing.has(record.actorId)) void this.kill(record.actorId, true);
  }

  // --- kills, exits, restarts -----------------------------------------------------------------

  /** `reason` completes the death cause: `actor X (id) was killed: REASON`. */
  async kill(actorId: string, noRestart: boolean, reason?: string): Promise<void> {
    const record = this.get(actorId);
    // Dying already (its exit was reported first): answer once that death is recorded.
    if (record.state === 'DEAD') return this.finalizing.get(actorId);
    // Not placed yet and allowed to restart: nothing runs to kill, and it keeps its place in
    // the queue (dropping it there would leave it waiting for good).
    if (!record.nodeId && !noRestart) return;
    if (noRestart) this.killing.add(actorId);
    const cause = new ActorDiedError(
      `actor ${record.className} (${actorId}) was killed${reason ? `: ${reason}` : ''}`,
      { fields: { actorId } },
    );
    if (reason) this.killReasons.set(actorId, cause);
    if (!record.nodeId) {
      // Not placed yet: nothing runs anywhere.
      this.d.pending.delete(`actor:${actorId}`);
      if (noRestart) await this.finalizeDead(record, cause);
      return;
    }
    const node = this.d.nodes.get(record.nodeId);
    const incarnation = record.incarnation;
    if (node && node.record.state !== 'DEAD') {
      try {
        await this.d.nodeClients.stopActor(node.record.address, { actorId, graceful: false });
      } catch (err) {
        this.d.logger.warn(
          { actorId, err: (err as Error).message },
          'could not reach the node to kill the actor',
        );
      }
    }
    if (record.incarnation === incarnation && (record.state as string) !== 'DEAD' && record.nodeId) {
      await this.onFailure(record, cause, { preempted: false });
    } else {
      // Its exit report got there first: the kill is done once that death is recorded.
      await this.finalizing.get(actorId);
    }
  }

  /**
   * Kills (no restart) every actor of a job that is not dead yet: a job that ends, or whose
   * driver is replaced, leaves nothing behind. Resolves with how many it killed.
   */
  async killJob(jobId: string): Promise<number> {
    if (!jobId) return 0;
    const live = this.list({ jobId }).filter((a) => a.state !== 'DEAD');
    await Promise.all(
      live.map((a) =>
        this.kill(a.actorId, true).catch((err: Error) =>
          this.d.logger.warn({ actorId: a.actorId, jobId, err: err.message }, 'could not kill a job actor'),
        ),
      ),
    );
    return live.length;
  }

  /**
   * The owner session `ownerId` is gone: its actors die with it (no restart), except detached
   * ones and those an actor owns (they follow that actor). Resolves with how many it killed.
   */
  async killOwned(ownerId: string, reason: string): Promise<number> {
    const owned = [...this.actors.values()].filter(
      (a) => a.ownerId === ownerId && !a.ownerActorId && !a.options.detached && a.state !== 'DEAD',
    );
    await this.killAll(owned, reason);
    return owned.length;
  }

  /** The children of `owner` (created by the incarnation that just ended) die with it. */
  private killChildren(owner: ActorRecord, why: string): void {
    const reason = `its owner, actor ${owner.className} (${owner.actorId}), ${why}`;
    const children = [...(this.children.get(owner.actorId) ?? [])]
      .map((id) => this.actors.get(id))
      .filter(
        (a): a is ActorRecord =>
          a !== undefined && a.state !== 'DEAD' && (a.ownerIncarnation ?? 0) <= owner.incarnation,
      );
    if (children.length > 0) void this.killAll(children, reason);
    this.d.onOwnerActorGone?.(owner, reason);
  }

  private indexChild(record: ActorRecord): void {
    if (!record.ownerActorId || record.options.detached) return;
    const set = this.children.get(record.ownerActorId) ?? new Set<string>();
    set.add(record.actorId);
    this.children.set(record.ownerActorId, set);
  }

  private unindexChild(record: ActorRecord): void {
    if (!record.ownerActorId) return;
    const set = this.children.get(record.ownerActorId);
    if (!set) return;
    set.delete(record.actorId);
    if (set.size === 0) this.children.delete(record.ownerActorId);
  }

  private async killAll(records: ActorRecord[], reason: string): Promise<void> {
    await Promise.all(
      records.map((a) =>
        this.kill(a.actorId, true, reason).catch((err: Error) =>
          this.d.logger.warn({ actorId: a.actorId, err: err.message }, 'could not kill an owned actor'),
        ),
      ),
    );
  }

  /** An actor process exited (reported by its node). */
  async onExit(report: m.ReportActorExitRequest__Output): Promise<void> {
    const record = this.actors.get(report.actorId);
    if (!record || record.state === 'DEAD') return;
    if (record.incarnation !== report.incarnation || record.nodeId !== report.nodeId) return;
    if (this.starting.has(record.actorId)) return; // the failed StartActor reply handles it
    const cause = this.killing.has(record.actorId)
      ? (this.killReasons.get(record.actorId) ??
        new ActorDiedError(`actor ${record.className} (${record.actorId}) was killed`, {
          fields: { actorId: record.actorId },
        }))
      : report.error?.name
        ? fromErrorInfo(report.error)
        : new ActorDiedError('the actor process exited');
    const draining = this.d.nodes.get(report.nodeId)?.record.state === 'DRAINING';
    await this.onFailure(record, cause, { preempted: draining });
  }

  /** Every actor on a lost node fails; restartable ones move elsewhere. */
  async onNodeLost(nodeId: string, reason: string, preempted: boolean): Promise<void> {
    for (const record of [...this.actors.values()]) {
      if (record.nodeId !== nodeId || record.state === 'DEAD') continue;
      const cause = new ActorDiedError(
        `the node running actor ${record.className} (${record.actorId}) was lost: ${reason}`,
        {
          fields: { actorId: record.actorId, nodeId },
        },
      );
      await this.onFailure(record, cause, { preempted });
    }
  }

  /**
   * The actor's process is gone. Restart it elsewhere if its `maxRestarts` allows (a drained
   * node's actors restart without using up a restart, as in Ray), else it is dead.
   */
  private async onFailure(
    record: ActorRecord,
    cause: Error,
    { preempted }: { preempted: boolean },
  ): Promise<void> {
    this.release(record);
    const { maxRestarts } = record.options;
    const canRestart =
      !this.killing.has(record.actorId) &&
      maxRestarts !== 0 &&
      (preempted || maxRestarts === -1 || record.numRestarts < maxRestarts);
    if (!canRestart) {
      await this.finalizeDead(record, cause);
      return;
    }
    // Ray's owner is the worker process: what this incarnation created dies with it, even
    // though the actor itself restarts.
    this.killChildren(record, `restarted after its process died (${cause.message})`);
    if (!preempted) record.numRestarts++;
    record.state = 'RESTARTING';
    record.nodeId = '';
    record.address = '';
    record.pid = 0;
    record.gpus = [];
    record.deathCause = toErrorInfo(cause);
    record.updatedAtMs = Date.now();
    await this.save(record);
    this.d.onRestart(record);
    this.d.logger.info(
      {
        actorId: record.actorId,
        className: record.className,
        restarts: record.numRestarts,
        cause: cause.message,
      },
      'restarting actor',
    );
    this.queuedAtMs.set(record.actorId, performance.now());
    let placement: ActorPlacement | undefined;
    try {
      placement = this.tryReserve(record);
    } catch (err) {
      await this.finalizeDead(record, err as Error);
      return;
    }
    if (placement) await this.launch(record, placement);
    else this.enqueue(record);
  }

  private release(record: ActorRecord): void {
    const held = this.placements.get(record.actorId);
    if (!held) return;
    this.placements.delete(record.actorId);
    this.d.scheduler.releaseActor(held, record.options.resources);
    this.d.pending.kick();
  }

  /** Records the actor DEAD for good; a second call while it is recorded waits for the first. */
  private finalizeDead(record: ActorRecord, cause: Error): Promise<void> {
    const inFlight = this.finalizing.get(record.actorId);
    if (inFlight) return inFlight;
    if (record.state === 'DEAD') return Promise.resolve();
    const done = this.recordDeath(record, cause).finally(() => {
      if (this.finalizing.get(record.actorId) === done) this.finalizing.delete(record.actorId);
    });
    this.finalizing.set(record.actorId, done);
    return done;
  }

  private async recordDeath(record: ActorRecord, cause: Error): Promise<void> {
    this.release(record);
    this.killing.delete(record.actorId);
    this.killReasons.delete(record.actorId);
    this.d.pending.delete(`actor:${record.actorId}`);
    clearTimeout(this.timeouts.get(record.actorId));
    this.timeouts.delete(record.actorId);
    this.queuedAtMs.delete(record.actorId);
    this.waitingSinceMs.delete(record.actorId);
    record.state = 'DEAD';
    record.deathCause = toErrorInfo(cause);
    record.address = '';
    record.pid = 0;
    record.updatedAtMs = Date.now();
    const key = nameKey(record.options.namespace, record.options.name);
    if (record.options.name && this.names.get(key) === record.actorId) this.names.delete(key);
    // Counted among the dead in the same step as it turns DEAD, so no reader ever sees more
    // than `maxDeadActors` dead records; the store drops them after this record is written.
    this.deadOrder.add(record.actorId);
    const dropped = this.dropOldestDead();
    await this.save(record);
    await this.deleteStored(dropped);
    const waiters = this.waiters.get(record.actorId) ?? [];
    this.waiters.delete(record.actorId);
    for (const w of waiters) w.reject(cause);
    this.d.onDead?.(record, cause);
    this.unindexChild(record);
    this.killChildren(record, `died (${cause.message})`);
  }

  /** Drops the oldest dead actors' records beyond `maxDeadActors` here; returns their ids. */
  private dropOldestDead(): string[] {
    const drop: string[] = [];
    for (const id of this.deadOrder) {
      if (this.deadOrder.size - drop.length <= this.d.maxDeadActors) break;
      drop.push(id);
    }
    for (const id of drop) {
      this.deadOrder.delete(id);
      this.actors.delete(id);
    }
    this.droppedDead += drop.length;
    return drop;
  }

  private async deleteStored(actorIds: string[]): Promise<void> {
    if (actorIds.length === 0) return;
    await this.d.store.apply(actorIds.map((id) => ({ op: 'delete' as const, table: 'actors' as const, id })));
  }

  /** Dead actors' records kept now. */
  get deadCount(): number {
    return this.deadOrder.size;
  }

  /** Actors waiting for resources (Ray's pending demands), oldest first. */
  pendingDemands(): m.PendingDemand[] {
    const out: m.PendingDemand[] = [];
    for (const [id, since] of this.waitingSinceMs) {
      const a = this.actors.get(id);
      if (!a || a.state === 'DEAD' || a.nodeId) continue;
      const o = a.options;
      out.push({
        kind: 'actor',
        id,
        name: o.name ? `${a.className} '${o.name}'` : a.className,
        bundles: [resourcesToWire(o.resources)],
        strategy: o.placementGroupId
          ? `PLACEMENT_GROUP ${o.placementGroupId}${o.bundleIndex >= 0 ? ` bundle ${o.bundleIndex}` : ''}`
          : 'DEFAULT',
        labelSelector: o.labelSelector,
        pendingSinceMs: since,
        state: a.state,
        ownerId: a.ownerId ?? '',
      });
    }
    return out.sort((x, y) => Number(x.pendingSinceMs) - Number(y.pendingSinceMs));
  }

  private deathError(record: ActorRecord): Error {
    return record.deathCause
      ? fromErrorInfo(record.deathCause)
      : new ActorDiedError(`actor ${record.actorId} is dead`);
  }

  // --- head restart ----------------------------------------------------------------------------

  /** Reloads actors after a head restart. Call after nodes and groups are restored. */
  restore(records: ActorRecord[]): void {
    const dead = records.filter((r) => r.state === 'DEAD').sort((a, b) => a.updatedAtMs - b.updatedAtMs);
    for (const record of dead) this.deadOrder.add(record.actorId);
    for (const record of records) {
      this.actors.set(record.actorId, record);
      if (record.state === 'DEAD') continue;
      if (record.ownerId && !record.ownerActorId && !record.options.detached)
        this.d.onOwned?.(record.ownerId);
      this.indexChild(record);
      if (record.options.name)
        this.names.set(nameKey(record.options.namespace, record.options.name), record.actorId);
      if (record.state === 'ALIVE' && this.d.nodes.get(record.nodeId)) {
        const held = placement(record);
        this.d.scheduler.restoreActor(held, record.options.resources);
        this.placements.set(record.actorId, held);
      }
    }
  }

  /** Actors that were being placed or started when the head went down start over. */
  async resumeAfterRestore(): Promise<void> {
    await this.deleteStored(this.dropOldestDead());
    // Children whose owner actor died (or restarted) while the head was down die now.
    for (const record of [...this.actors.values()]) {
      if (record.state === 'DEAD' || !record.ownerActorId || record.options.detached) continue;
      const owner = this.actors.get(record.ownerActorId);
      if (owner && owner.state !== 'DEAD' && owner.incarnation === record.ownerIncarnation) continue;
      await this.kill(
        record.actorId,
        true,
        `its owner, actor ${record.ownerActorId}, died while the head was down`,
      ).catch(() => {});
    }
    for (const record of [...this.actors.values()]) {
      if (record.state === 'DEAD') continue;
      if (record.state === 'ALIVE') {
        if (!this.d.nodes.get(record.nodeId)) {
          await this.onFailure(record, new ActorDiedError(`node ${record.nodeId} is gone`), {
            preempted: false,
          });
        }
        continue;
      }
      record.nodeId = '';
      record.gpus = [];
      let held: ActorPlacement | undefined;
      try {
        held = this.tryReserve(record);
      } catch (err) {
        await this.finalizeDead(record, err as Error);
        continue;
      }
      if (held) await this.launch(record, held);
      else this.enqueue(record);
    }
  }

  /**
   * A node registered (again) and listed the actors it runs. Returns the ones it must stop:
   * not ours, another incarnation, or dead. Ours that it no longer runs have failed.
   */
  async reconcileNode(nodeId: string, reported: m.RunningActor__Output[]): Promise<string[]> {
    const stop: string[] = [];
    const seen = new Set<string>();
    for (const r of reported) {
      const record = this.actors.get(r.actorId);
      if (
        !record ||
        record.state === 'DEAD' ||
        record.nodeId !== nodeId ||
        record.incarnation !== r.incarnation
      ) {
        stop.push(r.actorId);
        continue;
      }
      seen.add(r.actorId);
      if (record.state !== 'ALIVE' && !this.starting.has(r.actorId))
        await this.markAlive(record, r.address, r.pid);
    }
    for (const record of [...this.actors.values()]) {
      if (record.nodeId !== nodeId || record.state !== 'ALIVE' || seen.has(record.actorId)) continue;
      await this.onFailure(
        record,
        new ActorDiedError(
          `actor ${record.className} (${record.actorId}) was no longer running when its node re-registered`,
        ),
        { preempted: false },
      );
    }
    return stop;
  }

  private save(record: ActorRecord): Promise<void> {
    return this.d.store.put('actors', record.actorId, record);
  }
}

function placement(record: ActorRecord): ActorPlacement {
  return {
    nodeId: record.nodeId,
    gpus: record.gpus,
    placementGroupId: record.options.placementGroupId || undefined,
    bundleIndex: record.bundleIndex >= 0 ? record.bundleIndex : undefined,
  };
}

function resourceInput(r: m.Resources__Output | null | undefined) {
  const x = resourcesFromWire(r);
  return { numCpus: x.numCpus, numGpus: x.numGpus, memoryMb: x.memoryMb, resources: x.custom };
}
