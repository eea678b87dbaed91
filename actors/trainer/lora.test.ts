import { describe, expect, it } from 'vitest';
import {
  initLoraAdapters,
  type LoraConfig,
  loraParamNames,
  loraParams,
  loraScale,
  loraTargets,
  mergeAllLora,
  mergeLora,
} from './lora.js';

const f32 = (...xs: number[]) => Float32Array.from(xs);
const config: LoraConfig = { rank: 2, alpha: 4, dropout: 0.05, targetModules: ['q_proj', 'v_proj'] };

const names = [
  'model.embed_tokens.weight',
  'model.layers.0.self_attn.q_proj.weight',
  'model.layers.0.self_attn.q_proj.bias',
  'model.layers.0.self_attn.k_proj.weight',
  'model.layers.0.self_attn.v_proj.weight',
  'model.layers.1.self_attn.q_proj.weight',
  'model.layers.1.self_attn.v_proj.weight',
  'model.layers.1.mlp.up_proj.weight',
];

describe('LoRA', () => {
  it('picks the target modules’ weights', () => {
    expect(loraTargets(names, config)).toEqual([
      'model.layers.0.self_attn.q_proj.weight',
      'model.layers.0.self_attn.v_proj.weight',
      'model.layers.1.self_attn.q_proj.weight',
      'model.layers.1.self_attn.v_proj.weight',
    ]);
    expect(loraTargets(names, { ...config, targetModules: ['up_proj'] })).toEqual([
      'model.layers.1.mlp.up_proj.weight',
    ]);
    expect(loraParamNames('model.layers.0.self_attn.q_proj.weight')).toEqual({
      A: 'model.layers.0.self_attn.q_proj.lora_A.weight',
      B: 'model.layers.0.self_attn.q_proj.lora_B.weight',
    });
    expect(() => loraTargets(names, { ...config, rank: 0 })).toThrow(/rank/);
    expect(() => loraTargets(names, { ...config, dropout: 1 })).toThrow(/dropout/);
    expect(() => loraTargets(names, { ...config, targetModules: [] })).toThrow(/targetModules/);
  });

  it('initialises A small and seeded, B zero', () => {
    const target = 'model.layers.0.self_attn.q_proj.weight';
    const shapes = new Map([[target, [6, 16]]]);
    const a1 = initLoraAdapters([target], shapes, config, 7).get(target)!;
    const a2 = initLoraAdapters([target], shapes, config, 7).get(target)!;
    const a3 = initLoraAdapters([target], shapes, config, 8).get(target)!;
    expect(a1.A.length).toBe(2 * 16);
    expect(a1.B.length).toBe(6 * 2);
    expect([...a1.B].every((x) => x === 0)).toBe(true);
    expect(a1.A).toEqual(a2.A);
    expect(a1.A).not.toEqual(a3.A);
    expect([...a1.A].every((x) => Math.abs(x) <= 1 / 4)).toBe(true); // bound 1/√in = 1/4
    expect([...a1.A].some((x) => x !== 0)).toBe(true);
    const params = loraParams(new Map([[target, a1]]));
    expect(params.get('model.layers.0.self_attn.q_proj.lora_A.weight')).toBe(a1.A);
    expect(() => initLoraAdapters([target], new Map([[target, [6]]]), config, 1)).toThrow(/\[out, in\]/);
  });

  it('merging with B = 0 is the identity', () => {
    const target = 'w.q_proj.weight';
    const W = Float32Array.from({ length: 12 }, (_, i) => i / 7 - 0.5);
    const adapter = initLoraAdapters([target], new Map([[target, [3, 4]]]), config, 1).get(target)!;
    const merged = mergeLora(W, adapter.A, adapter.B, loraScale(config));
    expect(merged).toEqual(W);
    expect(merged).not.toBe(W);
    const all = mergeAllLora(new Map([[target, W]]), new Map([[target, adapter]]), config);
    expect(all.get(target)).toEqual(W);
  });

  it('merges a hand-computed 2×2 case', () => {
    // W = [[1, 2], [3, 4]], rank 1: A = [[1, 2]] (1×2), B = [[3], [4]] (2×1), scale = alpha/rank = 0.5.
    // B·A = [[3, 6], [4, 8]];  W + 0.5·B·A = [[2.5, 5], [5, 8]].
    expect([...mergeLora(f32(1, 2, 3, 4), f32(1, 2), f32(3, 4), 0.5)]).toEqual([2.5, 5, 5, 8]);
    // rank 2: A = I, B = [[1, 0], [0, -1]], scale 2 → W + 2·B = [[3, 2], [3, 2]].
    expect([
      ...mergeLora(f32(1, 2, 3, 4), f32(1, 0, 0, 1), f32(1, 0, 0, -1), 2, { out: 2, in: 2, rank: 2 }),
    ]).toEqual([3, 2, 3, 2]);
    expect(() => mergeLora(f32(1, 2, 3, 4), f32(1, 2, 3), f32(3, 4), 1)).toThrow(/do not fit/);
  });
});
