/**
 * The weights a trainer checkpoint serves: what a job's engines received from its trainer
 * (`TrainerShard.readWeights`) at that step. A full checkpoint holds every weight (F32, as
 * trained); a LoRA checkpoint holds only the adapters, which are merged into the base model's
 * targets with the trainer's own code (`TfjsDecoder.readMergedWeights`: W + alpha/rank · B A in
 * TensorFlow.js), so the merged bits are the ones the job published.
 */
import { join } from 'node:path';
import { loadModelDir } from '../../actors/models/model-dir.js';
import { readSafetensors } from '../../actors/models/safetensors.js';
import { type WeightMap, weightSpecs } from '../../actors/models/weight-names.js';
import { MODEL_FILE } from '../../actors/trainer/checkpoint.js';
import { type LoraConfig, loraScale } from '../../actors/trainer/lora.js';
import { ConfigError } from '../../common/errors.js';

const LORA_A = /^(.*)\.lora_A\.weight$/;

export interface CheckpointWeights {
  /** By Hugging Face name: every weight, or (LoRA) the merged targets only. */
  weights: WeightMap;
  /** Number of LoRA adapters merged (0 for a full checkpoint). */
  loraAdapters: number;
}

/**
 * Reads `<stepDir>/model.safetensors` for the base model at `baseModelDir`. `lora` is the job's
 * `spec.train.lora`, needed (for alpha) when the checkpoint holds adapters.
 */
export async function checkpointWeights(
  stepDir: string,
  baseModelDir: string,
  lora: LoraConfig | undefined,
): Promise<CheckpointWeights> {
  const file = join(stepDir, MODEL_FILE);
  const tensors = readSafetensors(file).tensors;
  const adapters = [...tensors.keys()].filter((n) => LORA_A.test(n));
  const base = loadModelDir(baseModelDir, { weights: adapters.length > 0 });
  const known = new Map(weightSpecs(base.dims).map((s) => [s.name, s.shape]));
  if (adapters.length === 0) {
    const weights: WeightMap = new Map();
    for (const [name, t] of tensors) {
      const shape = known.get(name);
      const size = shape?.reduce((a, b) => a * b, 1);
      if (size !== t.data.length) {
        throw new ConfigError(
          `${file}: tensor '${name}' (${t.data.length} values) is not a weight of the base model ${baseModelDir}${shape ? ` (${size} values)` : ''}: evaluate the checkpoint with the model its job trained`,
          { fields: { file, tensor: name, model: baseModelDir } },
        );
      }
      weights.set(name, t.data);
    }
    return { weights, loraAdapters: 0 };
  }
  if (!lora) {
    throw new ConfigError(
      `${stepDir} holds LoRA adapters: merging them needs the job's spec.train.lora (alpha): pass --manifest with the job's manifest`,
      { fields: { path: stepDir } },
    );
  }
  const loraWeights = new Map<string, { A: Float32Array; B: Float32Array; rank: number }>();
  for (const nameA of adapters) {
    const module = LORA_A.exec(nameA)![1];
    const target = `${module}.weight`;
    const A = tensors.get(nameA)!;
    const B = tensors.get(`${module}.lora_B.weight`);
    if (!B || !known.has(target)) {
      throw new ConfigError(
        `${file}: adapter '${nameA}' ${B ? `targets '${target}', which the base model ${baseModelDir} does not have` : 'has no lora_B'}`,
        { fields: { file, tensor: nameA } },
      );
    }
    if (A.shape[0] !== lora.rank) {
      throw new ConfigError(
        `${file}: adapter '${nameA}' has rank ${A.shape[0]} but the manifest's spec.train.lora.rank is ${lora.rank}`,
        { fields: { file, tensor: nameA } },
      );
    }
    loraWeights.set(target, { A: A.data, B: B.data, rank: A.shape[0] });
  }
  // The trainer's own merge, on this process's TensorFlow.js backend (chosen as the trainer's is).
  const [{ selectBackend }, { TfjsDecoder }] = await Promise.all([
    import('../../actors/models/tfjs-backend.js'),
    import('../../actors/models/tfjs-decoder.js'),
  ]);
  await selectBackend();
  const decoder = new TfjsDecoder(base.config, base.weights, {
    lora: { scale: loraScale(lora), adapters: loraWeights },
  });
  try {
    const merged = decoder.readMergedWeights();
    const weights: WeightMap = new Map([...loraWeights.keys()].map((t) => [t, merged.get(t)!]));
    return { weights, loraAdapters: loraWeights.size };
  } finally {
    decoder.dispose();
  }
}
