/**
 * Random model directories from a preset: what every test and example runs on. The same seed
 * gives byte-identical files on every machine, so a test can name a model by (preset, seed).
 */

import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { writeFileAtomic } from '../../common/atomic-file.js';
import { ConfigError } from '../../common/errors.js';
import { CHAT_TEMPLATE_FILE, QWEN_CHAT_TEMPLATE } from './chat-template.js';
import {
  type Dims,
  dims,
  type ModelConfig,
  PRESETS,
  type PresetName,
  parseModelConfig,
} from './model-config.js';
import { CONFIG_FILE, GENERATION_CONFIG_FILE } from './model-dir.js';
import { SAFETENSORS_FILE, SAFETENSORS_INDEX_FILE, writeSafetensors } from './safetensors.js';
import {
  buildByteLevelTokenizerJson,
  QWEN_ADDED_TOKENS,
  TOKENIZER_CONFIG_FILE,
  TOKENIZER_FILE,
  Tokenizer,
} from './tokenizer.js';
import { type WeightMap, weightSpecs } from './weight-names.js';

export type ModelDtype = 'f32' | 'f16' | 'bf16';

export const MODEL_DTYPES: readonly ModelDtype[] = ['f32', 'f16', 'bf16'];

const DTYPE_INFO = {
  f32: { safetensors: 'F32', torch: 'float32' },
  f16: { safetensors: 'F16', torch: 'float16' },
  bf16: { safetensors: 'BF16', torch: 'bfloat16' },
} as const;

export interface InitRandomModelOptions {
  preset: PresetName;
  outDir: string;
  /** Default 0. */
  seed?: number;
  /** Default 'f32'. */
  dtype?: ModelDtype;
  /** Write into a directory that already holds a config.json (default: refuse). */
  overwrite?: boolean;
  /** Context length (`max_position_embeddings`) in place of the preset's. */
  maxContext?: number;
}

export interface InitRandomModelResult {
  dir: string;
  config: ModelConfig;
  parameterCount: number;
  files: string[];
}

/**
 * sfc32 seeded through splitmix32: tiny, fast, and far better distributed than an LCG, and a
 * 128-bit state gives more than enough period for any preset.
 */
export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;
  private spare: number | null = null;

  constructor(seed: number) {
    let s = seed >>> 0;
    const splitmix = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = splitmix();
    this.b = splitmix();
    this.c = splitmix();
    this.d = splitmix();
    // The first outputs of sfc32 still echo the seed; discard them.
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Standard normal by Box-Muller (both values of each pair are used). */
  normal(): number {
    if (this.spare !== null) {
      const v = this.spare;
      this.spare = null;
      return v;
    }
    const u1 = 1 - this.next(); // (0, 1]: log(0) is never taken
    const u2 = this.next();
    const r = Math.sqrt(-2 * Math.log(u1));
    this.spare = r * Math.sin(2 * Math.PI * u2);
    return r * Math.cos(2 * Math.PI * u2);
  }
}

export const INIT_STD = 0.02;

/** Every tensor of `weightSpecs(d)`, drawn in spec order from one stream seeded by `seed`. */
export function randomWeights(d: Dims, seed: number): WeightMap {
  const rng = new Prng(seed);
  const out: WeightMap = new Map();
  for (const spec of weightSpecs(d)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (spec.init === 'ones') data.fill(1);
    else if (spec.init === 'normal') for (let i = 0; i < n; i++) data[i] = rng.normal() * INIT_STD;
    out.set(spec.name, data);
  }
  return out;
}

export function countParameters(d: Dims): number {
  return weightSpecs(d).reduce((sum, s) => sum + s.shape.reduce((a, b) => a * b, 1), 0);
}

const json = (v: unknown): string => `${JSON.stringify(v, null, 2)}\n`;

