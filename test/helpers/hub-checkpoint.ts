/**
 * Writes model directories in the layout a user downloads from the Hugging Face Hub, with
 * random weights and nothing downloaded: a Qwen3-0.6B-layout checkpoint (its real config.json
 * values, bf16, sharded `model-0000N-of-0000M.safetensors` + `model.safetensors.index.json`, a
 * byte-level BPE tokenizer.json whose added tokens are Qwen3's, at Qwen3's ids when the
 * vocabulary is full size, Qwen3's real chat template in tokenizer_config.json, Qwen3's
 * generation_config.json) and a Llama-3.2-1B-Instruct-layout one (`rope_scaling: llama3`,
 * Llama 3's special tokens and chat template).
 *
 * Full size is what benchmarks load; tests shrink it (`layers`, `vocab`, `config`) and keep
 * every other value real. Tensors are drawn shard by shard, so a full-size write holds one
 * shard in memory at a time. The same options and seed give byte-identical files.
 */

import { mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { dims, parseModelConfig } from '../../actors/models/model-config.js';
import { CONFIG_FILE, GENERATION_CONFIG_FILE } from '../../actors/models/model-dir.js';
import { type ModelDtype, Prng } from '../../actors/models/model-init.js';
import {
  DTYPE_BYTES,
  SAFETENSORS_INDEX_FILE,
  type TensorToWrite,
  writeSafetensors,
} from '../../actors/models/safetensors.js';
import {
  buildByteLevelTokenizerJson,
  TOKENIZER_CONFIG_FILE,
  TOKENIZER_FILE,
} from '../../actors/models/tokenizer.js';
import { type TensorSpec, weightSpecs } from '../../actors/models/weight-names.js';
import { writeFileAtomic } from '../../common/atomic-file.js';

/** Qwen/Qwen3-0.6B config.json as published (transformers 4.51). */
export const QWEN3_0_6B_CONFIG = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_scaling: null,
  rope_theta: 1000000,
  sliding_window: null,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.51.0',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
} as const;

/** Qwen/Qwen3-0.6B generation_config.json. */
export const QWEN3_GENERATION_CONFIG = {
  bos_token_id: 151643,
  do_sample: true,
  eos_token_id: [151645, 151643],
  pad_token_id: 151643,
  temperature: 0.6,
  top_k: 20,
  top_p: 0.95,
  transformers_version: '4.51.0',
} as const;

