/**
 * What a job's rollout (and judge) engines are created with: the manifest's `spec.model` engine
 * settings. `cpus`, the role's CPUs per replica, sizes onnxruntime's intra-op pool when the
 * manifest does not (as Ray sets OMP_NUM_THREADS to an actor's num_cpus): engines that share a
 * node then split its cores rather than each taking all of them.
 */
import type { RolloutModelOptions } from '../../actors/rollout/rollout-model.js';
import type { RLJobManifest } from '../manifest/schema.js';

export type EngineOptions = Omit<RolloutModelOptions, 'modelDir' | 'registry' | 'logger'>;

export function engineOptions(m: RLJobManifest['spec']['model'], cpus = 0): EngineOptions {
  return {
    provider: m.provider,
    maxBatchSize: m.maxBatchSize,
    maxQueue: m.maxQueue,
    weightDtype: m.weightDtype,
    attention: m.attention,
    intraOpNumThreads: m.intraOpNumThreads ?? (cpus >= 1 ? Math.floor(cpus) : undefined),
    allowSpinning: m.allowSpinning,
    prefillChunkTokens: m.prefillChunkTokens,
    memoryBudgetBytes: m.memoryBudgetMiB === undefined ? undefined : Math.floor(m.memoryBudgetMiB * 2 ** 20),
  };
}
