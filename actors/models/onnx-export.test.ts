import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { seededRandom } from '../../common/random.js';
import { type Dims, dims as dimsOf, type ModelConfig, modelConfigSchema, PRESETS } from './model-config.js';
import {
  buildDecoderModel,
  DIM_NAMES,
  decoderIoNames,
  exportDecoderOnnx,
  writeDecoderOnnx,
} from './onnx-export.js';
import { MODEL_DATA_FILE, ONNX_OPSET } from './onnx-graph.js';
import { checkDecoderIo, readOnnxIo } from './onnx-inputs.js';
import { decodeModel, encodeModel, type OnnxModel } from './onnx-proto.js';
import { disposeKvCache, type KvCache, TfjsDecoder } from './tfjs-decoder.js';
import { layerPrefix, type WeightMap, weightSpecs } from './weight-names.js';

const TOL = 1e-4;

// ---- seeded random weights --------------------------------------------------------------

function normal(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

/** Random weights; norms are 1 ± noise and biases nonzero so every tensor matters. */
function randomWeights(d: Dims, seed: number): WeightMap {
  const rand = seededRandom(seed);
  const out: WeightMap = new Map();
  for (const spec of weightSpecs(d)) {
    const size = spec.shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    for (let i = 0; i < size; i++) {
      const z = normal(rand);
      data[i] = spec.init === 'ones' ? 1 + 0.2 * z : spec.init === 'zeros' ? 0.1 * z : 0.15 * z;
    }
    out.set(spec.name, data);
  }
  return out;
}

function randomTokens(rand: () => number, n: number, vocab: number): number[] {
  return Array.from({ length: n }, () => Math.floor(rand() * vocab));
}

const TINY = modelConfigSchema.parse(PRESETS.tiny);
/** Llama: untied lm_head, no q/k norm, 4 query heads per kv head. */
const LLAMA = modelConfigSchema.parse({
  ...PRESETS.tiny,
  architectures: ['LlamaForCausalLM'],
  model_type: 'llama',
  vocab_size: 200,
  num_attention_heads: 8,
  num_key_value_heads: 2,
  head_dim: 8,
  rope_theta: 500000,
  rms_norm_eps: 1e-5,
  max_position_embeddings: 256,
  tie_word_embeddings: false,
});
/** Qwen2: q/k/v biases, no q/k norm, as many kv heads as query heads (no repeat). */
const QWEN2 = modelConfigSchema.parse({
  ...PRESETS.tiny,
  architectures: ['Qwen2ForCausalLM'],
  model_type: 'qwen2',
  vocab_size: 160,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 4,
  head_dim: undefined,
  max_position_embeddings: 128,
  rope_theta: 1000000,
  tie_word_embeddings: true,
});

// ---- running the ONNX graph -------------------------------------------------------------

interface OrtStep {
  /** [batch, seq, vocab] flat */
  logits: Float32Array;
  present: ort.Tensor[];
}

interface StepArgs {
  ids: number[][];
  mask?: number[][];
  positions?: number[][];
  /** Per layer, key then value (the `present` of the previous step). */
  past?: ort.Tensor[];
}

function int64(rows: number[][]): ort.Tensor {
  return new ort.Tensor('int64', BigInt64Array.from(rows.flat().map(BigInt)), [rows.length, rows[0].length]);
}

async function runStep(session: ort.InferenceSession, d: Dims, args: StepArgs): Promise<OrtStep> {
  const batch = args.ids.length;
  const seq = args.ids[0].length;
  const pastLen = args.past ? (args.past[0].dims[2] as number) : 0;
  const mask = args.mask ?? args.ids.map(() => Array(pastLen + seq).fill(1));
  const positions = args.positions ?? args.ids.map((row) => row.map((_, i) => pastLen + i));
  const feeds: Record<string, ort.Tensor> = {
    input_ids: int64(args.ids),
    attention_mask: int64(mask),
    position_ids: int64(positions),
  };
  for (let l = 0; l < d.layers; l++) {
    ['key', 'value'].forEach((part, k) => {
      feeds[`past_key_values.${l}.${part}`] =
        args.past?.[2 * l + k] ??
        new ort.Tensor('float32', new Float32Array(0), [batch, d.kvHeads, 0, d.headDim]);
    });
  }
  const out = await session.run(feeds);
  const present: ort.Tensor[] = [];
  for (let l = 0; l < d.layers; l++) present.push(out[`present.${l}.key`], out[`present.${l}.value`]);
  return { logits: out.logits.data as Float32Array, present };
}

/** Row t of a [batch, seq, vocab] array for sequence b. */
function row(logits: Float32Array, b: number, t: number, seq: number, vocab: number): Float32Array {
  const start = (b * seq + t) * vocab;
  return logits.subarray(start, start + vocab);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// ---- an independent scalar reference (float64, one sequence, no cache) -----------------

function scalarForward(config: ModelConfig, w: WeightMap, ids: number[]): Float64Array[] {
  const d = dimsOf(config);
  const n = ids.length;
  const get = (name: string) => w.get(name)!;
  const lin = (x: Float64Array, name: string, outF: number, inF: number, bias?: string): Float64Array => {
    const W = get(name);
    const b = bias ? get(bias) : undefined;
    const y = new Float64Array(outF);
    for (let o = 0; o < outF; o++) {
      let s = b ? b[o] : 0;
      for (let i = 0; i < inF; i++) s += W[o * inF + i] * x[i];
      y[o] = s;
    }
    return y;
  };
  const norm = (x: Float64Array, weight: Float32Array, off = 0, len = x.length): void => {
    let ms = 0;
    for (let i = 0; i < len; i++) ms += x[off + i] ** 2;
    const r = 1 / Math.sqrt(ms / len + d.eps);
    for (let i = 0; i < len; i++) x[off + i] = x[off + i] * r * weight[i];
  };
  const half = d.headDim / 2;
  const invFreq = Array.from({ length: half }, (_, j) =>
    Math.fround(1 / Math.fround(d.ropeTheta ** Math.fround((2 * j) / d.headDim))),
  );
  const rope = (x: Float64Array, heads: number, pos: number): void => {
    for (let h = 0; h < heads; h++) {
      const o = h * d.headDim;
      for (let j = 0; j < half; j++) {
        const angle = Math.fround(pos * invFreq[j]);
        const [c, s] = [Math.cos(angle), Math.sin(angle)];
        const [a, b] = [x[o + j], x[o + half + j]];
        x[o + j] = a * c - b * s;
        x[o + half + j] = b * c + a * s;
      }
    }
  };
  const embed = get('model.embed_tokens.weight');
  let hs: Float64Array[] = ids.map((id) =>
    Float64Array.from(embed.subarray(id * d.hidden, (id + 1) * d.hidden)),
  );
  for (let l = 0; l < d.layers; l++) {
    const p = layerPrefix(l);
    const a = `${p}.self_attn`;
    const bias = (k: string) => (d.attentionBias ? `${a}.${k}_proj.bias` : undefined);
    const qs: Float64Array[] = [];
    const ks: Float64Array[] = [];
    const vs: Float64Array[] = [];
    for (let t = 0; t < n; t++) {
      const x = Float64Array.from(hs[t]);
      norm(x, get(`${p}.input_layernorm.weight`));
      const q = lin(x, `${a}.q_proj.weight`, d.heads * d.headDim, d.hidden, bias('q'));
      const k = lin(x, `${a}.k_proj.weight`, d.kvHeads * d.headDim, d.hidden, bias('k'));
      const v = lin(x, `${a}.v_proj.weight`, d.kvHeads * d.headDim, d.hidden, bias('v'));
      if (d.qkNorm) {
        for (let h = 0; h < d.heads; h++) norm(q, get(`${a}.q_norm.weight`), h * d.headDim, d.headDim);
        for (let h = 0; h < d.kvHeads; h++) norm(k, get(`${a}.k_norm.weight`), h * d.headDim, d.headDim);
      }
      rope(q, d.heads, t);
      rope(k, d.kvHeads, t);
      qs.push(q);
      ks.push(k);
      vs.push(v);
    }
    const next: Float64Array[] = [];
    for (let t = 0; t < n; t++) {
      const ctx = new Float64Array(d.heads * d.headDim);
      for (let h = 0; h < d.heads; h++) {
        const kvh = Math.floor(h / d.groups);
        const scores = new Float64Array(t + 1);
        for (let s = 0; s <= t; s++) {
          let dot = 0;
          for (let i = 0; i < d.headDim; i++) dot += qs[t][h * d.headDim + i] * ks[s][kvh * d.headDim + i];
          scores[s] = dot / Math.sqrt(d.headDim);
        }
        const max = Math.max(...scores);
        let sum = 0;
        for (let s = 0; s <= t; s++) sum += scores[s] = Math.exp(scores[s] - max);
        for (let s = 0; s <= t; s++) {
          for (let i = 0; i < d.headDim; i++)
            ctx[h * d.headDim + i] += (scores[s] / sum) * vs[s][kvh * d.headDim + i];
        }
      }
      const o = lin(ctx, `${a}.o_proj.weight`, d.hidden, d.heads * d.headDim);
      const h1 = hs[t].map((v, i) => v + o[i]);
      const x = Float64Array.from(h1);
      norm(x, get(`${p}.post_attention_layernorm.weight`));
      const gate = lin(x, `${p}.mlp.gate_proj.weight`, d.intermediate, d.hidden);
      const up = lin(x, `${p}.mlp.up_proj.weight`, d.intermediate, d.hidden);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]);
      const down = lin(act, `${p}.mlp.down_proj.weight`, d.hidden, d.intermediate);
      next.push(h1.map((v, i) => v + down[i]));
    }
    hs = next;
  }
  const head = d.tied ? 'model.embed_tokens.weight' : 'lm_head.weight';
  return hs.map((h) => {
    const x = Float64Array.from(h);
    norm(x, get('model.norm.weight'));
    return lin(x, head, d.vocab, d.hidden);
  });
}

