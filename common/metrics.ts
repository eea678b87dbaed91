/**
 * Prometheus metrics. Each component owns a prom-client `Registry`; a process serves the merge
 * of the registries it hosts (a head and a worker share one process in the embedded cluster).
 * Names follow `clawray_<area>_<thing>_<unit>` with low-cardinality labels.
 */
import { collectDefaultMetrics, Histogram, type Registry } from 'prom-client';

export { Counter, Gauge, Histogram, Registry } from 'prom-client';

export const LATENCY_BUCKETS_S = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

/** `clawray_rpc_duration_seconds{service,method,code}` for a server's handlers. */
export function rpcDurationHistogram(registry: Registry): Histogram<'service' | 'method' | 'code'> {
  return new Histogram({
    name: 'clawray_rpc_duration_seconds',
    help: 'Duration of gRPC requests handled by this process, by service, method and status code',
    labelNames: ['service', 'method', 'code'],
    buckets: LATENCY_BUCKETS_S,
    registers: [registry],
  });
}

const withProcessMetrics = new WeakSet<Registry>();

/**
 * prom-client's default metrics of this process in `registry`: `process_*` (CPU, resident
 * memory, open fds, start time) and `nodejs_*` (event-loop lag, heap, GC), what a Node
 * exporter is expected to have. Called where a registry is served, once per registry (each
 * call starts its own event-loop and GC observers).
 */
export function addProcessMetrics(registry: Registry): void {
  if (withProcessMetrics.has(registry)) return;
  withProcessMetrics.add(registry);
  collectDefaultMetrics({ register: registry });
}
