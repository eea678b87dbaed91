/**
 * The head's nodes and their health. A node that has not heartbeated for `nodeTimeoutMs` is
 * declared dead; a pause of the head's own event loop is not held against the nodes (their
 * heartbeats may be sitting unread in our socket), so load on the head causes no false deaths.
 *
 * After a head restart on a durable store the reloaded nodes have not been heard by *this*
 * head at all: their clock starts when the head begins listening (`start()`), not when the
 * store is read, and until a node re-registers it gets `reloadGraceMs` on top of the timeout —
 * the longest a worker waits between attempts to reach a head it lost — so a live worker is
 * never declared dead for having been mid-backoff when the head came back.
 */

import { newId } from '../common/ids.js';
import type { Logger } from '../common/logger.js';
import type * as m from '../proto/messages.js';
import { resourcesFromWire } from '../runtime/index.js';
import type { NodeRecord } from './model.js';
import type { Scheduler } from './scheduler/scheduler.js';
import type { ClusterStore } from './store/types.js';

export interface NodeEntry {
  record: NodeRecord;
  lastSeenMs: number;
  /** False for nodes reloaded from the store until they register again with their actors. */
  reregistered: boolean;
}

export interface NodeHealthTiming {
  /** A node not heard from for this long is dead. */
  timeoutMs: number;
  /** Extra silence allowed to a node reloaded from the store until it re-registers. */
  reloadGraceMs: number;
}

/**
 * How long past its allowance a node has been silent at `nowMs` (> 0: declare it dead), or a
 * value <= 0 while it is within it. Reloaded nodes that have not re-registered yet get the
 * reload grace on top of the timeout.
 */
export function overdueMs(entry: NodeEntry, nowMs: number, timing: NodeHealthTiming): number {
  const allowanceMs = timing.timeoutMs + (entry.reregistered ? 0 : timing.reloadGraceMs);
  return nowMs - entry.lastSeenMs - allowanceMs;
}

/** The sweep's period: ten looks per timeout, within [20, 200] ms. */
export function sweepPeriodMs(timeoutMs: number): number {
  return Math.max(20, Math.min(200, timeoutMs / 10));
}

export interface NodeTableHooks {
  /**
   * The node is gone (timeout, or drain finished): fail or move its actors. `preempted` when
   * it left on purpose (drained), which does not use up actors' restarts.
   */
  onNodeLost(nodeId: string, reason: string, preempted: boolean): Promise<void>;
  /** Bundles of these placement groups were on a node that left the scheduler. */
  onBundlesLost(placementGroupIds: string[]): Promise<void>;
  /** Capacity appeared: retry waiting requests. */
  onCapacity(): void;
}

export class NodeTable {
  private readonly nodes = new Map<string, NodeEntry>();
  private monitor?: NodeJS.Timeout;
  private lastTickMs: number;
  private readonly periodMs: number;
  private sweeping = false;

  constructor(
    private readonly store: ClusterStore,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
    private readonly timing: NodeHealthTiming,
    private readonly hooks: NodeTableHooks,
    /** The clock; tests drive a fake one through `sweep()`. */
    private readonly now: () => number = Date.now,
  ) {
    this.periodMs = sweepPeriodMs(timing.timeoutMs);
    this.lastTickMs = now();
  }

  /**
   * Reloads nodes after a head restart. Their clock starts in `start()`, once the head
   * listens, and each has a full timeout plus the reload grace to re-register.
   */
  restore(records: NodeRecord[]): void {
    const now = this.now();
    for (const record of records) {
      if (record.state === 'DEAD') continue;
      this.nodes.set(record.nodeId, { record, lastSeenMs: now, reregistered: false });
      if (record.state === 'ALIVE') this.scheduler.addNode(this.capacity(record));
    }
  }

  /** Starts the health sweep; call it once the head's server accepts connections. */
  start(): void {
    this.begin();
    this.monitor = setInterval(() => void this.sweep(), this.periodMs);
    this.monitor.unref();
  }

  /**
   * Starts the clock: nodes still waiting to re-register have not been heard by this head
   * before now, whatever time the store was read at. Tests call it without a timer.
   */
  begin(): void {
    const now = this.now();
    this.lastTickMs = now;
    for (const entry of this.nodes.values()) if (!entry.reregistered) entry.lastSeenMs = now;
  }

  stop(): void {
    clearInterval(this.monitor);
  }

  get(nodeId: string): NodeEntry | undefined {
    return this.nodes.get(nodeId);
  }

  list(): NodeEntry[] {
    return [...this.nodes.values()];
  }

