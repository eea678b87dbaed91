/** What a job's rollout (and judge) engines are created with: the manifest's `spec.model` engine settings. */
import type { RolloutModelOptions } from '../../actors/rollout/rollout-model.js';
import type { RLJobManifest } from '../manifest/schema.js';

export type EngineOptions = Omit<RolloutModelOptions, 'modelDir' | 'registry' | 'logger'>;

export function engineOptions(m: RLJobManifest['spec']['model']): EngineOptions {
  return {
    provider: m.provider,
    maxBatchSize: m.maxBatchSize,
    maxQueue: m.maxQueue,
    weightDtype: m.weightDtype,
    attention: m.attention,
    intraOpNumThreads: m.intraOpNumThreads,
    allowSpinning: m.allowSpinning,
    prefillChunkTokens: m.prefillChunkTokens,
    memoryBudgetBytes: m.memoryBudgetMiB === undefined ? undefined : Math.floor(m.memoryBudgetMiB * 2 ** 20),
  };
}
