import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { seededRandom } from '../../common/random.js';
import { type Dims, dims as dimsOf, type ModelConfig, modelConfigSchema, PRESETS } from './model-config.js';
import { selectBackend, type TfjsBackendName } from './tfjs-backend.js';
import { disposeKvCache, type KvCache, TfjsDecoder } from './tfjs-decoder.js';
import { layerPrefix, type WeightMap, weightSpecs } from './weight-names.js';

// ---------- seeded random weights ----------

function normalSampler(seed: number): () => number {
  const uniform = seededRandom(seed);
  return () => {
    const u = Math.max(uniform(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
  };
}

/** Every tensor random: matrices N(0, std²), norm weights 1 + N(0, 0.1²), biases N(0, 0.1²). */
function randomWeights(d: Dims, seed: number, std: number): WeightMap {
  const normal = normalSampler(seed);
  const out: WeightMap = new Map();
  for (const spec of weightSpecs(d)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      if (spec.init === 'normal') data[i] = std * normal();
      else if (spec.init === 'ones') data[i] = 1 + 0.1 * normal();
      else data[i] = 0.1 * normal();
    }
    out.set(spec.name, data);
  }
  return out;
}

// ---------- an independent scalar reference (float64, plain loops, no cache) ----------

function referenceLogits(
  d: Dims,
  W: WeightMap,
  inputIds: number[][],
  attentionMask: number[][],
  positionIds: number[][],
): number[][][] {
  const get = (name: string): Float32Array => {
    const w = W.get(name);
    if (w === undefined) throw new Error(`missing ${name}`);
    return w;
  };
  const matVec = (name: string, x: number[], outDim: number, biasName?: string): number[] => {
    const w = get(name);
    const inDim = x.length;
    const b = biasName === undefined ? undefined : get(biasName);
    const y: number[] = [];
    for (let o = 0; o < outDim; o++) {
      let s = b === undefined ? 0 : b[o];
      for (let i = 0; i < inDim; i++) s += w[o * inDim + i] * x[i];
      y.push(s);
    }
    return y;
  };
  const rms = (x: number[], w: Float32Array): number[] => {
    let ms = 0;
    for (const v of x) ms += v * v;
    ms /= x.length;
    const r = 1 / Math.sqrt(ms + d.eps);
    return x.map((v, i) => v * r * w[i]);
  };
  const rope = (x: number[], pos: number): number[] => {
    const hd = x.length;
    const half = hd / 2;
    const cos: number[] = [];
    const sin: number[] = [];
    for (let k = 0; k < hd; k++) {
      const j = k % half;
      const angle = pos * (1 / d.ropeTheta ** ((2 * j) / hd));
      cos.push(Math.cos(angle));
      sin.push(Math.sin(angle));
    }
    const rotated = [...x.slice(half).map((v) => -v), ...x.slice(0, half)];
    return x.map((v, k) => v * cos[k] + rotated[k] * sin[k]);
  };
  const embed = get('model.embed_tokens.weight');
  const result: number[][][] = [];
  for (let b = 0; b < inputIds.length; b++) {
    const T = inputIds[b].length;
    let hs: number[][] = inputIds[b].map((id) =>
      Array.from(embed.subarray(id * d.hidden, (id + 1) * d.hidden)),
    );
    for (let l = 0; l < d.layers; l++) {
      const p = layerPrefix(l);
      const a = `${p}.self_attn`;
      const qs: number[][][] = [];
      const ks: number[][][] = [];
      const vs: number[][][] = [];
      for (let t = 0; t < T; t++) {
        const x = rms(hs[t], get(`${p}.input_layernorm.weight`));
        const bias = (n: string) => (d.attentionBias ? `${a}.${n}.bias` : undefined);
        const q = matVec(`${a}.q_proj.weight`, x, d.heads * d.headDim, bias('q_proj'));
        const k = matVec(`${a}.k_proj.weight`, x, d.kvHeads * d.headDim, bias('k_proj'));
        const v = matVec(`${a}.v_proj.weight`, x, d.kvHeads * d.headDim, bias('v_proj'));
        const split = (vec: number[], n: number) =>
          Array.from({ length: n }, (_, h) => vec.slice(h * d.headDim, (h + 1) * d.headDim));
        let qh = split(q, d.heads);
        let kh = split(k, d.kvHeads);
        if (d.qkNorm) {
          qh = qh.map((e) => rms(e, get(`${a}.q_norm.weight`)));
          kh = kh.map((e) => rms(e, get(`${a}.k_norm.weight`)));
        }
        qs.push(qh.map((e) => rope(e, positionIds[b][t])));
        ks.push(kh.map((e) => rope(e, positionIds[b][t])));
        vs.push(split(v, d.kvHeads));
      }
      const next: number[][] = [];
      for (let t = 0; t < T; t++) {
        const concat: number[] = [];
        for (let h = 0; h < d.heads; h++) {
          const g = Math.floor(h / d.groups);
          const scores: number[] = [];
          const allowed: number[] = [];
          for (let s = 0; s < T; s++) {
            if (s <= t && attentionMask[b][s] === 1) {
              let dot = 0;
              for (let e = 0; e < d.headDim; e++) dot += qs[t][h][e] * ks[s][g][e];
              scores.push(dot / Math.sqrt(d.headDim));
              allowed.push(s);
            }
          }
          const max = Math.max(...scores);
          const exps = scores.map((s) => Math.exp(s - max));
          const sum = exps.reduce((x, y) => x + y, 0);
          const out = new Array<number>(d.headDim).fill(0);
          allowed.forEach((s, idx) => {
            for (let e = 0; e < d.headDim; e++) out[e] += (exps[idx] / sum) * vs[s][g][e];
          });
          concat.push(...out);
        }
        const o = matVec(`${a}.o_proj.weight`, concat, d.hidden);
        const h1 = hs[t].map((v, i) => v + o[i]);
        const x2 = rms(h1, get(`${p}.post_attention_layernorm.weight`));
        const gate = matVec(`${p}.mlp.gate_proj.weight`, x2, d.intermediate);
        const up = matVec(`${p}.mlp.up_proj.weight`, x2, d.intermediate);
        const act = gate.map((gv, i) => (gv / (1 + Math.exp(-gv))) * up[i]);
        const down = matVec(`${p}.mlp.down_proj.weight`, act, d.hidden);
        next.push(h1.map((v, i) => v + down[i]));
      }
      hs = next;
    }
    const headName = d.tied ? 'model.embed_tokens.weight' : 'lm_head.weight';
    result.push(hs.map((h) => matVec(headName, rms(h, get('model.norm.weight')), d.vocab)));
  }
  return result;
}

// ---------- helpers ----------

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const diff = Math.abs(a[i] - b[i]);
    if (Number.isNaN(diff)) return Number.POSITIVE_INFINITY;
    m = Math.max(m, diff);
  }
  return m;
}

