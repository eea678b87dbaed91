/**
 * A model directory served for rollouts: tokenizer and chat template from the directory, the
 * decoder from `model.onnx` or `onnx/model.onnx` when the directory has one (exported by any
 * tool with optimum's names: checked, then loaded by the same code) or else built from its
 * safetensors, and a generation engine on top. Standalone it is what `clawray serve` runs;
 * the RolloutEngine actor wraps it.
 *
 * Weights live in a `DecoderWeights` buffer (the graph's external data), never in the graph
 * protobuf: a model of any size loads, and a weight update rewrites only the tensors it names
 * and opens a new session on the same graph bytes — no re-export. A model.onnx exported by
 * another tool is served as it is and refuses updates with the reason.
 */
import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Registry } from 'prom-client';
import { ConfigError } from '../../common/errors.js';
import { heldGpuMemoryBytes } from '../../common/gpu-discovery.js';
import { createLogger, type Logger } from '../../common/logger.js';
import { loadModelDir, type ModelDir } from '../models/model-dir.js';
import { findOnnxModel, MODEL_FILE } from '../models/onnx-export.js';
import { gqaUnsupported } from '../models/onnx-export-gqa.js';
import { DECODER_ATTENTIONS, type DecoderAttention, type WeightDtype } from '../models/onnx-graph.js';
import { checkDecoderIo, readOnnxIo } from '../models/onnx-inputs.js';
import { decodeModel } from '../models/onnx-proto.js';
import type { WeightMap } from '../models/weight-names.js';
import type { ChatModel } from './chat-model.js';
import { DecoderWeights } from './decoder-weights.js';
import { DEFAULT_MAX_BATCH_SIZE } from './engine-options.js';
import { ModelCodec } from './model-codec.js';
import type { ExecutionProvider, GraphWithData, KvLayout } from './onnx-decoder.js';
import {
  DEFAULT_PREFILL_CHUNK_TOKENS,
  type GenerateRequest,
  type GenerateResult,
  GenerationEngine,
} from './rollout-engine.js';
import { rolloutMetrics } from './rollout-metrics.js';
import {
  type CacheLocation,
  chooseRunner,
  describeChoice,
  openPlanned,
  type RunnerChoiceOptions,
} from './runner-choice.js';

export interface RolloutModelOptions {
  /** A model directory (config.json, tokenizer.json, weights and/or model.onnx or onnx/model.onnx). */
  modelDir: string;
  /** The id clients name in requests. Default: the directory's name. */
  id?: string;
  provider?: ExecutionProvider | 'auto';
  /**
   * How the engine stores weights it exports from safetensors: float32 (default) or
   * float16/bfloat16 (half the memory for the engine's copy; onnxruntime computes in float32).
   */
  weightDtype?: WeightDtype;
  /**
   * The decoder graph the engine builds from the weights (or rebuilds around a model.onnx that
   * clawray exported): 'slots' (default: the cache stays in the engine's buffer and is read in
   * place; a step returns only its new keys/values, so no step copies the cache), 'standard'
   * (optimum's names: the cache concatenated and returned every step) or 'gqa' (onnxruntime's
   * GroupQueryAttention and fused norms over one shared buffer; head_dim a multiple of 16). A
   * model.onnx exported by another tool is always served as it is.
   */
  attention?: DecoderAttention;
  /**
   * Threads of onnxruntime's intra-op pool. Default one per physical core this process may run
   * on, within its cgroup's CPU quota; 0: onnxruntime's own default (OnnxDecoder).
   */
  intraOpNumThreads?: number;
  /** Whether idle onnxruntime threads spin (lower latency, busier cores). Default true. */
  allowSpinning?: boolean;
  /** Sequences decoding together. Default 16. */
  maxBatchSize?: number;
  /** Requests waiting before new ones are refused. Default 1024. */
  maxQueue?: number;
  /** Tokens per prefill step (GenerationEngineOptions.prefillChunkTokens). Default 512. */
  prefillChunkTokens?: number;
  /**
   * Bytes a request's estimate may reach before it is refused or waits
   * (GenerationEngineOptions.memoryBudgetBytes). Default half the machine's memory; with the
   * KV cache on a GPU (the device runner), half the GPU's memory less the weights, where
   * nvidia-smi says how much it has.
   */
  memoryBudgetBytes?: number;
  swapMode?: 'finish' | 'requeue';
  /** Exports the engine's metrics there. */
  registry?: Registry;
  logger?: Logger;
}

