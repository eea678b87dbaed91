/**
 * Logits parity for every RoPE scaling the family supports: an independent float64 decoder
 * written as plain loops (RMSNorm, Qwen3 q/k norm, RoPE with HF's inverse frequencies for each
 * scaling, GQA, SwiGLU), against the TF.js decoder (trainer) and the ONNX export run in
 * onnxruntime-node (rollout engines), on small configs at positions where the scalings differ.
 */
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { dims, type ModelConfig, modelConfigSchema } from './model-config.js';
import { Prng } from './model-init.js';
import { exportDecoderOnnx } from './onnx-export.js';
import { ropeTableData } from './onnx-graph.js';
import { ROPE_SCALINGS } from './rope-cases.test-support.js';
import { selectBackend } from './tfjs-backend.js';
import { TfjsDecoder } from './tfjs-decoder.js';
import { layerPrefix, type WeightMap, weightSpecs } from './weight-names.js';

const TOL = 1e-4;

// ---- an independent float64 reference ------------------------------------------------------

type Scaling = Record<string, number | string | boolean> | null;

/** HF's inv_freq for each rope type, in float64, straight from modeling_rope_utils.py. */
function referenceInvFreq(
  scaling: Scaling,
  theta: number,
  dim: number,
  maxPos: number,
  seqLen: number,
): {
  inv: number[];
  attention: number;
} {
  const type = scaling === null ? 'default' : String(scaling.rope_type ?? scaling.type);
  const plain = (base: number) => Array.from({ length: dim / 2 }, (_, j) => 1 / base ** ((2 * j) / dim));
  const s = scaling ?? {};
  const factor = Number(s.factor);
  if (type === 'default') return { inv: plain(theta), attention: 1 };
  if (type === 'linear') return { inv: plain(theta).map((f) => f / factor), attention: 1 };
  if (type === 'dynamic') {
    const L = Math.max(seqLen, maxPos);
    const base = theta * ((factor * L) / maxPos - (factor - 1)) ** (dim / (dim - 2));
    return { inv: plain(base), attention: 1 };
  }
  if (type === 'llama3') {
    const low = Number(s.low_freq_factor);
    const high = Number(s.high_freq_factor);
    const old = Number(s.original_max_position_embeddings);
    const inv = plain(theta).map((f) => {
      const wavelen = (2 * Math.PI) / f;
      if (wavelen < old / high) return f;
      if (wavelen > old / low) return f / factor;
      const smooth = (old / wavelen - low) / (high - low);
      return (1 - smooth) * (f / factor) + smooth * f;
    });
    return { inv, attention: 1 };
  }
  if (type === 'yarn') {
    const original = Number(s.original_max_position_embeddings ?? maxPos);
    const mscale = (scale: number, m: number) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
    let attention: number;
    if (s.attention_factor !== undefined) attention = Number(s.attention_factor);
    else if (s.mscale && s.mscale_all_dim)
      attention = mscale(factor, Number(s.mscale)) / mscale(factor, Number(s.mscale_all_dim));
    else attention = mscale(factor, 1);
    const betaFast = Number(s.beta_fast ?? 32);
    const betaSlow = Number(s.beta_slow ?? 1);
    const corr = (rot: number) => (dim * Math.log(original / (rot * 2 * Math.PI))) / (2 * Math.log(theta));
    let lo = corr(betaFast);
    let hi = corr(betaSlow);
    if (s.truncate !== false) {
      lo = Math.floor(lo);
      hi = Math.ceil(hi);
    }
    lo = Math.max(lo, 0);
    hi = Math.min(hi, dim - 1);
    if (lo === hi) hi += 0.001;
    const inv = Array.from({ length: dim / 2 }, (_, j) => {
      const posFreq = theta ** ((2 * j) / dim);
      const extrapolationFactor = 1 - Math.min(1, Math.max(0, (j - lo) / (hi - lo)));
      return (1 / (factor * posFreq)) * (1 - extrapolationFactor) + (1 / posFreq) * extrapolationFactor;
    });
    return { inv, attention };
  }
  throw new Error(`reference has no rope type ${type}`);
}

interface RawConfig {
  model_type: string;
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  rms_norm_eps: number;
  rope_theta: number;
  max_position_embeddings: number;
  tie_word_embeddings: boolean;
  rope_scaling: Scaling;
}

