/**
 * A model directory served for rollouts: tokenizer and chat template from the directory, the
 * decoder from `model.onnx` when the directory has one (exported by any tool with optimum's
 * names: checked, then loaded by the same code) or else exported from its safetensors, and a
 * generation engine on top. Standalone it is what `clawray serve` runs; the RolloutEngine
 * actor wraps it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import { ConfigError } from '../../common/errors.js';
import { createLogger, type Logger } from '../../common/logger.js';
import { loadModelDir, type ModelDir } from '../models/model-dir.js';
import { exportDecoderOnnx } from '../models/onnx-export.js';
import { checkDecoderIo, readOnnxIo } from '../models/onnx-inputs.js';
import type { WeightMap } from '../models/weight-names.js';
import type { ChatModel } from './chat-model.js';
import { ModelCodec } from './model-codec.js';
import { type ExecutionProvider, type KvLayout, OnnxDecoder } from './onnx-decoder.js';
import { type GenerateRequest, type GenerateResult, GenerationEngine } from './rollout-engine.js';
import { rolloutMetrics } from './rollout-metrics.js';

export interface RolloutModelOptions {
  /** A model directory (config.json, tokenizer.json, weights and/or model.onnx). */
  modelDir: string;
  /** The id clients name in requests. Default: the directory's name. */
  id?: string;
  provider?: ExecutionProvider | 'auto';
  /** Sequences decoding together. Default 16. */
  maxBatchSize?: number;
  /** Requests waiting before new ones are refused. Default 1024. */
  maxQueue?: number;
  swapMode?: 'finish' | 'requeue';
  /** Exports the engine's metrics there. */
  registry?: Registry;
  logger?: Logger;
}

export const ONNX_FILE = 'model.onnx';

export class RolloutModel extends ModelCodec implements ChatModel {
  readonly id: string;

  private constructor(
    model: ModelDir,
    private weights: WeightMap,
    readonly engine: GenerationEngine,
    id: string,
  ) {
    super(model);
    this.id = id;
  }

  static async load(options: RolloutModelOptions): Promise<RolloutModel> {
    const dir = options.modelDir;
    const onnxFile = join(dir, ONNX_FILE);
    const hasOnnx = existsSync(onnxFile);
    const model = loadModelDir(dir, { weights: !hasOnnx || hasWeights(dir) });
    const layout: KvLayout = {
      layers: model.dims.layers,
      kvHeads: model.dims.kvHeads,
      headDim: model.dims.headDim,
      vocab: model.dims.vocab,
    };
    let graph: Uint8Array | string;
    if (hasOnnx) {
      const info = checkDecoderIo(readOnnxIo(onnxFile), layout);
      if (info.kvElemType !== 'float32') {
        throw new ConfigError(
          `${onnxFile}: the key/value cache is ${info.kvElemType}; this engine runs float32 decoders`,
        );
      }
      graph = onnxFile;
    } else {
      graph = exportDecoderOnnx(model.config, model.weights);
    }
    const decoder = await OnnxDecoder.load(graph, layout, options.provider ?? 'auto');
    (options.logger ?? createLogger({ component: 'rollout' })).info(
      { modelDir: dir, provider: decoder.provider, source: hasOnnx ? ONNX_FILE : 'safetensors export' },
      'rollout model loaded',
    );
    let engine: GenerationEngine | undefined;
    const observer = options.registry ? rolloutMetrics(options.registry, () => engine) : undefined;
    const tokenizer = model.tokenizer;
    engine = new GenerationEngine(decoder, {
      eosTokenIds: model.eosTokenIds,
      maxContext: model.config.max_position_embeddings,
      maxBatchSize: options.maxBatchSize,
      maxQueue: options.maxQueue,
      swapMode: options.swapMode,
      detokenize: (ids) => tokenizer.decode(ids, { skipSpecialTokens: true }),
      observer,
      reload: async (tensors) => {
        const merged = rollout.mergeWeights(tensors);
        const next = await OnnxDecoder.load(
          exportDecoderOnnx(model.config, merged),
          layout,
          decoder.provider,
        );
        rollout.weights = merged;
        return next;
      },
    });
    const rollout = new RolloutModel(
      model,
      model.weights,
      engine,
      options.id ?? (dir.split('/').filter(Boolean).pop() || 'model'),
    );
    return rollout;
  }

  get weightVersion(): number {
    return this.engine.weightVersion;
  }

  get provider(): string {
    return this.engine.provider;
  }

  get modelDir(): ModelDir {
    return this.model;
  }

  generate(request: GenerateRequest): Promise<GenerateResult> {
    return this.engine.generate(request);
  }

  computeLogprobs(tokenIds: number[], fromIndex = 1, temperature = 1): Promise<number[]> {
    return this.engine.computeLogprobs(tokenIds, fromIndex, temperature);
  }

  /** New weights by Hugging Face name (all of them, or the ones that changed). */
  updateWeights(version: number, tensors: WeightMap): Promise<void> {
    return this.engine.updateWeights(version, tensors);
  }

  close(): Promise<void> {
    return this.engine.close();
  }

  private mergeWeights(update: WeightMap): WeightMap {
    if (this.weights.size === 0) {
      throw new ConfigError(
        `${this.model.dir} was served from ${ONNX_FILE} without safetensors weights; updateWeights needs the weights`,
      );
    }
    const merged: WeightMap = new Map(this.weights);
    for (const [name, data] of update) {
      const current = this.weights.get(name);
      if (!current) throw new ConfigError(`updateWeights: unknown tensor ${name}`);
      if (current.length !== data.length) {
        throw new ConfigError(`updateWeights: ${name} has ${data.length} values, expected ${current.length}`);
      }
      merged.set(name, data);
    }
    return merged;
  }
}

function hasWeights(dir: string): boolean {
  return existsSync(join(dir, 'model.safetensors')) || existsSync(join(dir, 'model.safetensors.index.json'));
}