export const ONNX_FILE = MODEL_FILE;

/**
 * The attention graph a model gets when the options do not say: 'slots', the one under which
 * no decode step copies the cache through onnxruntime-node (whose binding turns every fetched
 * output into a new array: a graph that returns the cache pays a copy of all of it per step).
 */
export const DEFAULT_ATTENTION: DecoderAttention = 'slots';

/** Options of one weight update beyond its tensors. */
export interface WeightUpdateOptions {
  /** alpha / rank of LoRA adapters (`<module>.lora_A|B.weight`) in the update. */
  loraScale?: number;
}

/** Where the served graph came from, and why it cannot take updates when it cannot. */
interface GraphSource {
  description: string;
  weights: DecoderWeights | null;
  /** Path of a foreign model.onnx served as it is. */
  file?: string;
  refusal?: string;
}

/** The attention kind to build: the asked one (checked against the model), or the default. */
export function chooseAttention(
  config: ModelDir['config'],
  asked: DecoderAttention | undefined,
): DecoderAttention {
  if (asked !== undefined && !DECODER_ATTENTIONS.includes(asked)) {
    throw new ConfigError(`attention must be one of ${DECODER_ATTENTIONS.join(', ')}, got ${String(asked)}`, {
      fields: { option: 'attention' },
    });
  }
  const unsupported = gqaUnsupported(config);
  if (asked === 'gqa' && unsupported) {
    throw new ConfigError(`attention 'gqa' cannot serve this model: ${unsupported}`, {
      fields: { option: 'attention' },
    });
  }
  return asked ?? DEFAULT_ATTENTION;
}

function graphSource(
  dir: string,
  model: ModelDir,
  dtype: WeightDtype | undefined,
  attention: DecoderAttention,
  attentionAsked: boolean,
): GraphSource {
  const onnxFile = findOnnxModel(dir);
  if (!onnxFile) {
    return {
      description: 'safetensors export',
      weights: DecoderWeights.fromModelDir(dir, model.config, { dtype, attention }),
    };
  }
  const layout = {
    layers: model.dims.layers,
    kvHeads: model.dims.kvHeads,
    headDim: model.dims.headDim,
    vocab: model.dims.vocab,
  };
  const info = checkDecoderIo(readOnnxIo(onnxFile), layout);
  if (info.kvElemType !== 'float32') {
    throw new ConfigError(
      `${onnxFile}: the key/value cache is ${info.kvElemType}; this engine runs float32 decoders`,
      { fields: { file: onnxFile } },
    );
  }
  const weights = DecoderWeights.fromOnnx(
    decodeModel(readFileSync(onnxFile)),
    model.config,
    dirname(onnxFile),
    { attention },
  );
  if (weights) {
    // The export holds its weights in one dtype; converting them is `export-onnx`'s job.
    if (dtype !== undefined && weights.layout.dtype !== dtype) {
      throw new ConfigError(
        `weightDtype ${dtype} asked, but ${onnxFile} stores its weights as ${weights.layout.dtype}; ` +
          `re-export it (\`clawray model export-onnx ${dir} --dtype ${dtype}\`) or remove ${onnxFile} to serve the safetensors`,
        { fields: { option: 'weightDtype', file: onnxFile } },
      );
    }
    return { description: `${onnxFile} (clawray export)`, weights };
  }
  if (dtype !== undefined || attentionAsked) {
    throw new ConfigError(
      `${onnxFile} was not exported by clawray and is served as it is: ${dtype !== undefined ? 'weightDtype' : 'attention'} cannot apply to it ` +
        `(export the model with \`clawray model export-onnx ${dir}\`, or remove ${onnxFile} to serve the safetensors)`,
      { fields: { option: dtype !== undefined ? 'weightDtype' : 'attention', file: onnxFile } },
    );
  }
  return {
    description: onnxFile,
    weights: null,
    file: onnxFile,
    refusal:
      `${onnxFile} was not exported by clawray: its initializers do not map onto Hugging Face weight names, ` +
      `so weight updates cannot reach them; export the model with \`clawray model export-onnx ${dir}\` ` +
      `(or remove ${onnxFile} to serve the safetensors)`,
  };
}

