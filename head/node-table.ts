/**
 * The head's nodes and their health. A node that has not heartbeated for `nodeTimeoutMs` is
 * declared dead; a pause of the head's own event loop is not held against the nodes (their
 * heartbeats may be sitting unread in our socket), so load on the head causes no false deaths.
 */

import { resourcesFromWire } from '../actors/runtime/views.js';
import { newId } from '../common/ids.js';
import type { Logger } from '../common/logger.js';
import type * as m from '../proto/messages.js';
import type { NodeRecord } from './model.js';
import type { Scheduler } from './scheduler/scheduler.js';
import type { ClusterStore } from './store/types.js';

export interface NodeEntry {
  record: NodeRecord;
  lastSeenMs: number;
  /** False for nodes reloaded from the store until they register again with their actors. */
  reregistered: boolean;
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
  private lastTickMs = Date.now();

  constructor(
    private readonly store: ClusterStore,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
    private readonly hooks: NodeTableHooks,
  ) {}

  /** Reloads nodes after a head restart; each gets a full timeout to re-register. */
  restore(records: NodeRecord[]): void {
    const now = Date.now();
    for (const record of records) {
      if (record.state === 'DEAD') continue;
      this.nodes.set(record.nodeId, { record, lastSeenMs: now, reregistered: false });
      if (record.state === 'ALIVE') this.scheduler.addNode(this.capacity(record));
    }
  }

  start(): void {
    const period = Math.max(20, Math.min(200, this.timeoutMs / 10));
    this.lastTickMs = Date.now();
    this.monitor = setInterval(() => void this.check(), period);
    this.monitor.unref();
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
      existing.lastSeenMs = Date.now();
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
      registeredAtMs: Date.now(),
    };
    await this.store.put('nodes', record.nodeId, record);
    this.nodes.set(record.nodeId, { record, lastSeenMs: Date.now(), reregistered: true });
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
    entry.lastSeenMs = Date.now();
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

  private async check(): Promise<void> {
    const now = Date.now();
    const lag = now - this.lastTickMs;
    this.lastTickMs = now;
    const period = Math.max(20, Math.min(200, this.timeoutMs / 10));
    if (lag > period * 2) {
      // We were not running; nobody could have been heard. Do not count that time.
      for (const entry of this.nodes.values()) entry.lastSeenMs += lag - period;
    }
    for (const entry of this.nodes.values()) {
      if (entry.record.state !== 'DEAD' && now - entry.lastSeenMs > this.timeoutMs) {
        await this.declareDead(entry, `node missed heartbeats for ${now - entry.lastSeenMs} ms`);
      }
    }
  }

  private async declareDead(entry: NodeEntry, reason: string): Promise<void> {
    if (entry.record.state === 'DEAD') return;
    const { nodeId } = entry.record;
    const drained = entry.record.state === 'DRAINING';
    entry.record = { ...entry.record, state: 'DEAD', deadAtMs: Date.now() };
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
