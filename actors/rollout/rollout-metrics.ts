/** Prometheus metrics of a rollout engine, fed by the generation engine's observer hooks. */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LATENCY_BUCKETS_S } from '../../common/metrics.js';
import type { EngineObserver, GenerationEngine } from './rollout-engine.js';

export function rolloutMetrics(
  registry: Registry,
  engine: () => GenerationEngine | undefined,
): EngineObserver {
  const tokens = new Counter({
    name: 'clawray_rollout_tokens_total',
    help: 'Tokens generated (rate() of it is tokens/s)',
    registers: [registry],
  });
  const ttft = new Histogram({
    name: 'clawray_rollout_time_to_first_token_seconds',
    help: 'Time from a request entering the engine to its first sampled token',
    buckets: LATENCY_BUCKETS_S,
    registers: [registry],
  });
  const perToken = new Histogram({
    name: 'clawray_rollout_token_latency_seconds',
    help: 'Time of one decode step, i.e. between consecutive tokens of a sequence',
    buckets: LATENCY_BUCKETS_S,
    registers: [registry],
  });
  const batchSize = new Histogram({
    name: 'clawray_rollout_batch_size',
    help: 'Sequences decoded together per step',
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers: [registry],
  });
  const swap = new Histogram({
    name: 'clawray_rollout_weight_swap_seconds',
    help: 'Time from updateWeights to serving the new version',
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [registry],
  });
  new Gauge({
    name: 'clawray_rollout_queue_depth',
    help: 'Requests waiting for a batch slot',
    registers: [registry],
    collect() {
      this.set(engine()?.queueDepth ?? 0);
    },
  });
  new Gauge({
    name: 'clawray_rollout_kv_cache_bytes',
    help: 'Memory the KV cache buffer of the batch holds, in use or kept for the next batch',
    registers: [registry],
    collect() {
      this.set(engine()?.kvCacheBytes ?? 0);
    },
  });
  new Gauge({
    name: 'clawray_rollout_weight_version',
    help: 'Weight version the engine serves',
    registers: [registry],
    collect() {
      this.set(engine()?.weightVersion ?? 0);
    },
  });
  new Gauge({
    name: 'clawray_rollout_execution_provider',
    help: 'The onnxruntime execution provider in use (1 for the active one), and where the batch KV cache lives (host or device memory)',
    labelNames: ['provider', 'kv_cache'],
    registers: [registry],
    collect() {
      this.reset();
      const e = engine();
      if (e) this.set({ provider: e.provider, kv_cache: e.kvCacheLocation }, 1);
    },
  });
  return {
    onStep: (size, seconds) => {
      batchSize.observe(size);
      perToken.observe(seconds);
      tokens.inc(size);
    },
    onFirstToken: (seconds) => {
      ttft.observe(seconds);
      tokens.inc();
    },
    onSwap: (_version, seconds) => swap.observe(seconds),
  };
}
