/**
 * A random decoder of the family exported to ONNX and loaded in onnxruntime, for tests and
 * benchmarks of the rollout engine (seeded: the same seed gives the same model).
 */
import {
  dims,
  type ModelConfig,
  modelConfigSchema,
  PRESETS,
  type PresetName,
} from '../models/model-config.js';
import { exportDecoderOnnx } from '../models/onnx-export.js';
import { type WeightMap, weightSpecs } from '../models/weight-names.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { seededRandom } from './sampler.js';

export function randomWeights(config: ModelConfig, seed: number, std = 0.08): WeightMap {
  const random = seededRandom(seed);
  const normal = () => {
    const u = Math.max(random(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
  };
  const weights: WeightMap = new Map();
  for (const spec of weightSpecs(dims(config))) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    if (spec.init === 'ones') data.fill(1);
    else if (spec.init === 'normal') for (let i = 0; i < size; i++) data[i] = normal() * std;
    weights.set(spec.name, data);
  }
  return weights;
}

export function presetConfig(preset: PresetName): ModelConfig {
  return modelConfigSchema.parse(PRESETS[preset]);
}

export async function randomDecoder(
  preset: PresetName,
  seed: number,
): Promise<{ config: ModelConfig; weights: WeightMap; decoder: OnnxDecoder }> {
  const config = presetConfig(preset);
  const weights = randomWeights(config, seed);
  const d = dims(config);
  const decoder = await OnnxDecoder.load(
    exportDecoderOnnx(config, weights),
    {
      layers: d.layers,
      kvHeads: d.kvHeads,
      headDim: d.headDim,
      vocab: d.vocab,
    },
    'cpu',
  );
  return { config, weights, decoder };
}
