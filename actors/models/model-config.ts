/**
 * The decoder family (Qwen3 / Llama style: RMSNorm, RoPE, grouped-query attention, SwiGLU,
 * optional tied embeddings, Qwen3's per-head q/k RMSNorm) described by a Hugging Face
 * `config.json`. A real checkpoint's config loads as it is: fields that do not change the
 * math (initializer_range, use_cache, pretraining_tp, attention_dropout at 0 or at inference,
 * transformers_version…) pass through; every field that would change the math and that this
 * family does not compute is refused here with the field and the reason (`refusals`), never
 * loaded and computed as something else. RoPE (`rope_scaling` / `rope_parameters`) is
 * resolved by rope.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../../common/errors.js';
import { type RopeSpec, resolveRope } from './rope.js';

const DTYPES = ['float32', 'float16', 'bfloat16'] as const;

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
    /** Default hidden_size / num_attention_heads (null, as some configs write it, means the same). */
    head_dim: z.number().int().positive().nullish(),
    rms_norm_eps: z.number().positive().default(1e-6),
    /** Absent when `rope_parameters` (transformers 5) carries it; see `dims().rope`. */
    rope_theta: z.number().positive().optional(),
    /** `{rope_type | type, factor, …}` or null; resolved (or refused) by rope.ts. */
    rope_scaling: z.record(z.string(), z.unknown()).nullish(),
    /** transformers 5's spelling of rope_scaling + rope_theta. */
    rope_parameters: z.record(z.string(), z.unknown()).nullish(),
    max_position_embeddings: z.number().int().positive().default(2048),
    tie_word_embeddings: z.boolean().default(false),
    /** qwen2 has biases on q/k/v projections; llama/qwen3 default to none. */
    attention_bias: z.boolean().optional(),
    /** Default float32 (after `dtype`). */
    torch_dtype: z.enum(DTYPES).optional(),
    /** transformers ≥ 4.56 writes `dtype` in place of `torch_dtype`. */
    dtype: z.enum(DTYPES).optional(),
    bos_token_id: z.number().int().nullable().optional(),
    eos_token_id: z.union([z.number().int(), z.array(z.number().int())]).optional(),
  })
  .passthrough()
  .superRefine((c, ctx) => {
    for (const r of refusals(c)) ctx.addIssue({ code: 'custom', path: r.path, message: r.message });
    if (c.num_attention_heads % c.num_key_value_heads !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['num_key_value_heads'],
        message: `must divide num_attention_heads (${c.num_attention_heads})`,
      });
    }
    if ((c.head_dim ?? undefined) === undefined && c.hidden_size % c.num_attention_heads !== 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['head_dim'],
        message: 'is required when hidden_size is not divisible by num_attention_heads',
      });
    }
    const headDim = c.head_dim ?? c.hidden_size / c.num_attention_heads;
    if (Number.isInteger(headDim) && headDim % 2 !== 0) {
      ctx.addIssue({ code: 'custom', path: ['head_dim'], message: `must be even for RoPE, got ${headDim}` });
    }
    if (c.dtype !== undefined && c.torch_dtype !== undefined && c.dtype !== c.torch_dtype) {
      ctx.addIssue({
        code: 'custom',
        path: ['dtype'],
        message: `'${c.dtype}' disagrees with torch_dtype '${c.torch_dtype}'; keep one of them`,
      });
    }
    try {
      resolveRope(c);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const field = String(err.fields?.field ?? 'rope_scaling');
      ctx.addIssue({
        code: 'custom',
        path: field.split('.'),
        message: err.message.slice(field.length + 2),
      });
    }
  })
  .transform((c) => ({ ...c, torch_dtype: c.torch_dtype ?? c.dtype ?? 'float32' }));

export type ModelConfig = z.output<typeof modelConfigSchema>;

export interface Refusal {
  path: string[];
  message: string;
}

/** Activations HF maps to SiLU (`ACT2FN`): what the SwiGLU MLP computes. */
const SILU_NAMES = new Set(['silu', 'swish']);

/**
 * Fields of neighbouring families that change the math when set: a config of this
 * model_type carrying one was edited by hand or comes from another architecture.
 * Each maps to the value that leaves the math unchanged (null: absent or null only).
 */