/** logits [batch, seq, vocab] as nested arrays (disposes the tensor). */
function toNested(t: tf.Tensor3D): number[][][] {
  const out = t.arraySync();
  t.dispose();
  return out;
}

function microConfig(
  modelType: 'qwen3' | 'llama' | 'qwen2',
  extra: Record<string, unknown> = {},
): ModelConfig {
  return modelConfigSchema.parse({
    model_type: modelType,
    vocab_size: 5,
    hidden_size: 4,
    intermediate_size: 6,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    head_dim: 2,
    rms_norm_eps: 1e-6,
    rope_theta: 10000,
    ...extra,
  });
}

const tinyConfig = (): ModelConfig => modelConfigSchema.parse(PRESETS.tiny);

// ---------- tests ----------

describe('selectBackend', () => {
  it('chooses wasm (or cpu) here, and a forced cpu works', async () => {
    const chosen = await selectBackend();
    expect(['wasm', 'cpu']).toContain(chosen);
    expect(tf.getBackend()).toBe(chosen);
    expect(await selectBackend('cpu')).toBe('cpu');
    expect(tf.getBackend()).toBe('cpu');
    const sum = tf.tidy(() => tf.add(tf.tensor1d([1, 2]), tf.tensor1d([3, 4])).arraySync());
    expect(sum).toEqual([4, 6]);
    // an unavailable preferred backend falls back to what works
    expect(['wasm', 'cpu']).toContain(await selectBackend('tensorflow'));
  });
});

const backends: TfjsBackendName[] = ['wasm', 'cpu'];

