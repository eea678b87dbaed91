/**
 * `clawray_cluster_node_losses_total{cause}`: nodes the head lost, split by whether they left
 * on purpose (drained: a scale-down, an upgrade, a preemption notice) or stopped answering
 * (heartbeat_timeout). Both end as DEAD in `clawray_cluster_nodes`, so only this counter lets
 * an alert page for real failures and stay quiet through a rolling upgrade.
 */
import { Counter, type Registry } from 'prom-client';

export type NodeLossCause = 'drained' | 'heartbeat_timeout';

export function nodeLossCounter(registry: Registry): Counter<'cause'> {
  const counter = new Counter({
    name: 'clawray_cluster_node_losses_total',
    help: 'Nodes the head declared dead, by cause: drained (left on purpose) or heartbeat_timeout',
    labelNames: ['cause'],
    registers: [registry],
  });
  // Both series exist from the start, so rate() and increase() see the first loss.
  for (const cause of ['drained', 'heartbeat_timeout'] satisfies NodeLossCause[]) counter.inc({ cause }, 0);
  return counter;
}
