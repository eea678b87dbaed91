/**
 * The decoder family (Qwen3 / Llama style: RMSNorm, RoPE, grouped-query attention, SwiGLU,
 * optional tied embeddings, Qwen3's per-head q/k RMSNorm) described by a Hugging Face
 * `config.json`. Only the fields this family uses are read; a real checkpoint's config
 * loads as it is.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../common/errors.js';

export const modelConfigSchema = z
  .object({
    architectures: z.array(z.string()).default(['Qwen3ForCausalLM']),
    /** `qwen3` has q/k norms and no attention bias; `llama` and `qwen2` do not have q/k norms. */
    model_type: z.enum(['qwen3', 'llama', 'qwen2']),
    vocab_size: z.number().int().positive(),
    hidden_size: z.number().int().positive(),
    intermediate_size: z.number().int().positive(),
    num_hidden_layers: z.number().int().positive(),
    num_attention_heads: z.number().int().positive(),
    num_key_value_heads: z.number().int().positive(),
    /** Default hidden_size / num_attention_heads. */
    head_dim: z.number().int().positive().optional(),
    rms_norm_eps: z.number().positive().default(1e-6),
    rope_theta: z.number().positive().default(10000),
    max_position_embeddings: z.number().int().positive().default(2048),
    tie_word_embeddings: z.boolean().default(false),
    /** qwen2 has biases on q/k/v projections; llama/qwen3 default to none. */
    attention_bias: z.boolean().optional(),
    torch_dtype: z.enum(['float32', 'float16', 'bfloat16']).default('float32'),
    bos_token_id: z.number().int().nullable().optional(),
    eos_token_id: z.union([z.number().int(), z.array(z.number().int())]).optional(),
  })
  .passthrough()
  .superRefine((c, ctx) => {
    if (c.num_attention_heads % c.num_key_value_heads !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['num_key_value_heads'],
        message: `must divide num_attention_heads (${c.num_attention_heads})`,
      });
    }
    if (c.head_dim === undefined && c.hidden_size % c.num_attention_heads !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['head_dim'],
        message: 'is required when hidden_size is not divisible by num_attention_heads',
      });
    }
  });

export type ModelConfig = z.output<typeof modelConfigSchema>;

/** Sizes every implementation of the family derives the same way. */
export interface Dims {
  vocab: number;
  hidden: number;
  intermediate: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** heads / kvHeads: query heads per key/value head. */
  groups: number;
  qkNorm: boolean;
  attentionBias: boolean;
  tied: boolean;
  eps: number;
  ropeTheta: number;
}

export function dims(c: ModelConfig): Dims {
  return {
    vocab: c.vocab_size,
    hidden: c.hidden_size,
    intermediate: c.intermediate_size,
    layers: c.num_hidden_layers,
    heads: c.num_attention_heads,
    kvHeads: c.num_key_value_heads,
    headDim: c.head_dim ?? c.hidden_size / c.num_attention_heads,
    groups: c.num_attention_heads / c.num_key_value_heads,
    qkNorm: c.model_type === 'qwen3',
    attentionBias: c.attention_bias ?? c.model_type === 'qwen2',
    tied: c.tie_word_embeddings,
    eps: c.rms_norm_eps,
    ropeTheta: c.rope_theta,
  };
}

export function eosTokenIds(c: ModelConfig): number[] {
  if (c.eos_token_id === undefined) return [];
  return Array.isArray(c.eos_token_id) ? c.eos_token_id : [c.eos_token_id];
}

export function parseModelConfig(raw: unknown, file: string): ModelConfig {
  const result = modelConfigSchema.safeParse(raw);
  if (result.success) return result.data;
  const problems = result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  throw new ConfigError(`${file}: not a config of the supported decoder family (${problems})`, {
    fields: { file },
  });
}

export function loadModelConfig(dir: string): ModelConfig {
  const file = join(dir, 'config.json');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`${file}: cannot read the model config (${(err as Error).message})`, {
      cause: err,
      fields: { file },
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${file}: not valid JSON (${(err as Error).message})`, {
      cause: err,
      fields: { file },
    });
  }
  return parseModelConfig(raw, file);
}

/** Small random models every test and example builds on (CPU-sized). */
export const PRESETS = {
  tiny: {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    vocab_size: 384,
    hidden_size: 64,
    intermediate_size: 128,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 1024,
    tie_word_embeddings: true,
    torch_dtype: 'float32',
  },
  small: {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    vocab_size: 384,
    hidden_size: 256,
    intermediate_size: 768,
    num_hidden_layers: 4,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    head_dim: 32,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 2048,
    tie_word_embeddings: false,
    torch_dtype: 'float32',
  },
} as const satisfies Record<string, z.input<typeof modelConfigSchema>>;

export type PresetName = keyof typeof PRESETS;