export class RolloutModel extends ModelCodec implements ChatModel {
  readonly id: string;
  /** LoRA scales of updates in flight, keyed by the tensors handed to the engine. */
  private readonly loraScales = new WeakMap<Map<string, Float32Array>, number>();

  private constructor(
    model: ModelDir,
    private readonly weights: DecoderWeights | null,
    readonly engine: GenerationEngine,
    id: string,
  ) {
    super(model);
    this.id = id;
  }

  static async load(options: RolloutModelOptions): Promise<RolloutModel> {
    const dir = options.modelDir;
    const started = performance.now();
    // Weights are streamed into the engine's buffer below, never loaded whole as float32.
    const model = loadModelDir(dir, { weights: false });
    const layout: KvLayout = {
      layers: model.dims.layers,
      kvHeads: model.dims.kvHeads,
      headDim: model.dims.headDim,
      vocab: model.dims.vocab,
    };
    const defaultAttention = chooseAttention(model.config, options.attention);
    // A graph source per attention kind, built when a provider's plan needs it: the device
    // runner takes the GQA graph, a host cache the default one; only the chosen one is kept.
    const sources = new Map<DecoderAttention, GraphSource>();
    const sourceFor = (attention: DecoderAttention): GraphSource => {
      let source = sources.get(attention);
      if (!source) {
        source = graphSource(dir, model, options.weightDtype, attention, options.attention !== undefined);
        sources.set(attention, source);
      }
      return source;
    };
    const foreign = sourceFor(defaultAttention).weights === null;
    const loadOptions = {
      intraOpNumThreads: options.intraOpNumThreads,
      allowSpinning: options.allowSpinning,
    };
    const choiceOptions: RunnerChoiceOptions = {
      provider: options.provider ?? 'auto',
      layout,
      attention: options.attention,
      defaultAttention,
      gqaUnsupported: gqaUnsupported(model.config) ?? undefined,
      ...(foreign
        ? { file: sourceFor(defaultAttention).file }
        : { graphFor: (attention) => graphOf(sourceFor(attention).weights!) }),
      load: loadOptions,
      prefillChunkTokens: options.prefillChunkTokens ?? DEFAULT_PREFILL_CHUNK_TOKENS,
      maxBatchSize: options.maxBatchSize ?? DEFAULT_MAX_BATCH_SIZE,
    };
    const choice = await chooseRunner(choiceOptions);
    const source = sourceFor(choice.attention === 'foreign' ? defaultAttention : choice.attention);
    const weights = source.weights;
    const memoryBudgetBytes =
      options.memoryBudgetBytes ?? (await deviceBudget(choice.cache, weights?.bytes ?? 0));
    const logger = options.logger ?? createLogger({ component: 'rollout' });
    for (const { field, reason } of model.samplingDefaults.ignored) {
      logger.warn({ modelDir: dir, field }, `generation_config.json: ${field} ${reason}`);
    }
    logger.info(
      {
        modelDir: dir,
        provider: choice.provider,
        attention: choice.attention,
        kvCache: choice.cache,
        ...(choice.passedOver.length > 0 ? { passedOver: choice.passedOver } : {}),
        source: source.description,
        weightDtype: weights?.layout.dtype,
        weightBytes: weights?.bytes,
        ...(memoryBudgetBytes !== undefined ? { memoryBudgetBytes } : {}),
        loadSeconds: (performance.now() - started) / 1000,
      },
      `rollout model loaded: ${describeChoice(choice)}`,
    );
    let engine: GenerationEngine | undefined;
    const observer = options.registry ? rolloutMetrics(options.registry, () => engine) : undefined;
    const tokenizer = model.tokenizer;
    // Built on the first json_object request: every token's bytes, read once per step and token.
    let byteTable: Uint8Array[] | undefined;
    engine = new GenerationEngine(choice.runner, {
      eosTokenIds: model.eosTokenIds,
      maxContext: model.config.max_position_embeddings,
      attentionHeads: model.dims.heads,
      maxBatchSize: options.maxBatchSize,
      maxQueue: options.maxQueue,
      prefillChunkTokens: options.prefillChunkTokens,
      memoryBudgetBytes,
      swapMode: options.swapMode,
      detokenize: (ids) => tokenizer.decode(ids, { skipSpecialTokens: true }),
      tokenBytes: (id) => {
        byteTable ??= tokenByteTable(tokenizer, model.dims.vocab);
        return byteTable[id] ?? EMPTY_BYTES;
      },
      observer,
      // The serving session copied its weights when it was created, so the buffer is
      // rewritten at once; the new session starts serving when the engine swaps.
      reload: async (tensors) => {
        if (!weights)
          throw new ConfigError(`updateWeights: ${source.refusal}`, { fields: { file: source.file } });
        await weights.apply(tensors, rollout.loraScales.get(tensors));
        // The same provider and cache placement as the weights being replaced.
        return openPlanned(choice.provider, choice, choiceOptions);
      },
    });
    const rollout = new RolloutModel(
      model,
      weights,
      engine,
      options.id ?? (dir.split('/').filter(Boolean).pop() || 'model'),
    );
    return rollout;
  }