  /**
   * Registers a node, or takes a known node back after a gap. Returns the node id to use and
   * whether the node's previous incarnation was declared dead (its actors must stop).
   */
  async register(req: m.RegisterNodeRequest__Output): Promise<{ nodeId: string; known: boolean }> {
    const existing = req.nodeId ? this.nodes.get(req.nodeId) : undefined;
    if (existing && existing.record.state !== 'DEAD') {
      existing.lastSeenMs = this.now();
      existing.reregistered = true;
      if (existing.record.address !== req.address) {
        existing.record = { ...existing.record, address: req.address };
        await this.store.put('nodes', req.nodeId, existing.record);
      }
      return { nodeId: req.nodeId, known: true };
    }
    const record: NodeRecord = {
      nodeId: req.nodeId && !this.nodes.has(req.nodeId) ? req.nodeId : newId('node'),
      address: req.address,
      hostname: req.hostname,
      resources: resourcesFromWire(req.resources),
      gpuIds: [...req.gpuIds],
      labels: { ...req.labels },
      state: 'ALIVE',
      registeredAtMs: this.now(),
    };
    await this.store.put('nodes', record.nodeId, record);
    this.nodes.set(record.nodeId, { record, lastSeenMs: this.now(), reregistered: true });
    this.scheduler.addNode(this.capacity(record));
    this.logger.info(
      { nodeId: record.nodeId, address: record.address, gpuIds: record.gpuIds },
      'node registered',
    );
    this.hooks.onCapacity();
    return { nodeId: record.nodeId, known: false };
  }

  heartbeat(nodeId: string): m.HeartbeatReply {
    const entry = this.nodes.get(nodeId);
    if (!entry || entry.record.state === 'DEAD') return { known: false, reregister: false };
    entry.lastSeenMs = this.now();
    return { known: true, reregister: !entry.reregistered };
  }

  /** First call: no new work lands on the node. `exiting`: the node is gone. */
  async drain(nodeId: string, exiting: boolean, reason: string): Promise<void> {
    const entry = this.nodes.get(nodeId);
    if (!entry || entry.record.state === 'DEAD') return;
    if (exiting) {
      await this.declareDead(entry, `node drained and exited (${reason})`);
      return;
    }
    if (entry.record.state === 'DRAINING') return;
    entry.record = { ...entry.record, state: 'DRAINING' };
    await this.store.put('nodes', nodeId, entry.record);
    this.logger.info({ nodeId, reason }, 'node draining');
    await this.hooks.onBundlesLost(this.scheduler.removeNode(nodeId));
  }

  /** One look at every node; the timer calls it every `sweepPeriodMs`. */
  async sweep(): Promise<void> {
    // A sweep that waits on the store must not overlap the next one.
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      await this.sweepOnce();
    } finally {
      this.sweeping = false;
    }
  }

  private async sweepOnce(): Promise<void> {
    const now = this.now();
    const lag = now - this.lastTickMs;
    this.lastTickMs = now;
    if (lag > this.periodMs * 2) {
      // We were not running; nobody could have been heard. Do not count that time.
      for (const entry of this.nodes.values()) entry.lastSeenMs += lag - this.periodMs;
    }
    for (const entry of [...this.nodes.values()]) {
      if (entry.record.state === 'DEAD' || overdueMs(entry, now, this.timing) <= 0) continue;
      const silentMs = now - entry.lastSeenMs;
      await this.declareDead(
        entry,
        entry.reregistered
          ? `node missed heartbeats for ${silentMs} ms`
          : `node did not re-register within ${silentMs} ms of the head's restart`,
      );
    }
  }

  private async declareDead(entry: NodeEntry, reason: string): Promise<void> {
    if (entry.record.state === 'DEAD') return;
    const { nodeId } = entry.record;
    const drained = entry.record.state === 'DRAINING';
    entry.record = { ...entry.record, state: 'DEAD', deadAtMs: this.now() };
    const fields = { nodeId, address: entry.record.address, reason };
    if (drained) this.logger.info(fields, 'node left');
    else this.logger.warn(fields, 'node dead');
    await this.store.put('nodes', nodeId, entry.record);
    await this.hooks.onBundlesLost(this.scheduler.removeNode(nodeId));
    await this.hooks.onNodeLost(nodeId, reason, drained);
  }

  private capacity(record: NodeRecord) {
    return {
      nodeId: record.nodeId,
      address: record.address,
      resources: record.resources,
      gpuIds: record.gpuIds,
      labels: record.labels,
    };
  }
}