/** Logits [seq][vocab] of one causal sequence at `positions`, every sum in float64. */
function referenceLogits(c: RawConfig, W: WeightMap, ids: number[], positions: number[]): number[][] {
  const hd = c.head_dim;
  const H = c.num_attention_heads;
  const KV = c.num_key_value_heads;
  const get = (n: string) => W.get(n)!;
  const matVec = (name: string, x: number[], outDim: number) => {
    const w = get(name);
    const y = new Array<number>(outDim).fill(0);
    for (let o = 0; o < outDim; o++) for (let i = 0; i < x.length; i++) y[o] += w[o * x.length + i] * x[i];
    return y;
  };
  const rms = (x: number[], w: Float32Array) => {
    const ms = x.reduce((s, v) => s + v * v, 0) / x.length;
    return x.map((v, i) => (v / Math.sqrt(ms + c.rms_norm_eps)) * w[i]);
  };
  const seqLen = Math.max(...positions) + 1;
  const { inv, attention } = referenceInvFreq(
    c.rope_scaling,
    c.rope_theta,
    hd,
    c.max_position_embeddings,
    seqLen,
  );
  const rotate = (x: number[], pos: number) => {
    const half = hd / 2;
    const out = new Array<number>(hd);
    for (let j = 0; j < half; j++) {
      const cos = Math.cos(pos * inv[j]) * attention;
      const sin = Math.sin(pos * inv[j]) * attention;
      out[j] = x[j] * cos - x[j + half] * sin;
      out[j + half] = x[j + half] * cos + x[j] * sin;
    }
    return out;
  };
  const heads = (v: number[], n: number) =>
    Array.from({ length: n }, (_, h) => v.slice(h * hd, (h + 1) * hd));
  const embed = get('model.embed_tokens.weight');
  let hs = ids.map((id) => Array.from(embed.subarray(id * c.hidden_size, (id + 1) * c.hidden_size)));
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = layerPrefix(l);
    const qs: number[][][] = [];
    const ks: number[][][] = [];
    const vs: number[][][] = [];
    for (let t = 0; t < ids.length; t++) {
      const x = rms(hs[t], get(`${p}.input_layernorm.weight`));
      let q = heads(matVec(`${p}.self_attn.q_proj.weight`, x, H * hd), H);
      let k = heads(matVec(`${p}.self_attn.k_proj.weight`, x, KV * hd), KV);
      if (c.model_type === 'qwen3') {
        q = q.map((e) => rms(e, get(`${p}.self_attn.q_norm.weight`)));
        k = k.map((e) => rms(e, get(`${p}.self_attn.k_norm.weight`)));
      }
      qs.push(q.map((e) => rotate(e, positions[t])));
      ks.push(k.map((e) => rotate(e, positions[t])));
      vs.push(heads(matVec(`${p}.self_attn.v_proj.weight`, x, KV * hd), KV));
    }
    hs = hs.map((h, t) => {
      const attn: number[] = [];
      for (let head = 0; head < H; head++) {
        const g = Math.floor(head / (H / KV));
        const scores = [];
        for (let s = 0; s <= t; s++) {
          let dot = 0;
          for (let e = 0; e < hd; e++) dot += qs[t][head][e] * ks[s][g][e];
          scores.push(dot / Math.sqrt(hd));
        }
        const max = Math.max(...scores);
        const exps = scores.map((v) => Math.exp(v - max));
        const z = exps.reduce((a, b) => a + b, 0);
        for (let e = 0; e < hd; e++) {
          let acc = 0;
          for (let s = 0; s <= t; s++) acc += (exps[s] / z) * vs[s][g][e];
          attn.push(acc);
        }
      }
      const h1 = h.map((v, i) => v + matVec(`${p}.self_attn.o_proj.weight`, attn, c.hidden_size)[i]);
      const x2 = rms(h1, get(`${p}.post_attention_layernorm.weight`));
      const gate = matVec(`${p}.mlp.gate_proj.weight`, x2, c.intermediate_size);
      const up = matVec(`${p}.mlp.up_proj.weight`, x2, c.intermediate_size);
      const act = gate.map((gv, i) => (gv / (1 + Math.exp(-gv))) * up[i]);
      const down = matVec(`${p}.mlp.down_proj.weight`, act, c.hidden_size);
      return h1.map((v, i) => v + down[i]);
    });
  }
  const head = c.tie_word_embeddings ? embed : get('lm_head.weight');
  return hs.map((h) => {
    const x = rms(h, get('model.norm.weight'));
    return Array.from({ length: c.vocab_size }, (_, v) => {
      let s = 0;
      for (let i = 0; i < c.hidden_size; i++) s += head[v * c.hidden_size + i] * x[i];
      return s;
    });
  });
}

// ---- configs and weights ---------------------------------------------------------------------

