/**
 * A request that waits for resources says so, as Ray's "The actor … is pending creation …
 * Required resources … Available resources …" warning does: every `intervalMs` each actor or
 * placement group that has waited at least that long is reported to its owner (the driver
 * logs it) with what it needs, how it is placed, and what is free on each node. Nothing fails:
 * it keeps waiting (`scheduleTimeoutMs` / `timeoutMs` are how a caller gives up).
 */
import type { Logger } from '../common/logger.js';
import type * as m from '../proto/messages.js';
import { formatResources } from '../runtime/index.js';

export interface FreeOnNode {
  nodeId: string;
  address: string;
  available: m.Resources;
  total: m.Resources;
}

export interface PendingWarnerDeps {
  intervalMs: number;
  logger: Logger;
  demands(): m.PendingDemand[];
  free(): FreeOnNode[];
  /** Delivers to the owner's session; false when it is not connected. */
  send(ownerId: string, event: m.OwnerEvent): boolean;
  now?(): number;
}

/** At most this many nodes are listed in one warning (the rest are counted). */
const MAX_NODES_LISTED = 8;

export class PendingWarner {
  private timer?: NodeJS.Timeout;

  constructor(private readonly d: PendingWarnerDeps) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), this.d.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Sends one warning per request that has waited at least one interval; returns them. */
  tick(): m.OwnerEvent[] {
    const now = (this.d.now ?? Date.now)();
    const waiting = this.d
      .demands()
      .filter((demand) => now - Number(demand.pendingSinceMs) >= this.d.intervalMs);
    if (waiting.length === 0) return [];
    const free = formatFree(this.d.free());
    const events = waiting.map((demand) => {
      const event: m.OwnerEvent = {
        kind: 'PENDING',
        message: pendingMessage(demand, now, free),
        actorId: demand.kind === 'actor' ? demand.id : '',
        placementGroupId: demand.kind === 'actor' ? '' : demand.id,
        demand,
      };
      if (demand.ownerId) this.d.send(demand.ownerId, event);
      return event;
    });
    this.d.logger.warn(
      { pending: waiting.length, oldest: events[0].message },
      `${waiting.length} request(s) wait for resources`,
    );
    return events;
  }
}

export function pendingMessage(demand: m.PendingDemand, nowMs: number, free: string): string {
  const waitedS = Math.round((nowMs - Number(demand.pendingSinceMs)) / 1000);
  const what =
    demand.kind === 'actor'
      ? `actor ${demand.name} (${demand.id}) is pending creation`
      : `placement group ${demand.name || demand.id}${demand.name ? ` (${demand.id})` : ''} is pending`;
  const bundles = demand.bundles ?? [];
  const required =
    demand.kind === 'actor' ? formatResources(bundles[0]) : bundles.map((b) => formatResources(b)).join(', ');
  const selector = Object.entries(demand.labelSelector ?? {});
  return (
    `Warning: the ${what}, waiting ${waitedS} s for resources. ` +
    `Required resources: ${required}; strategy: ${demand.strategy}` +
    (selector.length ? `; labelSelector: ${selector.map(([k, v]) => `${k}=${v}`).join(',')}` : '') +
    `. Available resources: ${free}. ` +
    'It starts once they are free (kill actors, remove placement groups, or add nodes); ' +
    'set scheduleTimeoutMs (actors) or timeoutMs (placement groups) to give up instead.'
  );
}

function formatFree(nodes: FreeOnNode[]): string {
  if (nodes.length === 0) return 'no live nodes';
  const listed = nodes
    .slice(0, MAX_NODES_LISTED)
    .map((n) => `${n.nodeId} (${n.address}) ${formatResources(n.available)} of ${formatResources(n.total)}`);
  const more = nodes.length - listed.length;
  return listed.join('; ') + (more > 0 ? `; and ${more} more node(s)` : '');
}
