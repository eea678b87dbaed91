/**
 * Prometheus metrics of collective operations, counted on each rank in prom-client's default
 * registry (inside an actor, the node agent exports it). Bytes over seconds is the algorithm
 * bandwidth nccl-tests reports (algbw); the dashboard shows it per rank.
 *
 *   clawray_allreduce_bytes_total   bytes of the buffers this rank all-reduced
 *   clawray_allreduce_seconds       duration of one all-reduce on this rank (histogram)
 *   clawray_broadcast_bytes_total   bytes of the buffers this rank took part in broadcasting
 *   clawray_broadcast_seconds       duration of one broadcast on this rank (histogram)
 */
import { Counter, Histogram, type Registry, register } from 'prom-client';

export type CollectiveOp = 'allreduce' | 'broadcast';

/** From a 1 MiB bucket on loopback to a multi-GiB model over a slow link. */
const BUCKETS_S = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export interface CollectiveMetrics {
  observe(op: CollectiveOp, bytes: number, seconds: number): void;
}

function counter(registry: Registry, name: string, help: string): Counter {
  return (
    (registry.getSingleMetric(name) as Counter | undefined) ??
    new Counter({ name, help, registers: [registry] })
  );
}

function histogram(registry: Registry, name: string, help: string): Histogram {
  return (
    (registry.getSingleMetric(name) as Histogram | undefined) ??
    new Histogram({ name, help, buckets: BUCKETS_S, registers: [registry] })
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
  return {
    observe(op, bytes, seconds) {
      ops[op].bytes.inc(bytes);
      ops[op].seconds.observe(seconds);
    },
  };
}