function smallConfig(modelType: 'qwen3' | 'llama', ropeScaling: Scaling): RawConfig {
  return {
    model_type: modelType,
    vocab_size: 48,
    hidden_size: 32,
    intermediate_size: 40,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: 16,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    max_position_embeddings: 128,
    tie_word_embeddings: modelType === 'qwen3',
    rope_scaling: ropeScaling,
  };
}

/** Matrices N(0, 0.25²), norms 1 ± 0.1: large enough that a wrong rotation moves the logits. */
function weightsFor(config: ModelConfig, seed: number): WeightMap {
  const rng = new Prng(seed);
  const out: WeightMap = new Map();
  for (const spec of weightSpecs(dims(config))) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = spec.init === 'ones' ? 1 + 0.1 * rng.normal() : 0.25 * rng.normal();
    out.set(spec.name, data);
  }
  return out;
}

/** Positions past where each scaling leaves frequencies alone, and a second, shifted row. */
const IDS = [
  [3, 17, 42, 8, 8, 29, 1],
  [5, 5, 40, 12, 33, 2, 19],
];
const POSITIONS = [
  [0, 1, 2, 3, 4, 5, 6],
  [37, 38, 50, 71, 90, 111, 127],
];

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('RoPE scaling: logits parity with a float64 reference (TF.js and ONNX)', () => {
  const measured: Record<string, number> = {};
  beforeAll(async () => {
    await selectBackend('cpu');
  });
  afterAll(() => {
    // One line with every max |Δlogits| measured, for the record.
    console.log(`rope parity max |Δlogits|: ${JSON.stringify(measured)}`);
  });

  it.each(ROPE_SCALINGS)('%s', async (name, modelType, scaling) => {
    const raw = smallConfig(modelType, scaling);
    const config = modelConfigSchema.parse(raw);
    const d = dims(config);
    const weights = weightsFor(config, 11);
    const want = IDS.map((ids, b) => referenceLogits(raw, weights, ids, POSITIONS[b]));

    // The scaling must matter at these positions, or this test could not fail.
    if (scaling !== null && scaling.rope_type !== 'dynamic' && scaling.type !== 'dynamic') {
      const plain = referenceLogits({ ...raw, rope_scaling: null }, weights, IDS[1], POSITIONS[1]);
      expect(maxDiff(plain.flat(), want[1].flat())).toBeGreaterThan(1e-2);
    }

    const model = new TfjsDecoder(config, weights);
    const logits = model.forward({ inputIds: IDS, positionIds: POSITIONS }).logits;
    const got = logits.arraySync() as number[][][];
    logits.dispose();
    model.dispose();
    const tfjsDiff = maxDiff(got.flat(2), want.flat(2));
    measured[`${name} tfjs`] = Number(tfjsDiff.toExponential(2));
    expect(tfjsDiff).toBeLessThan(TOL);

    const session = await ort.InferenceSession.create(exportDecoderOnnx(config, weights));
    try {
      const int64 = (rows: number[][]) =>
        new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [rows.length, rows[0].length]);
      const feeds: Record<string, ort.Tensor> = {
        input_ids: int64(IDS),
        attention_mask: int64(IDS.map((r) => r.map(() => 1))),
        position_ids: int64(POSITIONS),
      };
      for (let l = 0; l < d.layers; l++) {
        for (const part of ['key', 'value']) {
          feeds[`past_key_values.${l}.${part}`] = new ort.Tensor('float32', new Float32Array(0), [
            2,
            d.kvHeads,
            0,
            d.headDim,
          ]);
        }
      }
      const out = await session.run(feeds);
      const onnxDiff = maxDiff(out.logits.data as Float32Array, want.flat(2));
      measured[`${name} onnx`] = Number(onnxDiff.toExponential(2));
      expect(onnxDiff).toBeLessThan(TOL);
    } finally {
      await session.release();
    }
  });

  it('dynamic is served within the pretrained context and refused past it, by both implementations', () => {
    const raw = smallConfig('qwen3', { rope_type: 'dynamic', factor: 2 });
    const config = modelConfigSchema.parse(raw);
    const model = new TfjsDecoder(config, weightsFor(config, 3));
    try {
      expect(() => model.forward({ inputIds: [[1, 2]], positionIds: [[126, 128]] })).toThrow(
        /position 128 is past the 128 positions this model's dynamic RoPE is served for/,
      );
    } finally {
      model.dispose();
    }
    expect(() => ropeTableData(16, dims(config).rope, 129)).toThrow(ConfigError);
    expect(ropeTableData(16, dims(config).rope, 128).cos).toHaveLength(128 * 16);
  });
});
