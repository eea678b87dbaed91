/**
 * The family's tensors with their Hugging Face names and shapes (PyTorch layout: a Linear's
 * weight is [out, in]). Trainer, exporter and random init all iterate this one list.
 */
import type { Dims } from './model-config.js';

export interface TensorSpec {
  name: string;
  shape: number[];
  /** How a random init fills it. */
  init: 'normal' | 'ones' | 'zeros';
}

export const layerPrefix = (i: number): string => `model.layers.${i}`;

export function weightSpecs(d: Dims): TensorSpec[] {
  const specs: TensorSpec[] = [
    { name: 'model.embed_tokens.weight', shape: [d.vocab, d.hidden], init: 'normal' },
  ];
  const q = d.heads * d.headDim;
  const kv = d.kvHeads * d.headDim;
  for (let i = 0; i < d.layers; i++) {
    const p = layerPrefix(i);
    specs.push(
      { name: `${p}.input_layernorm.weight`, shape: [d.hidden], init: 'ones' },
      { name: `${p}.self_attn.q_proj.weight`, shape: [q, d.hidden], init: 'normal' },
      { name: `${p}.self_attn.k_proj.weight`, shape: [kv, d.hidden], init: 'normal' },
      { name: `${p}.self_attn.v_proj.weight`, shape: [kv, d.hidden], init: 'normal' },
    );
    if (d.attentionBias) {
      specs.push(
        { name: `${p}.self_attn.q_proj.bias`, shape: [q], init: 'zeros' },
        { name: `${p}.self_attn.k_proj.bias`, shape: [kv], init: 'zeros' },
        { name: `${p}.self_attn.v_proj.bias`, shape: [kv], init: 'zeros' },
      );
    }
    if (d.qkNorm) {
      specs.push(
        { name: `${p}.self_attn.q_norm.weight`, shape: [d.headDim], init: 'ones' },
        { name: `${p}.self_attn.k_norm.weight`, shape: [d.headDim], init: 'ones' },
      );
    }
    specs.push(
      { name: `${p}.self_attn.o_proj.weight`, shape: [d.hidden, q], init: 'normal' },
      { name: `${p}.post_attention_layernorm.weight`, shape: [d.hidden], init: 'ones' },
      { name: `${p}.mlp.gate_proj.weight`, shape: [d.intermediate, d.hidden], init: 'normal' },
      { name: `${p}.mlp.up_proj.weight`, shape: [d.intermediate, d.hidden], init: 'normal' },
      { name: `${p}.mlp.down_proj.weight`, shape: [d.hidden, d.intermediate], init: 'normal' },
    );
  }
  specs.push({ name: 'model.norm.weight', shape: [d.hidden], init: 'ones' });
  if (!d.tied) specs.push({ name: 'lm_head.weight', shape: [d.vocab, d.hidden], init: 'normal' });
  return specs;
}

/** Weights by name as flat float32 arrays (row-major in the spec's shape). */
export type WeightMap = Map<string, Float32Array>;
