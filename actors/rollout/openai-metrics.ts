/**
 * The OpenAI-compatible server's own counters. Token counts and latencies are the engine's
 * (rollout-metrics.ts); the server counts requests and what the RL capture saw of them.
 * Several servers may share one registry: the second one finds the counters the first made.
 */
import { Counter, type Registry } from 'prom-client';

export interface ServerMetrics {
  requests: Counter<'status'>;
  missingHeaders: Counter<'header'>;
  turns: Counter<'type' | 'kind' | 'session'>;
}

function getOrCreate<T>(registry: Registry, name: string, make: () => T): T {
  return (registry.getSingleMetric(name) as T | undefined) ?? make();
}

/** The server's counters in `registry`, made there unless an earlier server made them. */
export function createMetrics(registry: Registry): ServerMetrics {
  const requests = getOrCreate(
    registry,
    'clawray_rollout_requests_total',
    () =>
      new Counter({
        name: 'clawray_rollout_requests_total',
        help: 'Chat completion requests served by the OpenAI-compatible server, by HTTP status (499: client went away)',
        labelNames: ['status'],
        registers: [registry],
      }),
  );
  const missingHeaders = getOrCreate(
    registry,
    'clawray_rollout_capture_missing_headers_total',
    () =>
      new Counter({
        name: 'clawray_rollout_capture_missing_headers_total',
        help: 'Chat requests without an RL capture header (session_id: not recorded; turn_type: defaulted to main)',
        labelNames: ['header'],
        registers: [registry],
      }),
  );
  const turns = getOrCreate(
    registry,
    'clawray_rollout_capture_turns_total',
    () =>
      new Counter({
        name: 'clawray_rollout_capture_turns_total',
        help: 'Chat requests seen by the RL capture, by turn type (main|side), kind (declared, defaulted, or the side call recognised: memory_flush, compaction, heartbeat, cron, …) and where the session id came from (api_key, header, body, prompt_cache_key, none)',
        labelNames: ['type', 'kind', 'session'],
        registers: [registry],
      }),
  );
  return { requests, missingHeaders, turns };
}
