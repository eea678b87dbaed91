/**
 * A random decoder of the family exported to ONNX and loaded in onnxruntime, for tests of the
 * generation engine (seeded: the same seed gives the same model).
 */
import {
  dims,
  type ModelConfig,
  modelConfigSchema,
  PRESETS,
  type PresetName,
} from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderOnnx } from '../models/onnx-export.js';
import type { WeightMap } from '../models/weight-names.js';
import { OnnxDecoder } from './onnx-decoder.js';

export function presetConfig(preset: PresetName): ModelConfig {
  return modelConfigSchema.parse(PRESETS[preset]);
}

export async function randomDecoder(
  preset: PresetName,
  seed: number,
): Promise<{ config: ModelConfig; weights: WeightMap; decoder: OnnxDecoder }> {
  const config = presetConfig(preset);
  const d = dims(config);
  const weights = randomWeights(d, seed);
  const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
  const decoder = await OnnxDecoder.load(exportDecoderOnnx(config, weights), layout, 'cpu');
  return { config, weights, decoder };
}
