/**
 * Prometheus metrics of collective operations, counted on each rank in prom-client's default
 * registry (inside an actor, the node agent exports it). Bytes over seconds is the algorithm
 * bandwidth nccl-tests reports (algbw); the dashboard shows it per rank.
 *
 *   clawray_allreduce_bytes_total   bytes of the buffers this rank all-reduced
 *   clawray_allreduce_seconds       duration of one all-reduce on this rank (histogram)
 *   clawray_broadcast_bytes_total   bytes of the buffers this rank took part in broadcasting
 *   clawray_broadcast_seconds       duration of one broadcast on this rank (histogram)
 *   clawray_collective_links        ring links of this process's open groups (gauge; each rank
 *                                   has two, the one it sends on and the one it receives on)
 *
 * Every series has a `transport` label: 'tcp', 'unix' (same-host Unix socket) or, on the
 * operation metrics, 'mixed' for a rank whose two links differ.
 */
import { Counter, Gauge, Histogram, type Registry, register } from 'prom-client';

export type CollectiveOp = 'allreduce' | 'broadcast';
type Labels = 'transport';

/** From a 1 MiB bucket on loopback to a multi-GiB model over a slow link. */
const BUCKETS_S = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export interface CollectiveMetrics {
  observe(op: CollectiveOp, transport: string, bytes: number, seconds: number): void;
  /** `delta` links of `transport` opened (1) or closed (-1). */
  links(transport: string, delta: number): void;
}

const labelNames = ['transport'] as const;

function counter(registry: Registry, name: string, help: string): Counter<Labels> {
  return (
    (registry.getSingleMetric(name) as Counter<Labels> | undefined) ??
    new Counter({ name, help, labelNames, registers: [registry] })
  );
}

function histogram(registry: Registry, name: string, help: string): Histogram<Labels> {
  return (
    (registry.getSingleMetric(name) as Histogram<Labels> | undefined) ??
    new Histogram({ name, help, labelNames, buckets: BUCKETS_S, registers: [registry] })
  );
}

/** The metrics of one registry; every group of a process shares them. */
export function collectiveMetrics(registry: Registry = register): CollectiveMetrics {
  const ops = {
    allreduce: {
      bytes: counter(registry, 'clawray_allreduce_bytes_total', 'Bytes of the buffers this rank all-reduced'),
      seconds: histogram(registry, 'clawray_allreduce_seconds', 'Duration of one all-reduce on this rank'),
    },
    broadcast: {
      bytes: counter(
        registry,
        'clawray_broadcast_bytes_total',
        'Bytes of the buffers this rank took part in broadcasting',
      ),
      seconds: histogram(registry, 'clawray_broadcast_seconds', 'Duration of one broadcast on this rank'),
    },
  };
  const links =
    (registry.getSingleMetric('clawray_collective_links') as Gauge<Labels> | undefined) ??
    new Gauge({
      name: 'clawray_collective_links',
      help: "Ring links of this process's open collective groups, by transport",
      labelNames,
      registers: [registry],
    });
  return {
    observe(op, transport, bytes, seconds) {
      ops[op].bytes.inc({ transport }, bytes);
      ops[op].seconds.observe({ transport }, seconds);
    },
    links(transport, delta) {
      links.inc({ transport }, delta);
    },
  };
}