/** meta-llama/Llama-3.2-1B-Instruct config.json as published. */
export const LLAMA_3_2_1B_CONFIG = {
  architectures: ['LlamaForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 128000,
  eos_token_id: [128001, 128008, 128009],
  head_dim: 64,
  hidden_act: 'silu',
  hidden_size: 2048,
  initializer_range: 0.02,
  intermediate_size: 8192,
  max_position_embeddings: 131072,
  mlp_bias: false,
  model_type: 'llama',
  num_attention_heads: 32,
  num_hidden_layers: 16,
  num_key_value_heads: 8,
  pretraining_tp: 1,
  rms_norm_eps: 1e-5,
  rope_scaling: {
    factor: 32.0,
    high_freq_factor: 4.0,
    low_freq_factor: 1.0,
    original_max_position_embeddings: 8192,
    rope_type: 'llama3',
  },
  rope_theta: 500000.0,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.45.0.dev0',
  use_cache: true,
  vocab_size: 128256,
} as const;

/** meta-llama/Llama-3.2-1B-Instruct generation_config.json. */
export const LLAMA_3_GENERATION_CONFIG = {
  bos_token_id: 128000,
  do_sample: true,
  eos_token_id: [128001, 128008, 128009],
  temperature: 0.6,
  top_p: 0.9,
  transformers_version: '4.45.0.dev0',
} as const;

/** Qwen3's added tokens in id order from 151643 (tokenizer.json of Qwen3-0.6B). */
export const QWEN3_ADDED_TOKENS: readonly { content: string; special: boolean }[] = [
  { content: '<|endoftext|>', special: true },
  { content: '<|im_start|>', special: true },
  { content: '<|im_end|>', special: true },
  { content: '<|object_ref_start|>', special: true },
  { content: '<|object_ref_end|>', special: true },
  { content: '<|box_start|>', special: true },
  { content: '<|box_end|>', special: true },
  { content: '<|quad_start|>', special: true },
  { content: '<|quad_end|>', special: true },
  { content: '<|vision_start|>', special: true },
  { content: '<|vision_end|>', special: true },
  { content: '<|vision_pad|>', special: true },
  { content: '<|image_pad|>', special: true },
  { content: '<|video_pad|>', special: true },
  { content: '<tool_call>', special: false },
  { content: '</tool_call>', special: false },
  { content: '<|fim_prefix|>', special: false },
  { content: '<|fim_middle|>', special: false },
  { content: '<|fim_suffix|>', special: false },
  { content: '<|fim_pad|>', special: false },
  { content: '<|repo_name|>', special: false },
  { content: '<|file_sep|>', special: false },
  { content: '<tool_response>', special: false },
  { content: '</tool_response>', special: false },
  { content: '<think>', special: false },
  { content: '</think>', special: false },
];
const QWEN3_FIRST_ADDED_ID = 151643;

/** Llama 3's 256 special tokens from 128000, by offset (the rest are reserved_special_token_N). */
const LLAMA3_NAMED_SPECIALS: Readonly<Record<number, string>> = {
  0: '<|begin_of_text|>',
  1: '<|end_of_text|>',
  4: '<|finetune_right_pad_id|>',
  6: '<|start_header_id|>',
  7: '<|end_header_id|>',
  8: '<|eom_id|>',
  9: '<|eot_id|>',
  10: '<|python_tag|>',
};
const LLAMA3_FIRST_SPECIAL_ID = 128000;
const LLAMA3_SPECIALS = 256;

/** Llama 3's pre-tokenizer split (Qwen's, but digits in runs of up to three). */
const LLAMA3_SPLIT_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Meta-Llama-3-Instruct's chat template (the one without tool use). */
export const LLAMA3_CHAT_TEMPLATE =
  "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

/** Qwen3-0.6B's chat template, byte for byte (think blocks, tools, enable_thinking). */
export function qwen3ChatTemplate(): string {
  return readFileSync(new URL('../fixtures/hub/qwen3-chat-template.jinja', import.meta.url), 'utf8');
}

export type HubLayout = 'qwen3-0.6b' | 'llama-3.2-1b';

export interface HubCheckpointOptions {
  layout: HubLayout;
  outDir: string;
  /** Fewer decoder layers than the real model's (fast tests). */
  layers?: number;
  /**
   * A smaller vocabulary (at least the BPE tokens plus the added ones, ~700 for Qwen3 and
   * ~950 for Llama 3). The added tokens then follow the BPE tokens instead of sitting at
   * their real ids.
   */
  vocab?: number;
  /** More config.json values to replace (hidden_size, rope_scaling…), applied last. */
  config?: Record<string, unknown>;
  /** Default bf16, as published. */
  dtype?: ModelDtype;
  /** Most bytes per shard (a larger tensor gets a shard of its own). Default 256 MiB. */
  maxShardBytes?: number;
  /** At least this many shards (default 2, so the index is always exercised). */
  minShards?: number;
  /** Default 0. */
  seed?: number;
  /**
   * Write everything but the shards and the index (config-level tests of a full-size layout;
   * load it with `loadModelDir(dir, { weights: false })`).
   */
  skipWeights?: boolean;
}

export interface HubCheckpoint {
  dir: string;
  /** The config.json written. */
  config: Record<string, unknown>;
  parameterCount: number;
  /** Bytes of tensor data across the shards (the index's total_size). */
  weightBytes: number;
  shards: string[];
  files: string[];
}

const SAFETENSORS_DTYPE = { f32: 'F32', f16: 'F16', bf16: 'BF16' } as const;
const TORCH_DTYPE = { f32: 'float32', f16: 'float16', bf16: 'bfloat16' } as const;
const DEFAULT_MAX_SHARD_BYTES = 256 * 1024 * 1024;
const INIT_STD = 0.02;

const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

/** A byte-level BPE tokenizer.json (merges learned from clawray's built-in text) with these added tokens. */
function tokenizerJson(
  added: (bpeSize: number) => AddedToken[],
  splitPattern?: string,
): Record<string, unknown> {
  // Ask for more than the text can give: the builder then pads with reserved tokens, dropped here.
  const base = buildByteLevelTokenizerJson(4096) as {
    added_tokens: unknown[];
    model: { vocab: Record<string, number>; merges: unknown[] };
    pre_tokenizer: { pretokenizers: { pattern?: { Regex: string } }[] };
  };
  const bpeSize = Object.keys(base.model.vocab).length;
  base.added_tokens = added(bpeSize).map((t) => ({
    id: t.id,
    content: t.content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: t.special,
  }));
  if (splitPattern) base.pre_tokenizer.pretokenizers[0].pattern = { Regex: splitPattern };
  return base;
}

function addedTokensDecoder(tokens: AddedToken[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const t of tokens) {
    out[String(t.id)] = {
      content: t.content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: t.special,
    };
  }
  return out;
}

interface LayoutFiles {
  tokenizer: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  generationConfig: Record<string, unknown>;
  /** bos/eos ids of config.json, moved with the added tokens when the vocab shrinks. */
  ids: { bos_token_id: number; eos_token_id: number | number[] };
}

function qwen3Files(vocab: number, contextLength: number): LayoutFiles {
  let added: AddedToken[] = [];
  const tokenizer = tokenizerJson((bpeSize) => {
    const first = vocab >= QWEN3_FIRST_ADDED_ID + QWEN3_ADDED_TOKENS.length ? QWEN3_FIRST_ADDED_ID : bpeSize;
    if (first + QWEN3_ADDED_TOKENS.length > vocab) {
      throw new RangeError(
        `vocab ${vocab} is too small for ${bpeSize} BPE tokens and Qwen3's ${QWEN3_ADDED_TOKENS.length} added tokens`,
      );
    }
    added = QWEN3_ADDED_TOKENS.map((t, i) => ({ id: first + i, ...t }));
    return added;
  });
  const id = (content: string) => added.find((t) => t.content === content)!.id;
  const endOfText = id('<|endoftext|>');
  const imEnd = id('<|im_end|>');
  return {
    tokenizer,
    tokenizerConfig: {
      add_bos_token: false,
      add_prefix_space: false,
      added_tokens_decoder: addedTokensDecoder(added),
      additional_special_tokens: added
        .filter((t) => t.special && t.content !== '<|endoftext|>')
        .map((t) => t.content),
      bos_token: null,
      chat_template: qwen3ChatTemplate(),
      clean_up_tokenization_spaces: false,
      eos_token: '<|im_end|>',
      errors: 'replace',
      model_max_length: Math.max(contextLength, 131072),
      pad_token: '<|endoftext|>',
      split_special_tokens: false,
      tokenizer_class: 'Qwen2Tokenizer',
      unk_token: null,
    },
    generationConfig: {
      ...QWEN3_GENERATION_CONFIG,
      bos_token_id: endOfText,
      eos_token_id: [imEnd, endOfText],
      pad_token_id: endOfText,
    },
    ids: { bos_token_id: endOfText, eos_token_id: imEnd },
  };
}

function llama3Files(vocab: number, contextLength: number): LayoutFiles {
  let added: AddedToken[] = [];
  const tokenizer = tokenizerJson((bpeSize) => {
    const first = vocab >= LLAMA3_FIRST_SPECIAL_ID + LLAMA3_SPECIALS ? LLAMA3_FIRST_SPECIAL_ID : bpeSize;
    if (first + LLAMA3_SPECIALS > vocab) {
      throw new RangeError(
        `vocab ${vocab} is too small for ${bpeSize} BPE tokens and Llama 3's 256 special tokens`,
      );
    }
    let reserved = 2;
    added = Array.from({ length: LLAMA3_SPECIALS }, (_, i) => ({
      id: first + i,
      content: LLAMA3_NAMED_SPECIALS[i] ?? `<|reserved_special_token_${reserved++}|>`,
      special: true,
    }));
    return added;
  }, LLAMA3_SPLIT_PATTERN);
  const id = (content: string) => added.find((t) => t.content === content)!.id;
  const eos = [id('<|end_of_text|>'), id('<|eom_id|>'), id('<|eot_id|>')];
  return {
    tokenizer,
    tokenizerConfig: {
      added_tokens_decoder: addedTokensDecoder(added),
      bos_token: '<|begin_of_text|>',
      chat_template: LLAMA3_CHAT_TEMPLATE,
      clean_up_tokenization_spaces: true,
      eos_token: '<|eot_id|>',
      model_input_names: ['input_ids', 'attention_mask'],
      model_max_length: contextLength,
      tokenizer_class: 'PreTrainedTokenizerFast',
    },
    generationConfig: {
      ...LLAMA_3_GENERATION_CONFIG,
      bos_token_id: id('<|begin_of_text|>'),
      eos_token_id: eos,
    },
    ids: { bos_token_id: id('<|begin_of_text|>'), eos_token_id: eos },
  };
}

/** Shards as HF's `save_pretrained` cuts them: tensors in order, a new shard when the next one would overflow. */
function planShards(
  specs: TensorSpec[],
  bytesPer: number,
  maxShardBytes: number,
  minShards: number,
): TensorSpec[][] {
  const total = specs.reduce((s, t) => s + t.shape.reduce((a, b) => a * b, 1) * bytesPer, 0);
  const limit = Math.min(maxShardBytes, Math.ceil(total / minShards));
  const shards: TensorSpec[][] = [[]];
  let size = 0;
  for (const spec of specs) {
    const bytes = spec.shape.reduce((a, b) => a * b, 1) * bytesPer;
    if (size > 0 && size + bytes > limit) {
      shards.push([]);
      size = 0;
    }
    shards[shards.length - 1].push(spec);
    size += bytes;
  }
  return shards;
}

export function writeHubCheckpoint(options: HubCheckpointOptions): HubCheckpoint {
  const dir = resolve(options.outDir);
  const dtype = options.dtype ?? 'bf16';
  const seed = options.seed ?? 0;
  const real = options.layout === 'qwen3-0.6b' ? QWEN3_0_6B_CONFIG : LLAMA_3_2_1B_CONFIG;
  const vocab = options.vocab ?? real.vocab_size;
  const base: Record<string, unknown> = {
    ...real,
    num_hidden_layers: options.layers ?? real.num_hidden_layers,
    vocab_size: vocab,
    torch_dtype: TORCH_DTYPE[dtype],
    ...(options.layout === 'qwen3-0.6b'
      ? { max_window_layers: options.layers ?? real.num_hidden_layers }
      : {}),
  };
  Object.assign(base, options.config ?? {});
  const context = base.max_position_embeddings as number;
  const files = options.layout === 'qwen3-0.6b' ? qwen3Files(vocab, context) : llama3Files(vocab, context);
  const rawConfig = { ...base, ...files.ids, ...(options.config ?? {}) };
  mkdirSync(dir, { recursive: true });
  const config = parseModelConfig(rawConfig, join(dir, CONFIG_FILE));
  const d = dims(config);

  const specs = weightSpecs(d);
  const bytesPer = DTYPE_BYTES[SAFETENSORS_DTYPE[dtype]];
  const plan = planShards(
    specs,
    bytesPer,
    options.maxShardBytes ?? DEFAULT_MAX_SHARD_BYTES,
    options.minShards ?? 2,
  );
  const rng = new Prng(seed);
  const weightMap: Record<string, string> = {};
  const shards: string[] = [];
  const parameterCount = specs.reduce((sum, t) => sum + t.shape.reduce((a, b) => a * b, 1), 0);
  const weightBytes = parameterCount * bytesPer;
  if (options.skipWeights) plan.length = 0;
  plan.forEach((shardSpecs, i) => {
    const name = `model-${String(i + 1).padStart(5, '0')}-of-${String(plan.length).padStart(5, '0')}.safetensors`;
    const tensors = new Map<string, TensorToWrite>();
    for (const spec of shardSpecs) {
      const n = spec.shape.reduce((a, b) => a * b, 1);
      const data = new Float32Array(n);
      if (spec.init === 'ones') data.fill(1);
      else if (spec.init === 'normal') for (let k = 0; k < n; k++) data[k] = rng.normal() * INIT_STD;
      tensors.set(spec.name, { shape: spec.shape, data });
      weightMap[spec.name] = name;
    }
    writeSafetensors(join(dir, name), tensors, {
      dtype: SAFETENSORS_DTYPE[dtype],
      metadata: { format: 'pt' },
    });
    shards.push(join(dir, name));
  });
  // HF sorts the weight map by tensor name.
  const sortedMap = Object.fromEntries(
    Object.entries(weightMap).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
  );
  if (!options.skipWeights) {
    writeFileAtomic(
      join(dir, SAFETENSORS_INDEX_FILE),
      json({ metadata: { total_size: weightBytes }, weight_map: sortedMap }),
    );
  }
  writeFileAtomic(join(dir, CONFIG_FILE), json(rawConfig));
  writeFileAtomic(join(dir, TOKENIZER_FILE), json(files.tokenizer));
  writeFileAtomic(join(dir, TOKENIZER_CONFIG_FILE), json(files.tokenizerConfig));
  writeFileAtomic(join(dir, GENERATION_CONFIG_FILE), json(files.generationConfig));
  const written = [CONFIG_FILE, TOKENIZER_FILE, TOKENIZER_CONFIG_FILE, GENERATION_CONFIG_FILE];
  if (!options.skipWeights) written.push(SAFETENSORS_INDEX_FILE);
  return {
    dir,
    config: rawConfig,
    parameterCount,
    weightBytes,
    shards,
    files: [...written.map((f) => join(dir, f)), ...shards],
  };
}