// ---- fixtures ---------------------------------------------------------------------------

interface Fixture {
  config: ModelConfig;
  d: Dims;
  weights: WeightMap;
  bytes: Uint8Array;
  session: ort.InferenceSession;
}

const fixtures = new Map<string, Fixture>();
const measured: Record<string, number> = {};

async function fixture(name: string, config: ModelConfig, seed: number): Promise<Fixture> {
  const known = fixtures.get(name);
  if (known) return known;
  const d = dimsOf(config);
  const weights = randomWeights(d, seed);
  const bytes = exportDecoderOnnx(config, weights);
  const session = await ort.InferenceSession.create(bytes);
  const f = { config, d, weights, bytes, session };
  fixtures.set(name, f);
  return f;
}

const CONFIGS: [string, ModelConfig, number][] = [
  ['qwen3 (tiny)', TINY, 1],
  ['llama', LLAMA, 2],
  ['qwen2', QWEN2, 3],
];

beforeAll(async () => {
  await tf.setBackend('cpu');
});

afterAll(async () => {
  for (const f of fixtures.values()) await f.session.release();
  // One line with every max |Δ| measured, for the record.
  console.log(`onnx-export max |Δlogits|: ${JSON.stringify(measured)}`);
});

function record(key: string, diff: number): void {
  measured[key] = Math.max(measured[key] ?? 0, diff);
}

