import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { LLAMA_3_2_1B_CONFIG, QWEN3_0_6B_CONFIG } from '../../test/helpers/hub-checkpoint.js';
import { dims, parseModelConfig } from './model-config.js';
import { describeRope, ropeFrequencies } from './rope.js';

/** Qwen/Qwen2.5-0.5B-Instruct config.json as published. */
const QWEN2_5_0_5B = {
  architectures: ['Qwen2ForCausalLM'],
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  hidden_act: 'silu',
  hidden_size: 896,
  initializer_range: 0.02,
  intermediate_size: 4864,
  max_position_embeddings: 32768,
  max_window_layers: 21,
  model_type: 'qwen2',
  num_attention_heads: 14,
  num_hidden_layers: 24,
  num_key_value_heads: 2,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000.0,
  sliding_window: 32768,
  tie_word_embeddings: true,
  torch_dtype: 'bfloat16',
  transformers_version: '4.43.1',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

function refusal(raw: unknown): string {
  try {
    parseModelConfig(raw, 'config.json');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected the config to be refused');
}

describe('real configs load as published', () => {
  it('Qwen3-0.6B: head_dim 128 ≠ hidden/heads, tied, rope_scaling null, default RoPE', () => {
    const c = parseModelConfig(QWEN3_0_6B_CONFIG, 'config.json');
    const d = dims(c);
    expect(d).toMatchObject({ headDim: 128, heads: 16, kvHeads: 8, layers: 28, tied: true, qkNorm: true });
    expect(d.rope).toEqual({ type: 'default', theta: 1000000 });
    expect(c.torch_dtype).toBe('bfloat16');
  });

  it("Qwen3 with the model card's YaRN for 131k context", () => {
    const c = parseModelConfig(
      {
        ...QWEN3_0_6B_CONFIG,
        max_position_embeddings: 131072,
        rope_scaling: { rope_type: 'yarn', factor: 4.0, original_max_position_embeddings: 32768 },
      },
      'config.json',
    );
    const rope = dims(c).rope;
    expect(rope).toMatchObject({
      type: 'yarn',
      factor: 4,
      originalMaxPositions: 32768,
      betaFast: 32,
      betaSlow: 1,
    });
    // HF: attention_factor = 0.1 ln(4) + 1
    expect(ropeFrequencies(rope, 128).attentionScaling).toBeCloseTo(0.1 * Math.log(4) + 1, 12);
  });

  it('Qwen2.5-0.5B-Instruct: a sliding window that is off (use_sliding_window false) is accepted', () => {
    const d = dims(parseModelConfig(QWEN2_5_0_5B, 'config.json'));
    expect(d).toMatchObject({ headDim: 64, attentionBias: true, qkNorm: false });
  });

  it('Llama-3.2-1B-Instruct: llama3 rope_scaling', () => {
    const d = dims(parseModelConfig(LLAMA_3_2_1B_CONFIG, 'config.json'));
    expect(d.rope).toEqual({
      type: 'llama3',
      theta: 500000,
      factor: 32,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositions: 8192,
    });
    expect(describeRope(d.rope)).toBe(
      'llama3 (theta 500000, factor 32, lowFreqFactor 1, highFreqFactor 4, originalMaxPositions 8192)',
    );
    // Llama 3.1's published frequencies: the highest kept, the lowest divided by 32.
    const f = ropeFrequencies(d.rope, 64);
    expect(f.invFreq[0]).toBe(1);
    const plainLast = 1 / 500000 ** (62 / 64);
    expect(f.invFreq[31]).toBeCloseTo(plainLast / 32, 10);
  });

  it('transformers 5 spellings: rope_parameters with rope_theta, and dtype', () => {
    const { rope_theta: _t, rope_scaling: _s, torch_dtype: _d, ...rest } = LLAMA_3_2_1B_CONFIG;
    const c = parseModelConfig(
      {
        ...rest,
        dtype: 'bfloat16',
        rope_parameters: { ...LLAMA_3_2_1B_CONFIG.rope_scaling, rope_theta: 500000 },
      },
      'config.json',
    );
    expect(c.torch_dtype).toBe('bfloat16');
    expect(dims(c).rope).toMatchObject({ type: 'llama3', theta: 500000, factor: 32 });
    const plain = parseModelConfig(
      {
        ...QWEN3_0_6B_CONFIG,
        rope_theta: undefined,
        rope_parameters: { rope_type: 'default', rope_theta: 1e6 },
      },
      'config.json',
    );
    expect(dims(plain).rope).toEqual({ type: 'default', theta: 1e6 });
  });

  it('the legacy `type` spelling reads like rope_type; a sliding window as long as the context is harmless', () => {
    const c = parseModelConfig(
      {
        ...QWEN2_5_0_5B,
        use_sliding_window: true,
        sliding_window: 32768,
        rope_scaling: { type: 'linear', factor: 2 },
      },
      'config.json',
    );
    expect(dims(c).rope).toEqual({ type: 'linear', theta: 1000000, factor: 2 });
  });
});

describe('fields that would change the math are refused with the field and the reason', () => {
  const cases: Array<[string, Record<string, unknown>, RegExp]> = [
    [
      'a binding sliding window',
      { ...QWEN2_5_0_5B, use_sliding_window: true, sliding_window: 4096 },
      /use_sliding_window: true with sliding_window 4096 < max_position_embeddings 32768 \(layers 21\.\.23\)/,
    ],
    [
      'sliding layers in layer_types',
      { ...QWEN3_0_6B_CONFIG, sliding_window: 4096, layer_types: ['full_attention', 'sliding_attention'] },
      /layer_types: 'sliding_attention' layers are not supported/,
    ],
    [
      'gelu',
      { ...QWEN3_0_6B_CONFIG, hidden_act: 'gelu' },
      /hidden_act: 'gelu' is not supported: this family's MLP is SwiGLU/,
    ],
    ['mlp_bias', { ...LLAMA_3_2_1B_CONFIG, mlp_bias: true }, /mlp_bias: true is not supported/],
    [
      'llama attention bias',
      { ...LLAMA_3_2_1B_CONFIG, attention_bias: true },
      /attention_bias: true is not supported for llama: .*o_proj/,
    ],
    [
      'longrope',
      {
        ...LLAMA_3_2_1B_CONFIG,
        rope_scaling: { rope_type: 'longrope', short_factor: [1], long_factor: [2] },
      },
      /rope_scaling\.rope_type: 'longrope' is not supported \(supported: default, linear, dynamic, yarn, llama3\)/,
    ],
    [
      'type and rope_type disagreeing',
      { ...LLAMA_3_2_1B_CONFIG, rope_scaling: { ...LLAMA_3_2_1B_CONFIG.rope_scaling, type: 'yarn' } },
      /rope_scaling\.type: 'yarn' and rope_scaling\.rope_type 'llama3' disagree/,
    ],
    [
      'a llama3 rope_scaling without its factors',
      { ...LLAMA_3_2_1B_CONFIG, rope_scaling: { rope_type: 'llama3', factor: 8 } },
      /rope_scaling\.low_freq_factor: is required for this rope type/,
    ],
    [
      'partial rotary',
      { ...QWEN3_0_6B_CONFIG, partial_rotary_factor: 0.5 },
      /partial_rotary_factor: 0\.5 is not supported: this family rotates the whole head/,
    ],
    [
      'dynamic past the pretrained context',
      {
        ...QWEN3_0_6B_CONFIG,
        rope_scaling: { rope_type: 'dynamic', factor: 2, original_max_position_embeddings: 8192 },
      },
      /rope_scaling\.original_max_position_embeddings: \(8192\) differs from max_position_embeddings \(40960\)/,
    ],
    ['an odd head_dim', { ...QWEN3_0_6B_CONFIG, head_dim: 127 }, /head_dim: must be even for RoPE, got 127/],
    [
      'a quantized checkpoint',
      { ...QWEN3_0_6B_CONFIG, quantization_config: { quant_method: 'fp8' } },
      /quantization_config: a quantized checkpoint \(fp8\) is not supported/,
    ],
    [
      'logit softcapping',
      { ...QWEN3_0_6B_CONFIG, final_logit_softcapping: 30 },
      /final_logit_softcapping: 30 is not supported/,
    ],
    [
      'dtype against torch_dtype',
      { ...QWEN3_0_6B_CONFIG, dtype: 'float16' },
      /dtype: 'float16' disagrees with torch_dtype 'bfloat16'/,
    ],
    [
      'rope_parameters beside rope_scaling',
      { ...LLAMA_3_2_1B_CONFIG, rope_parameters: { rope_type: 'default' } },
      /rope_parameters: and rope_scaling are both set/,
    ],
  ];
  it.each(cases)('%s', (_name, raw, message) => {
    expect(refusal(raw)).toMatch(message);
  });

  it('names the first refused field in the error fields', () => {
    try {
      parseModelConfig({ ...QWEN3_0_6B_CONFIG, hidden_act: 'relu' }, '/m/config.json');
      expect.unreachable();
    } catch (err) {
      expect((err as ConfigError).fields).toMatchObject({ file: '/m/config.json', field: 'hidden_act' });
    }
  });

  it('accepts what does not change the math: attention_dropout, pretraining_tp, unknown bookkeeping', () => {
    expect(() =>
      parseModelConfig(
        {
          ...LLAMA_3_2_1B_CONFIG,
          attention_dropout: 0.1,
          pretraining_tp: 2,
          _name_or_path: 'x',
          hidden_act: 'swish',
        },
        'config.json',
      ),
    ).not.toThrow();
  });
});