  get weightVersion(): number {
    return this.engine.weightVersion;
  }

  get provider(): ExecutionProvider {
    return this.engine.provider;
  }

  /** Where the batch's KV cache lives: host memory, or the device's (a GPU provider). */
  get kvCache(): CacheLocation {
    return this.engine.kvCacheLocation;
  }

  get modelDir(): ModelDir {
    return this.model;
  }

  /** The engine's weight buffer (null for a foreign model.onnx served as it is). */
  get weightStore(): DecoderWeights | null {
    return this.weights;
  }

  /** The served weights as float32 by Hugging Face name (a copy, for checks and benches). */
  readWeights(): WeightMap {
    if (!this.weights)
      throw new ConfigError(`${this.model.dir}: the served model.onnx holds weights clawray cannot name`);
    return this.weights.readAll();
  }

  generate(request: GenerateRequest): Promise<GenerateResult> {
    return this.engine.generate(request);
  }

  computeLogprobs(tokenIds: number[], fromIndex = 1, temperature = 1): Promise<number[]> {
    return this.engine.computeLogprobs(tokenIds, fromIndex, temperature);
  }

  /**
   * New weights by Hugging Face name (all of them, or the ones that changed), and/or LoRA
   * adapters by PEFT name (`<module>.lora_A|B.weight`) with `loraScale`, merged here into the
   * base weights.
   */
  updateWeights(version: number, tensors: WeightMap, options: WeightUpdateOptions = {}): Promise<void> {
    if (options.loraScale !== undefined) this.loraScales.set(tensors, options.loraScale);
    return this.engine.updateWeights(version, tensors);
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}

const EMPTY_BYTES = new Uint8Array(0);

/**
 * The memory budget of an engine whose KV cache lives on its GPU, when none is given: half the
 * GPU's memory (nvidia-smi), less the weights that share it, at least 1 GiB; undefined (the
 * host's default) for a host cache, or where nvidia-smi does not answer (a software Vulkan
 * driver, another vendor's GPU).
 */
async function deviceBudget(cache: CacheLocation, weightBytes: number): Promise<number | undefined> {
  if (cache !== 'device') return undefined;
  const gpu = await heldGpuMemoryBytes();
  return gpu === undefined ? undefined : Math.max(2 ** 30, Math.floor(gpu / 2) - weightBytes);
}

/** The graph and weights onnxruntime opens, as clawray's export holds them. */
function graphOf(weights: DecoderWeights): GraphWithData {
  return { graph: weights.graph, data: weights.data };
}

function tokenByteTable(tokenizer: { tokenBytes(id: number): number[] }, vocab: number): Uint8Array[] {
  return Array.from({ length: vocab }, (_, id) => Uint8Array.from(tokenizer.tokenBytes(id)));
}