// ---- tests ------------------------------------------------------------------------------

describe('exportDecoderOnnx: graph contract', () => {
  it('has exactly optimum input/output names, types and symbolic shapes', async () => {
    const { d, bytes, session } = await fixture('qwen3 (tiny)', TINY, 1);
    const names = decoderIoNames(d.layers);
    expect(session.inputNames).toEqual(names.inputs);
    expect(session.outputNames).toEqual(names.outputs);
    expect(names.inputs).toEqual([
      'input_ids',
      'attention_mask',
      'position_ids',
      'past_key_values.0.key',
      'past_key_values.0.value',
      'past_key_values.1.key',
      'past_key_values.1.value',
    ]);
    expect(names.outputs).toEqual([
      'logits',
      'present.0.key',
      'present.0.value',
      'present.1.key',
      'present.1.value',
    ]);

    const { batch, seq, past, total } = DIM_NAMES;
    expect(DIM_NAMES).toEqual({
      batch: 'batch_size',
      seq: 'sequence_length',
      past: 'past_sequence_length',
      total: 'past_sequence_length + sequence_length',
    });
    const io = readOnnxIo(bytes);
    const shapes = Object.fromEntries(
      [...io.inputs, ...io.outputs].map((e) => [e.name, [e.elemType, e.dims]]),
    );
    expect(shapes).toEqual({
      input_ids: ['int64', [batch, seq]],
      attention_mask: ['int64', [batch, total]],
      position_ids: ['int64', [batch, seq]],
      'past_key_values.0.key': ['float32', [batch, 2, past, 16]],
      'past_key_values.0.value': ['float32', [batch, 2, past, 16]],
      'past_key_values.1.key': ['float32', [batch, 2, past, 16]],
      'past_key_values.1.value': ['float32', [batch, 2, past, 16]],
      logits: ['float32', [batch, seq, 384]],
      'present.0.key': ['float32', [batch, 2, total, 16]],
      'present.0.value': ['float32', [batch, 2, total, 16]],
      'present.1.key': ['float32', [batch, 2, total, 16]],
      'present.1.value': ['float32', [batch, 2, total, 16]],
    });
    // onnxruntime reads the same symbolic shapes.
    const meta = session.inputMetadata.find((m) => m.name === 'past_key_values.1.value');
    expect(meta?.isTensor && meta.shape).toEqual([batch, 2, past, 16]);
  });

  it('uses only default-domain opset-17 operators', () => {
    const model = buildDecoderModel(TINY, randomWeights(dimsOf(TINY), 1));
    expect(model.opset_import).toEqual([{ domain: '', version: ONNX_OPSET }]);
    expect(ONNX_OPSET).toBe(17);
    const ops = new Set(model.graph.node.map((n) => n.op_type));
    for (const n of model.graph.node) expect(n.domain ?? '').toBe('');
    const allowed = [
      'Add',
      'And',
      'Cast',
      'Concat',
      'Div',
      'Expand',
      'Gather',
      'LessOrEqual',
      'MatMul',
      'Mul',
      'Neg',
      'Pow',
      'Range',
      'ReduceMean',
      'Reshape',
      'Shape',
      'Sigmoid',
      'Slice',
      'Softmax',
      'Sqrt',
      'Squeeze',
      'Tile',
      'Transpose',
      'Unsqueeze',
      'Where',
    ];
    expect([...ops].filter((op) => !allowed.includes(op))).toEqual([]);
    const nodeNames = model.graph.node.map((n) => n.name);
    expect(new Set(nodeNames).size).toBe(nodeNames.length);
    expect(nodeNames).toContain('/model/layers.0/self_attn/q_proj/MatMul');
    const inits = new Set(model.graph.initializer.map((t) => t.name));
    expect(inits.has('model.layers.1.self_attn.q_proj.weight.T')).toBe(true);
    expect(inits.has('model.embed_tokens.weight')).toBe(true);
    expect(inits.has('lm_head.weight.T')).toBe(true);
  });

  it('rejects missing or mis-sized weights with a ConfigError', () => {
    const d = dimsOf(TINY);
    const w = randomWeights(d, 1);
    w.delete('model.layers.1.mlp.up_proj.weight');
    expect(() => exportDecoderOnnx(TINY, w)).toThrow(ConfigError);
    expect(() => exportDecoderOnnx(TINY, w)).toThrow(/model\.layers\.1\.mlp\.up_proj\.weight/);
    const w2 = randomWeights(d, 1);
    w2.set('model.norm.weight', new Float32Array(3));
    expect(() => exportDecoderOnnx(TINY, w2)).toThrow(/model\.norm\.weight has 3 values/);
  });
});

