/**
 * A Hugging Face style model directory: `config.json`, safetensors weights (single file or
 * sharded), `tokenizer.json`, `tokenizer_config.json` (chat template, special tokens) and
 * optionally `generation_config.json`. Random models from `initRandomModel` and real
 * checkpoints load through the same code, and every mismatch is reported with the file.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ConfigError } from '../../common/errors.js';
import { type ChatMessage, type ChatTemplate, loadChatTemplate, type ToolSchema } from './chat-template.js';
import { type SamplingDefaults, samplingDefaults } from './generation-config.js';
import { type Dims, dims, eosTokenIds, loadModelConfig, type ModelConfig } from './model-config.js';
import { loadTensors, type SourcedTensor } from './safetensors.js';
import { Tokenizer } from './tokenizer.js';
import { type WeightMap, weightSpecs } from './weight-names.js';

export const CONFIG_FILE = 'config.json';
export const GENERATION_CONFIG_FILE = 'generation_config.json';

export interface ModelDir {
  dir: string;
  config: ModelConfig;
  dims: Dims;
  /** Exactly the tensors of `weightSpecs(dims)`, as float32. Empty when loaded with `weights: false`. */
  weights: WeightMap;
  tokenizer: Tokenizer;
  /** Null for a model without a chat template (a base model). */
  chatTemplate: ChatTemplate | null;
  /** `generation_config.json` as it is ({} when absent). */
  generationConfig: Record<string, unknown>;
  /** What a request that omits temperature / top_p / top_k / max_tokens falls back to. */
  samplingDefaults: SamplingDefaults;
  /** Every id that ends a generation: generation_config, config.json and the tokenizer's eos. */
  eosTokenIds: number[];
}

export interface LoadModelDirOptions {
  /** Skip reading the weights (a rollout engine that runs an ONNX export needs only the rest). */
  weights?: boolean;
}

/**
 * Tensors a checkpoint may carry that the family does not use: rotary caches saved by older
 * transformers versions, and the lm_head of a tied model (it equals the embedding).
 */
function ignorable(name: string, d: Dims): boolean {
  return name.endsWith('.rotary_emb.inv_freq') || (d.tied && name === 'lm_head.weight');
}

const MAX_LISTED = 12;

/** Checks tensors against the family's spec; throws one error listing every problem. */
export function checkWeights(tensors: ReadonlyMap<string, SourcedTensor>, d: Dims, dir: string): WeightMap {
  const problems: string[] = [];
  const files = [...new Set([...tensors.values()].map((t) => t.file))];
  const weightsFile = files.length === 1 ? relative(dir, files[0]) : 'the weight files';
  const weights: WeightMap = new Map();
  const expected = new Set<string>();
  for (const spec of weightSpecs(d)) {
    expected.add(spec.name);
    const t = tensors.get(spec.name);
    if (!t) {
      problems.push(`missing tensor '${spec.name}' (shape [${spec.shape}]) in ${weightsFile}`);
      continue;
    }
    if (t.shape.length !== spec.shape.length || t.shape.some((n, i) => n !== spec.shape[i])) {
      problems.push(
        `tensor '${spec.name}' in ${relative(dir, t.file)} has shape [${t.shape}] but config.json needs [${spec.shape}]`,
      );
      continue;
    }
    weights.set(spec.name, t.data);
  }
  for (const [name, t] of tensors) {
    if (!expected.has(name) && !ignorable(name, d)) {
      problems.push(`unexpected tensor '${name}' (shape [${t.shape}]) in ${relative(dir, t.file)}`);
    }
  }
  if (problems.length > 0) {
    const listed = problems.slice(0, MAX_LISTED);
    if (problems.length > MAX_LISTED) listed.push(`… and ${problems.length - MAX_LISTED} more`);
    const file = files.length === 1 ? files[0] : dir;
    throw new ConfigError(
      `${file}: the weights do not match ${join(dir, CONFIG_FILE)}: ${listed.join('; ')}`,
      {
        fields: { file, problems: problems.length },
      },
    );
  }
  return weights;
}

export function readGenerationConfig(dir: string): Record<string, unknown> {
  const file = join(dir, GENERATION_CONFIG_FILE);
  if (!existsSync(file)) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${file}: not valid JSON (${(err as Error).message})`, {
      cause: err,
      fields: { file },
    });
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(`${file}: expected a JSON object`, { fields: { file } });
  }
  return raw as Record<string, unknown>;
}

function idList(v: unknown): number[] {
  if (typeof v === 'number' && Number.isInteger(v)) return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number' && Number.isInteger(x));
  return [];
}

export function loadModelDir(dir: string, options: LoadModelDirOptions = {}): ModelDir {
  if (!existsSync(dir)) {
    throw new ConfigError(`${dir}: the model directory does not exist`, { fields: { file: dir } });
  }
  const configFile = join(dir, CONFIG_FILE);
  if (!existsSync(configFile)) {
    throw new ConfigError(`${configFile}: missing: a model directory needs a ${CONFIG_FILE}`, {
      fields: { file: configFile },
    });
  }
  const config = loadModelConfig(dir);
  const d = dims(config);
  const tokenizer = Tokenizer.load(dir);
  if (tokenizer.vocabSize > d.vocab) {
    throw new ConfigError(
      `${join(dir, 'tokenizer.json')}: the tokenizer has ${tokenizer.vocabSize} tokens but ${configFile} vocab_size is ${d.vocab}`,
      { fields: { file: join(dir, 'tokenizer.json') } },
    );
  }
  const chatTemplate = loadChatTemplate(dir);
  const generationConfig = readGenerationConfig(dir);
  const defaults = samplingDefaults(generationConfig, join(dir, GENERATION_CONFIG_FILE));
  const eos = [
    ...idList(generationConfig.eos_token_id),
    ...eosTokenIds(config),
    ...(tokenizer.eosTokenId === null ? [] : [tokenizer.eosTokenId]),
  ];
  const eosIds = [...new Set(eos)];
  for (const id of eosIds) {
    if (id < 0 || id >= d.vocab) {
      throw new ConfigError(
        `${configFile}: eos token id ${id} is outside the vocabulary (0..${d.vocab - 1})`,
        {
          fields: { file: configFile },
        },
      );
    }
  }
  const weights = options.weights === false ? new Map() : checkWeights(loadTensors(dir), d, dir);
  return {
    dir,
    config,
    dims: d,
    weights,
    tokenizer,
    chatTemplate,
    generationConfig,
    samplingDefaults: defaults,
    eosTokenIds: eosIds,
  };
}

/** The text of a chat prompt: the model's chat template with the generation prompt. */
export function renderChatPrompt(
  model: ModelDir,
  messages: ChatMessage[],
  tools?: ToolSchema[],
  extra?: Record<string, unknown>,
): string {
  if (!model.chatTemplate) {
    throw new ConfigError(
      `${model.dir} has no chat template (tokenizer_config.json chat_template); it is a base model`,
      { fields: { modelDir: model.dir } },
    );
  }
  return model.chatTemplate.render({ messages, tools, addGenerationPrompt: true, extra });
}

/** The token ids of a chat prompt: the model's chat template with the generation prompt. */
export function encodeChatPrompt(
  model: ModelDir,
  messages: ChatMessage[],
  tools?: ToolSchema[],
  extra?: Record<string, unknown>,
): number[] {
  return model.tokenizer.encode(renderChatPrompt(model, messages, tools, extra), { addSpecialTokens: false });
}
