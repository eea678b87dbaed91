/**
 * The RoPE scalings the parity tests run (rope-parity.test.ts against a float64 reference,
 * gqa-decoder.test.ts between the two attention graphs): name, model type, `rope_scaling`.
 */
export type RopeScalingCase = [
  name: string,
  modelType: 'qwen3' | 'llama',
  scaling: Record<string, number | string | boolean> | null,
];

export const ROPE_SCALINGS: RopeScalingCase[] = [
  ['default', 'qwen3', null],
  ['linear', 'llama', { rope_type: 'linear', factor: 2 }],
  // The legacy `type` spelling is read the same way.
  ['dynamic', 'qwen3', { type: 'dynamic', factor: 3 }],
  [
    'llama3',
    'llama',
    {
      rope_type: 'llama3',
      factor: 8,
      low_freq_factor: 1,
      high_freq_factor: 4,
      original_max_position_embeddings: 256,
    },
  ],
  ['yarn', 'qwen3', { rope_type: 'yarn', factor: 4, original_max_position_embeddings: 64 }],
  [
    'yarn (mscale, untruncated, betas)',
    'llama',
    {
      rope_type: 'yarn',
      factor: 8,
      mscale: 0.9,
      mscale_all_dim: 0.5,
      beta_fast: 16,
      beta_slow: 2,
      truncate: false,
    },
  ],
];