describe('exportDecoderOnnx: key/value cache', () => {
  for (const [name, config, seed] of CONFIGS) {
    it(`${name}: prefill + 3 cached decode steps equal one full pass`, async () => {
      const { d, session } = await fixture(name, config, seed);
      const ids = randomTokens(seededRandom(seed + 100), 12, d.vocab);
      const full = await runStep(session, d, { ids: [ids] });
      const prefill = await runStep(session, d, { ids: [ids.slice(0, 9)] });
      expect(prefill.present[0].dims).toEqual([1, d.kvHeads, 9, d.headDim]);
      let diff = 0;
      for (let t = 0; t < 9; t++) {
        diff = Math.max(
          diff,
          maxAbsDiff(row(prefill.logits, 0, t, 9, d.vocab), row(full.logits, 0, t, 12, d.vocab)),
        );
      }
      let past = prefill.present;
      for (let t = 9; t < 12; t++) {
        const step = await runStep(session, d, { ids: [[ids[t]]], past });
        expect(step.present[2 * d.layers - 1].dims).toEqual([1, d.kvHeads, t + 1, d.headDim]);
        diff = Math.max(
          diff,
          maxAbsDiff(row(step.logits, 0, 0, 1, d.vocab), row(full.logits, 0, t, 12, d.vocab)),
        );
        past = step.present;
      }
      record(`${name} cache vs full`, diff);
      expect(diff).toBeLessThanOrEqual(TOL);
    });

    it(`${name}: a left-padded batch equals each sequence alone on its real tokens`, async () => {
      const { d, session } = await fixture(name, config, seed);
      const rand = seededRandom(seed + 200);
      const a = randomTokens(rand, 7, d.vocab);
      const b = randomTokens(rand, 4, d.vocab);
      const pad = 3;
      const ids = [a, [0, 0, 0, ...b]];
      const mask = [Array(7).fill(1), [0, 0, 0, 1, 1, 1, 1]];
      // HF generate: position_ids = cumsum(mask) - 1, padding slots get 1.
      const positions = [
        [0, 1, 2, 3, 4, 5, 6],
        [1, 1, 1, 0, 1, 2, 3],
      ];
      const batched = await runStep(session, d, { ids, mask, positions });
      const alone = [await runStep(session, d, { ids: [a] }), await runStep(session, d, { ids: [b] })];
      let diff = 0;
      for (let t = 0; t < 7; t++) {
        diff = Math.max(
          diff,
          maxAbsDiff(row(batched.logits, 0, t, 7, d.vocab), row(alone[0].logits, 0, t, 7, d.vocab)),
        );
      }
      for (let t = 0; t < 4; t++) {
        diff = Math.max(
          diff,
          maxAbsDiff(row(batched.logits, 1, pad + t, 7, d.vocab), row(alone[1].logits, 0, t, 4, d.vocab)),
        );
      }
      expect(Number.isFinite(Math.max(...batched.logits))).toBe(true);
      // Two cached steps on the padded batch still match the sequences alone.
      let past = batched.present;
      const nextA = [...a];
      const nextB = [...b];
      for (let step = 0; step < 2; step++) {
        const ta = (step * 31 + 5) % d.vocab;
        const tb = (step * 17 + 9) % d.vocab;
        nextA.push(ta);
        nextB.push(tb);
        const total = 7 + step + 1;
        const out = await runStep(session, d, {
          ids: [[ta], [tb]],
          past,
          mask: [Array(total).fill(1), [0, 0, 0, ...Array(total - pad).fill(1)]],
          positions: [[7 + step], [4 + step]],
        });
        const refA = await runStep(session, d, { ids: [nextA] });
        const refB = await runStep(session, d, { ids: [nextB] });
        diff = Math.max(
          diff,
          maxAbsDiff(
            row(out.logits, 0, 0, 1, d.vocab),
            row(refA.logits, 0, nextA.length - 1, nextA.length, d.vocab),
          ),
          maxAbsDiff(
            row(out.logits, 1, 0, 1, d.vocab),
            row(refB.logits, 0, nextB.length - 1, nextB.length, d.vocab),
          ),
        );
        past = out.present;
      }
      record(`${name} padded batch vs alone`, diff);
      expect(diff).toBeLessThanOrEqual(TOL);
    });

    it(`${name}: matches an independent float64 scalar reference`, async () => {
      const { config: c, d, weights, session } = await fixture(name, config, seed);
      const ids = randomTokens(seededRandom(seed + 300), 10, d.vocab);
      const ref = scalarForward(c, weights, ids);
      const out = await runStep(session, d, { ids: [ids] });
      let diff = 0;
      for (let t = 0; t < ids.length; t++)
        diff = Math.max(diff, maxAbsDiff(row(out.logits, 0, t, 10, d.vocab), ref[t]));
      record(`${name} vs scalar f64`, diff);
      expect(diff).toBeLessThanOrEqual(TOL);
      // The tolerance means something: logits spread over units, not hundredths.
      const spread = Math.max(...out.logits) - Math.min(...out.logits);
      record(`${name} logit spread`, spread);
      expect(spread).toBeGreaterThan(2);
    });
  }
});