describe.each(backends)('TfjsDecoder on %s', (wanted) => {
  let backend: TfjsBackendName;
  beforeAll(async () => {
    backend = await selectBackend(wanted);
  });
  afterAll(() => {
    expect(tf.getBackend()).toBe(backend);
  });

  const cases: Array<[string, ModelConfig]> = [
    ['qwen3 (q/k norm, tied)', microConfig('qwen3', { tie_word_embeddings: true })],
    ['llama (untied)', microConfig('llama', { tie_word_embeddings: false })],
    ['qwen2 (default bias, untied)', microConfig('qwen2', { tie_word_embeddings: false })],
  ];

  it.each(cases)('micro %s matches a float64 scalar reference', (_name, config) => {
    const before = tf.memory().numTensors;
    const d = dimsOf(config);
    if (config.model_type === 'qwen3') expect(d.qkNorm && d.tied && !d.attentionBias).toBe(true);
    else expect(!d.qkNorm && !d.tied && d.attentionBias === (config.model_type === 'qwen2')).toBe(true);
    const weights = randomWeights(d, 7, 0.5);
    const model = new TfjsDecoder(config, weights);
    const inputIds = [
      [1, 4, 2, 0],
      [3, 3, 1, 2],
    ];
    // non-trivial positions and a padded slot in the middle of the second row
    const positionIds = [
      [0, 1, 2, 3],
      [5, 9, 10, 30],
    ];
    const attentionMask = [
      [1, 1, 1, 1],
      [1, 0, 1, 1],
    ];
    const { logits, present } = model.forward({ inputIds, attentionMask, positionIds });
    expect(logits.shape).toEqual([2, 4, 5]);
    expect(present).toHaveLength(1);
    expect(present[0].key.shape).toEqual([2, 1, 4, 2]);
    expect(present[0].value.shape).toEqual([2, 1, 4, 2]);
    disposeKvCache(present);
    const got = toNested(logits);
    const want = referenceLogits(d, weights, inputIds, attentionMask, positionIds);
    let worst = 0;
    let largest = 0;
    for (let b = 0; b < 2; b++) {
      for (let t = 0; t < 4; t++) {
        if (attentionMask[b][t] === 0) {
          // a padding query: no NaN, no comparison
          expect(got[b][t].every(Number.isFinite)).toBe(true);
          continue;
        }
        worst = Math.max(worst, maxAbsDiff(got[b][t], want[b][t]));
        largest = Math.max(largest, ...want[b][t].map(Math.abs));
      }
    }
    expect(largest).toBeGreaterThan(0.1);
    expect(worst).toBeLessThanOrEqual(1e-5);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('tiny preset matches the scalar reference', () => {
    const config = tinyConfig();
    const d = dimsOf(config);
    const weights = randomWeights(d, 11, 0.2);
    const model = new TfjsDecoder(config, weights);
    const inputIds = [[5, 17, 300, 2, 99, 42]];
    const positionIds = [[0, 1, 2, 3, 4, 5]];
    const attentionMask = [[1, 1, 1, 1, 1, 1]];
    const { logits, present } = model.forward({ inputIds });
    disposeKvCache(present);
    const got = toNested(logits)[0].flat();
    const want = referenceLogits(d, weights, inputIds, attentionMask, positionIds)[0].flat();
    expect(maxAbsDiff(got, want)).toBeLessThanOrEqual(1e-5);
    model.dispose();
  });

  it('KV-cache: prefill N then M one-token steps equals one full forward', () => {
    const before = tf.memory().numTensors;
    const config = tinyConfig();
    const model = new TfjsDecoder(config, randomWeights(dimsOf(config), 3, 0.3));
    const tokens = [
      [7, 100, 383, 0, 55, 12, 9, 250, 31, 77],
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    ];
    const N = 6;
    const full = model.forward({ inputIds: tokens });
    disposeKvCache(full.present);
    const fullLogits = toNested(full.logits);

    const prefill = model.forward({ inputIds: tokens.map((r) => r.slice(0, N)) });
    let past: KvCache = prefill.present;
    const stepped = toNested(prefill.logits);
    for (let t = N; t < tokens[0].length; t++) {
      const step = model.forward({ inputIds: tokens.map((r) => [r[t]]), past });
      disposeKvCache(past);
      past = step.present;
      expect(past[0].key.shape).toEqual([2, 2, t + 1, 16]);
      const logits = toNested(step.logits);
      for (let b = 0; b < 2; b++) stepped[b].push(logits[b][0]);
    }
    disposeKvCache(past);
    expect(maxAbsDiff(stepped.flat(2), fullLogits.flat(2))).toBeLessThanOrEqual(1e-5);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('left padding: each real token gets the logits it gets alone, also when decoding on', () => {
    const before = tf.memory().numTensors;
    const config = tinyConfig();
    const model = new TfjsDecoder(config, randomWeights(dimsOf(config), 5, 0.3));
    const a = [11, 22, 33, 44, 55];
    const b = [66, 77, 88];
    // each sequence alone, one token longer (the token the padded batch decodes next)
    const alone = (ids: number[]): number[][] => {
      const out = model.forward({ inputIds: [ids] });
      disposeKvCache(out.present);
      return toNested(out.logits)[0];
    };
    const aloneA = alone([...a, 9]);
    const aloneB = alone([...b, 8]);

    const pad = 0;
    const batch = model.forward({
      inputIds: [a, [pad, pad, ...b]],
      attentionMask: [
        [1, 1, 1, 1, 1],
        [0, 0, 1, 1, 1],
      ],
      positionIds: [
        [0, 1, 2, 3, 4],
        [1, 1, 0, 1, 2],
      ],
    });
    const got = toNested(batch.logits);
    expect(got.flat(2).every(Number.isFinite)).toBe(true);
    expect(maxAbsDiff(got[0].flat(), aloneA.slice(0, 5).flat())).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(got[1].slice(2).flat(), aloneB.slice(0, 3).flat())).toBeLessThanOrEqual(1e-5);

    // one decode step on the padded batch
    const step = model.forward({
      inputIds: [[9], [8]],
      attentionMask: [
        [1, 1, 1, 1, 1, 1],
        [0, 0, 1, 1, 1, 1],
      ],
      positionIds: [[5], [3]],
      past: batch.present,
    });
    disposeKvCache(batch.present);
    disposeKvCache(step.present);
    const next = toNested(step.logits);
    expect(maxAbsDiff(next[0][0], aloneA[5])).toBeLessThanOrEqual(1e-5);
    expect(maxAbsDiff(next[1][0], aloneB[3])).toBeLessThanOrEqual(1e-5);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('gather and one-hot embeddings give the same logits, and one-hot differentiates', () => {
    const before = tf.memory().numTensors;
    const config = tinyConfig();
    const model = new TfjsDecoder(config, randomWeights(dimsOf(config), 9, 0.3), { embedding: 'onehot' });
    expect(model.embedding).toBe('onehot');
    const inputIds = [
      [3, 1, 4, 1, 5],
      [9, 2, 6, 5, 3],
    ];
    const g = model.forward({ inputIds, embedding: 'gather' });
    const o = model.forward({ inputIds });
    disposeKvCache(g.present);
    disposeKvCache(o.present);
    expect(maxAbsDiff(toNested(g.logits).flat(2), toNested(o.logits).flat(2))).toBeLessThanOrEqual(1e-6);

    // gradients flow to the embedding (and everything else) through the one-hot path
    const embed = model.variable('model.embed_tokens.weight');
    const { value, grads } = tf.variableGrads(() => {
      const out = model.forward({ inputIds });
      return tf.mean(out.logits) as tf.Scalar;
    }, [embed, model.variable('model.layers.0.self_attn.q_norm.weight')]);
    expect(Object.keys(grads)).toHaveLength(2);
    const gradNorm = tf.tidy(() => tf.norm(grads[embed.name]).arraySync() as number);
    expect(gradNorm).toBeGreaterThan(0);
    expect(Number.isFinite(gradNorm)).toBe(true);
    value.dispose();
    tf.dispose(grads);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('logprobsOf equals a manual log-softmax of the next-token logits', () => {
    const before = tf.memory().numTensors;
    const config = tinyConfig();
    const model = new TfjsDecoder(config, randomWeights(dimsOf(config), 13, 0.3));
    const tokens = [10, 20, 30, 40, 50, 60, 70];
    const from = 3;
    const got = model.logprobsOf(tokens, from);
    expect(got).toHaveLength(tokens.length - from);
    const out = model.forward({ inputIds: [tokens] });
    disposeKvCache(out.present);
    const logits = toNested(out.logits)[0];
    const want: number[] = [];
    for (let t = from; t < tokens.length; t++) {
      const row = logits[t - 1];
      const max = Math.max(...row);
      const lse = max + Math.log(row.reduce((s, v) => s + Math.exp(v - max), 0));
      want.push(row[tokens[t]] - lse);
    }
    expect(maxAbsDiff(got, want)).toBeLessThanOrEqual(1e-5);
    expect(got.every((v) => v < 0)).toBe(true);
    expect(model.logprobsOf(tokens, tokens.length)).toEqual([]);
    expect(() => model.logprobsOf(tokens, 0)).toThrow(RangeError);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('gradient checkpointing: the same logits and gradients (full weights; LoRA with dropout), no tensor left over', () => {
    const before = tf.memory().numTensors;
    const config = microConfig('qwen2', { tie_word_embeddings: false, num_hidden_layers: 2 });
    const d = dimsOf(config);
    const weights = randomWeights(d, 21, 0.4);
    const inputIds = [
      [1, 4, 2, 0, 3],
      [3, 3, 1, 2, 4],
    ];
    const gradsOf = (model: TfjsDecoder, checkpoint: boolean, dropoutSeed: number | null = 3) => {
      const vars = [...model.trainableVariables.values()];
      const { value, grads } = tf.variableGrads(() => {
        const { logits } = model.forward({
          inputIds,
          checkpoint,
          training: true,
          ...(dropoutSeed === null ? {} : { dropoutSeed }),
          logitRows: [1, 4, 8],
        });
        return tf.sum(tf.mul(logits, tf.sin(tf.range(0, logits.size).reshape(logits.shape)))) as tf.Scalar;
      }, vars);
      const out = { loss: value.dataSync()[0], grads: vars.map((v) => Array.from(grads[v.name].dataSync())) };
      value.dispose();
      tf.dispose(grads);
      return out;
    };
    const close = (a: ReturnType<typeof gradsOf>, b: ReturnType<typeof gradsOf>) => {
      expect(b.loss).toBeCloseTo(a.loss, 4);
      a.grads.forEach((g, i) => {
        const scale = Math.max(1e-6, ...g.map(Math.abs));
        expect(maxAbsDiff(g, b.grads[i]) / scale).toBeLessThan(1e-4);
      });
    };
    // One-hot: wasm has no gradient for a trainable embedding's gather.
    const full = new TfjsDecoder(config, weights, { embedding: 'onehot' });
    close(gradsOf(full, false), gradsOf(full, true));
    full.dispose();
    const adapters = new Map(
      ['model.layers.0.self_attn.q_proj.weight', 'model.layers.1.mlp.down_proj.weight'].map((target, i) => {
        const [out, inF] = weightSpecs(d).find((s) => s.name === target)!.shape;
        const rank = 2;
        return [
          target,
          {
            A: Float32Array.from({ length: rank * inF }, (_, j) => Math.sin(j + i)),
            B: Float32Array.from({ length: out * rank }, (_, j) => Math.cos(j * 3 + i) / 4),
            rank,
          },
        ];
      }),
    );
    const lora = new TfjsDecoder(config, weights, { lora: { scale: 2, dropout: 0.3, adapters } });
    close(gradsOf(lora, false), gradsOf(lora, true));
    // Unseeded, a checkpointed pass seeds itself, so the recomputation draws the forward's masks:
    // its gradient is the plain pass's under that seed.
    const random = vi.spyOn(Math, 'random').mockReturnValue(0.25);
    try {
      close(gradsOf(lora, false, 0.25 * 2 ** 31), gradsOf(lora, true, null));
    } finally {
      random.mockRestore();
    }
    lora.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });

  it('exposes variables by HF name, reads and assigns weights, rejects bad input', () => {
    const before = tf.memory().numTensors;
    const config = tinyConfig();
    const d = dimsOf(config);
    const w1 = randomWeights(d, 1, 0.2);
    const w2 = randomWeights(d, 2, 0.2);
    const model = new TfjsDecoder(config, w1);
    expect([...model.variables.keys()]).toEqual(weightSpecs(d).map((s) => s.name));
    expect(model.variable('model.norm.weight').shape).toEqual([d.hidden]);
    expect(model.variable('model.layers.1.self_attn.q_proj.weight').shape).toEqual([
      d.heads * d.headDim,
      d.hidden,
    ]);
    expect(() => model.variable('lm_head.weight')).toThrow(RangeError);
    model.assignWeights(w2);
    const back = model.readWeights();
    expect(back.get('model.norm.weight')).toEqual(w2.get('model.norm.weight'));
    expect(() => model.forward({ inputIds: [[d.vocab]] })).toThrow(RangeError);
    expect(() => model.forward({ inputIds: [[1, 2]], attentionMask: [[1]] })).toThrow(RangeError);
    const missing = new Map(w1);
    missing.delete('model.norm.weight');
    expect(() => new TfjsDecoder(config, missing)).toThrow(/model\.norm\.weight/);
    model.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});