const FOREIGN_MATH_FIELDS: Readonly<Record<string, number | boolean | null>> = {
  final_logit_softcapping: null,
  attn_logit_softcapping: null,
  query_pre_attn_scalar: null,
  logit_scale: 1,
  logits_scaling: 1,
  embedding_multiplier: 1,
  residual_multiplier: 1,
  attention_multiplier: null,
  num_experts: 0,
  num_local_experts: 0,
  use_qk_norm: false,
  no_rope_layers: null,
  use_mla: false,
};

/**
 * Every config field this family cannot honour, with the reason: loading such a checkpoint
 * would compute a different model than the one trained.
 */
export function refusals(raw: Record<string, unknown>): Refusal[] {
  const out: Refusal[] = [];
  const refuse = (field: string, message: string) => out.push({ path: [field], message });
  const type = raw.model_type;
  const act = raw.hidden_act ?? raw.hidden_activation;
  if (act !== undefined && act !== null && !(typeof act === 'string' && SILU_NAMES.has(act))) {
    refuse(
      raw.hidden_act !== undefined ? 'hidden_act' : 'hidden_activation',
      `'${String(act)}' is not supported: this family's MLP is SwiGLU (silu)`,
    );
  }
  if (raw.mlp_bias === true) {
    refuse('mlp_bias', 'true is not supported: the MLP projections of this family have no bias');
  }
  if (raw.attention_bias === true && (type === 'llama' || type === 'qwen3')) {
    refuse(
      'attention_bias',
      `true is not supported for ${String(type)}: HF then also puts a bias on o_proj, which this family does not compute`,
    );
  }
  const context = typeof raw.max_position_embeddings === 'number' ? raw.max_position_embeddings : 2048;
  const window = raw.sliding_window;
  // A window at least as long as the context never hides a token: the math is unchanged.
  const windowBinds = typeof window === 'number' && window < context;
  const layers = typeof raw.num_hidden_layers === 'number' ? raw.num_hidden_layers : 0;
  if (raw.use_sliding_window === true && windowBinds) {
    // Qwen2: layers from max_window_layers on use the window.
    const fromLayer = typeof raw.max_window_layers === 'number' ? raw.max_window_layers : 0;
    if (fromLayer < layers) {
      refuse(
        'use_sliding_window',
        `true with sliding_window ${window} < max_position_embeddings ${context} (layers ${fromLayer}..${layers - 1}) ` +
          'is not supported: this family attends over the whole context',
      );
    }
  }
  if (Array.isArray(raw.layer_types)) {
    const other = raw.layer_types.find(
      (t) => t !== 'full_attention' && !(t === 'sliding_attention' && !windowBinds),
    );
    if (other !== undefined) {
      refuse(
        'layer_types',
        `'${String(other)}' layers are not supported${other === 'sliding_attention' ? ` (sliding_window ${window} < max_position_embeddings ${context})` : ''}: this family has full attention in every layer`,
      );
    }
  }
  if (raw.quantization_config !== undefined && raw.quantization_config !== null) {
    const method = (raw.quantization_config as { quant_method?: unknown }).quant_method;
    refuse(
      'quantization_config',
      `a quantized checkpoint${method ? ` (${String(method)})` : ''} is not supported: load its bf16/fp16/fp32 weights`,
    );
  }
  for (const [field, neutral] of Object.entries(FOREIGN_MATH_FIELDS)) {
    const v = raw[field];
    if (v === undefined || v === null || v === neutral) continue;
    refuse(field, `${JSON.stringify(v)} is not supported by this family (${String(type)})`);
  }
  return out;
}

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
  /** The RoPE base (also in `rope`). */
  ropeTheta: number;
  /** RoPE type and parameters (rope.ts), the same for trainer and rollout. */
  rope: RopeSpec;
}

export function dims(c: ModelConfig): Dims {
  const rope = resolveRope(c);
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
    ropeTheta: rope.theta,
    rope,
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
  const field = result.error.issues[0]?.path.join('.') ?? '';
  throw new ConfigError(`${file}: not a config of the supported decoder family (${problems})`, {
    fields: { file, field },
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
  /** Qwen3-0.6B's shape (random weights): for benchmarks at a real size. */
  'qwen3-0.6b': {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    vocab_size: 151936,
    hidden_size: 1024,
    intermediate_size: 3072,
    num_hidden_layers: 28,
    num_attention_heads: 16,
    num_key_value_heads: 8,
    head_dim: 128,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    max_position_embeddings: 40960,
    tie_word_embeddings: true,
    torch_dtype: 'bfloat16',
  },
} as const satisfies Record<string, z.input<typeof modelConfigSchema>>;

export type PresetName = keyof typeof PRESETS;