describe('exportDecoderOnnx: parity with the TensorFlow.js reference', () => {
  for (const [name, config, seed] of CONFIGS) {
    it(`${name}: prefill and cached decode logits match TfjsDecoder (≤ 1e-4)`, async () => {
      const { d, weights, session } = await fixture(name, config, seed);
      const decoder = new TfjsDecoder(config, weights, { trainable: false });
      try {
        const rand = seededRandom(seed + 400);
        const a = randomTokens(rand, 6, d.vocab);
        const b = randomTokens(rand, 4, d.vocab);
        const ids = [a, [0, 0, ...b]];
        let mask = [Array(6).fill(1), [0, 0, 1, 1, 1, 1]];
        const positions = [
          [0, 1, 2, 3, 4, 5],
          [1, 1, 0, 1, 2, 3],
        ];
        const ortPrefill = await runStep(session, d, { ids, mask, positions });
        const tfPrefill = decoder.forward({ inputIds: ids, attentionMask: mask, positionIds: positions });
        const tfLogits = tfPrefill.logits.dataSync() as Float32Array;
        tfPrefill.logits.dispose();
        // Real tokens only (padding rows are arbitrary but finite).
        let diff = 0;
        for (let t = 0; t < 6; t++)
          diff = Math.max(
            diff,
            maxAbsDiff(row(ortPrefill.logits, 0, t, 6, d.vocab), row(tfLogits, 0, t, 6, d.vocab)),
          );
        for (let t = 2; t < 6; t++)
          diff = Math.max(
            diff,
            maxAbsDiff(row(ortPrefill.logits, 1, t, 6, d.vocab), row(tfLogits, 1, t, 6, d.vocab)),
          );
        // Both caches hold the same keys/values.
        let kvDiff = 0;
        for (let l = 0; l < d.layers; l++) {
          kvDiff = Math.max(
            kvDiff,
            maxAbsDiff(ortPrefill.present[2 * l].data as Float32Array, tfPrefill.present[l].key.dataSync()),
            maxAbsDiff(
              ortPrefill.present[2 * l + 1].data as Float32Array,
              tfPrefill.present[l].value.dataSync(),
            ),
          );
        }
        let ortPast = ortPrefill.present;
        let tfPast: KvCache = tfPrefill.present;
        for (let step = 0; step < 3; step++) {
          const next = [[(step * 13 + 3) % d.vocab], [(step * 29 + 7) % d.vocab]];
          mask = mask.map((m) => [...m, 1]);
          const pos = [[6 + step], [4 + step]];
          const o = await runStep(session, d, { ids: next, mask, positions: pos, past: ortPast });
          const t = decoder.forward({ inputIds: next, attentionMask: mask, positionIds: pos, past: tfPast });
          diff = Math.max(diff, maxAbsDiff(o.logits, t.logits.dataSync()));
          t.logits.dispose();
          disposeKvCache(tfPast);
          ortPast = o.present;
          tfPast = t.present;
        }
        disposeKvCache(tfPast);
        record(`${name} vs tfjs`, diff);
        record(`${name} kv vs tfjs`, kvDiff);
        expect(diff).toBeLessThanOrEqual(TOL);
        expect(kvDiff).toBeLessThanOrEqual(TOL);
      } finally {
        decoder.dispose();
      }
    });
  }
});