export function initRandomModel(options: InitRandomModelOptions): InitRandomModelResult {
  const { preset, outDir } = options;
  const seed = options.seed ?? 0;
  const dtype = options.dtype ?? 'f32';
  if (!Object.hasOwn(PRESETS, preset)) {
    throw new ConfigError(`unknown model preset '${preset}' (one of: ${Object.keys(PRESETS).join(', ')})`);
  }
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw new ConfigError(`seed must be a whole number ≥ 0, got ${seed}`);
  if (!Object.hasOwn(DTYPE_INFO, dtype)) {
    throw new ConfigError(`unknown dtype '${dtype}' (one of: ${MODEL_DTYPES.join(', ')})`);
  }
  const dir = resolve(outDir);
  if (existsSync(dir) && !statSync(dir).isDirectory()) {
    throw new ConfigError(`${dir}: exists and is not a directory`, { fields: { file: dir } });
  }
  if (existsSync(join(dir, CONFIG_FILE)) && !options.overwrite) {
    throw new ConfigError(
      `${dir}: already holds a model (${CONFIG_FILE}); choose another directory or overwrite`,
      {
        fields: { file: join(dir, CONFIG_FILE) },
      },
    );
  }
  mkdirSync(dir, { recursive: true });
  // Left over from an earlier model, these would take precedence over the files written here.
  for (const stale of [SAFETENSORS_INDEX_FILE, CHAT_TEMPLATE_FILE]) rmSync(join(dir, stale), { force: true });

  if (
    options.maxContext !== undefined &&
    !(Number.isSafeInteger(options.maxContext) && options.maxContext >= 16)
  )
    throw new ConfigError(`maxContext must be a whole number ≥ 16, got ${options.maxContext}`);
  const presetConfig = {
    ...PRESETS[preset],
    max_position_embeddings: options.maxContext ?? PRESETS[preset].max_position_embeddings,
  };
  const tokenizerJson = buildByteLevelTokenizerJson(presetConfig.vocab_size);
  const tokenizerConfig = tokenizerConfigJson(tokenizerJson, presetConfig.max_position_embeddings);
  const tokenizer = Tokenizer.fromJson(tokenizerJson, tokenizerConfig, join(dir, TOKENIZER_FILE));
  const endOfText = tokenizer.tokenId('<|endoftext|>')!;
  const imEnd = tokenizer.tokenId('<|im_end|>')!;

  const rawConfig = {
    ...presetConfig,
    torch_dtype: DTYPE_INFO[dtype].torch,
    bos_token_id: endOfText,
    eos_token_id: imEnd,
  };
  const config = parseModelConfig(rawConfig, join(dir, CONFIG_FILE));
  const d = dims(config);
  const weights = randomWeights(d, seed);
  const tensors = new Map(
    [...weightSpecs(d)].map((s) => [s.name, { shape: s.shape, data: weights.get(s.name)! }]),
  );

  const files = [
    CONFIG_FILE,
    SAFETENSORS_FILE,
    TOKENIZER_FILE,
    TOKENIZER_CONFIG_FILE,
    GENERATION_CONFIG_FILE,
  ];
  writeFileAtomic(join(dir, CONFIG_FILE), json(rawConfig));
  writeSafetensors(join(dir, SAFETENSORS_FILE), tensors, {
    dtype: DTYPE_INFO[dtype].safetensors,
    metadata: { format: 'pt' },
  });
  writeFileAtomic(join(dir, TOKENIZER_FILE), json(tokenizerJson));
  writeFileAtomic(join(dir, TOKENIZER_CONFIG_FILE), json(tokenizerConfig));
  writeFileAtomic(
    join(dir, GENERATION_CONFIG_FILE),
    json({
      bos_token_id: endOfText,
      eos_token_id: [imEnd, endOfText],
      pad_token_id: endOfText,
      do_sample: true,
    }),
  );
  return { dir, config, parameterCount: countParameters(d), files: files.map((f) => join(dir, f)) };
}

/** Qwen2.5's tokenizer_config.json layout, for our tokenizer. */
function tokenizerConfigJson(
  tokenizerJson: Record<string, unknown>,
  maxLength: number,
): Record<string, unknown> {
  const added = tokenizerJson.added_tokens as { id: number; content: string; special: boolean }[];
  const addedTokensDecoder: Record<string, unknown> = {};
  for (const t of added) {
    addedTokensDecoder[String(t.id)] = {
      content: t.content,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: t.special,
    };
  }
  return {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: addedTokensDecoder,
    additional_special_tokens: QWEN_ADDED_TOKENS.filter(
      (t) => t.special && t.content !== '<|endoftext|>',
    ).map((t) => t.content),
    bos_token: null,
    chat_template: QWEN_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: maxLength,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
}