describe('writeDecoderOnnx', () => {
  const dir = mkdtempSync(join(tmpdir(), 'clawray-onnx-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('writes model.onnx inline or with model.onnx_data, both loading by path with the same logits', async () => {
    const { d, config, weights, session } = await fixture('qwen3 (tiny)', TINY, 1);
    const ids = [randomTokens(seededRandom(5), 5, d.vocab)];
    const expected = (await runStep(session, d, { ids })).logits;

    const inline = writeDecoderOnnx(join(dir, 'inline'), config, weights);
    expect(inline.data).toBeUndefined();
    expect(readdirSync(join(dir, 'inline'))).toEqual(['model.onnx']);

    const external = writeDecoderOnnx(join(dir, 'external'), config, weights, { externalData: true });
    expect(external.data).toBe(join(dir, 'external', MODEL_DATA_FILE));
    expect(readdirSync(join(dir, 'external')).sort()).toEqual(['model.onnx', 'model.onnx_data']);
    expect(readFileSync(external.model).byteLength).toBeLessThan(64 * 1024);

    for (const path of [inline.model, external.model]) {
      const s = await ort.InferenceSession.create(path);
      try {
        expect(maxAbsDiff((await runStep(s, d, { ids })).logits, expected)).toBe(0);
      } finally {
        await s.release();
      }
      expect(checkDecoderIo(readOnnxIo(path), d)).toEqual({
        kvElemType: 'float32',
        logitsElemType: 'float32',
      });
    }
    // Rewriting inline over an external export removes the stale data file.
    writeDecoderOnnx(join(dir, 'external'), config, weights);
    expect(existsSync(join(dir, 'external', MODEL_DATA_FILE))).toBe(false);
  });
});

describe('decodeModel / encodeModel', () => {
  it('round-trips an export to a graph that runs the same', async () => {
    const { d, bytes, session } = await fixture('llama', LLAMA, 2);
    const again = encodeModel(decodeModel(bytes));
    const s = await ort.InferenceSession.create(again);
    try {
      const ids = [randomTokens(seededRandom(6), 4, d.vocab)];
      expect(
        maxAbsDiff((await runStep(s, d, { ids })).logits, (await runStep(session, d, { ids })).logits),
      ).toBe(0);
    } finally {
      await s.release();
    }
  });
});

describe('checkDecoderIo', () => {
  const mutate = (bytes: Uint8Array, fn: (m: OnnxModel) => void): Uint8Array => {
    const m = decodeModel(bytes);
    fn(m);
    return encodeModel(m);
  };

  it('accepts the export and returns its element types', async () => {
    const { d, bytes } = await fixture('qwen2', QWEN2, 3);
    expect(checkDecoderIo(readOnnxIo(bytes), d)).toEqual({
      kvElemType: 'float32',
      logitsElemType: 'float32',
    });
  });

  it('names the file and the missing input and the layer count', async () => {
    const { d, bytes } = await fixture('qwen2', QWEN2, 3);
    const broken = mutate(bytes, (m) => {
      m.graph.input = m.graph.input.filter((v) => v.name !== 'past_key_values.2.key');
    });
    const io = readOnnxIo(broken, 'models/x/model.onnx');
    expect(() => checkDecoderIo(io, d)).toThrow(ConfigError);
    expect(() => checkDecoderIo(io, d)).toThrow(
      'models/x/model.onnx: input past_key_values.2.key missing; expected 3 layers',
    );
  });

  it('reports layers beyond the config, wrong kv shapes, types and vocabulary', async () => {
    const { d, bytes } = await fixture('qwen2', QWEN2, 3);
    const io = readOnnxIo(bytes);
    expect(() => checkDecoderIo(io, { ...d, layers: 2 })).toThrow(
      'model.onnx: input past_key_values.2.key unexpected; input past_key_values.2.value unexpected; ' +
        'output present.2.key unexpected; output present.2.value unexpected; expected 2 layers',
    );
    expect(() => checkDecoderIo(io, { ...d, kvHeads: 2, vocab: 7 })).toThrow(
      /input past_key_values\.0\.key has 4 key\/value heads \(dim 1\), expected 2;.*output logits has vocabulary 160 \(dim 2\), expected 7/,
    );
    const retyped = mutate(bytes, (m) => {
      const ids = m.graph.input.find((v) => v.name === 'input_ids')!;
      ids.type!.tensor_type!.elem_type = 6;
      m.graph.input = m.graph.input.filter((v) => v.name !== 'position_ids');
      m.graph.input.push({ ...m.graph.input[0], name: 'use_cache_branch' });
    });
    expect(() => checkDecoderIo(readOnnxIo(retyped, 'f.onnx'), d)).toThrow(
      'f.onnx: input input_ids is int32, expected int64; input position_ids missing; input use_cache_branch unexpected',
    );
  });

  it('readOnnxIo fails with a ConfigError on unreadable or non-ONNX input', () => {
    expect(() => readOnnxIo('/nonexistent/model.onnx')).toThrow(
      /\/nonexistent\/model\.onnx: cannot read the ONNX model/,
    );
    expect(() => readOnnxIo(new Uint8Array([0xff, 0xff, 0xff, 0xff]), 'junk.onnx')).toThrow(ConfigError);
    expect(() => readOnnxIo(new Uint8Array([0xff, 0xff, 0xff, 0xff]), 'junk.onnx')).toThrow(
      /^junk\.onnx: not an ONNX model/,
    );
  });
});
