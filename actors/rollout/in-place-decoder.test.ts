/**
 * The two in-place decoder graphs — slots (onnx-export-slots.ts: the cache read where it lies,
 * only the new keys/values returned) and GQA (onnx-export-gqa.ts: GroupQueryAttention with one
 * past/present buffer updated in place, fused RMSNorms, rotary inside GQA) — against the
 * standard export (whose logits rope-parity.test.ts checks against an independent float64
 * reference): batched right-padded prompts of uneven lengths, chunked prefill, batched decode
 * steps and last-position-only logits, on the presets and on every RoPE scaling the family
 * supports; and, for the slots graph, what only it allows (rows with different pasts taking
 * several tokens in one step) and that slots past a row's length are never read.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dims, type ModelConfig, modelConfigSchema } from '../models/model-config.js';
import { Prng } from '../models/model-init.js';
import { exportDecoderExternal, exportDecoderOnnx } from '../models/onnx-export.js';
import { gqaUnsupported } from '../models/onnx-export-gqa.js';
import type { DecoderAttention } from '../models/onnx-graph.js';
import { ROPE_SCALINGS } from '../models/rope-cases.test-support.js';
import { type WeightMap, weightSpecs } from '../models/weight-names.js';
import { KvSlots } from './kv-batch.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { presetConfig } from './test-model.js';

const TOL = 1e-4;

/** Matrices N(0, 0.25²), norms 1 ± 0.1: large enough that a wrong position moves the logits. */
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

type InPlaceKind = Exclude<DecoderAttention, 'standard'>;
const IN_PLACE_KINDS: InPlaceKind[] = ['slots', 'gqa'];

interface Pair {
  standard: OnnxDecoder;
  /** The in-place graph under test. */
  gqa: OnnxDecoder;
  vocab: number;
  release(): Promise<void>;
}

async function pair(config: ModelConfig, seed: number, kind: InPlaceKind): Promise<Pair> {
  const d = dims(config);
  const weights = weightsFor(config, seed);
  const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
  const standard = await OnnxDecoder.load(exportDecoderOnnx(config, weights), layout, 'cpu');
  const g = exportDecoderExternal(config, weights, { attention: kind });
  const gqa = await OnnxDecoder.load({ graph: g.graph, data: g.data }, layout, {
    provider: 'cpu',
    intraOpNumThreads: 1,
    allowSpinning: false,
  });
  return {
    standard,
    gqa,
    vocab: d.vocab,
    release: async () => {
      await standard.release();
      await gqa.release();
    },
  };
}

/** Every position's logits of one sequence through the standard graph in one step. */
async function standardLogits(decoder: OnnxDecoder, ids: number[]): Promise<Float32Array> {
  const n = ids.length;
  const out = await decoder.step({
    batch: 1,
    seq: n,
    past: 0,
    inputIds: BigInt64Array.from(ids, BigInt),
    attentionMask: new BigInt64Array(n).fill(1n),
    positionIds: BigInt64Array.from({ length: n }, (_, i) => BigInt(i)),
    pastKv: Array.from({ length: decoder.layout.layers * 2 }, () => new Float32Array(0)),
  });
  return out.logits;
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function tokens(n: number, salt: number, vocab: number): number[] {
  return Array.from({ length: n }, (_, j) => (salt * 31 + j * 17 + 5) % vocab);
}

/** Token rows right-padded to the longest, as one [rows, width] input. */
function rightPadded(rows: number[][]): { width: number; inputIds: BigInt64Array } {
  const width = Math.max(...rows.map((r) => r.length));
  const inputIds = new BigInt64Array(rows.length * width);
  rows.forEach((r, b) => {
    r.forEach((id, j) => {
      inputIds[b * width + j] = BigInt(id);
    });
  });
  return { width, inputIds };
}

/**
 * The same sequences through both graphs: a right-padded batched first prompt, then decode
 * steps of the whole batch (uneven lengths), each compared with the standard graph's logits
 * for the whole sequence so far. Returns the largest difference seen.
 */
async function batchedParity(p: Pair, prompts: number[][], steps: number): Promise<number> {
  const { gqa, standard, vocab } = p;
  const batch = prompts.length;
  const slots = new KvSlots(gqa.layout, batch);
  const seqs = prompts.map((x) => [...x]);
  slots.reserve(batch, Math.max(...seqs.map((s) => s.length)) + steps);
  for (const s of seqs) slots.add(s.length);
  const { width, inputIds } = rightPadded(seqs);
  const logits = new Float32Array(batch * width * vocab);
  await gqa.stepInPlace({
    batch,
    seq: width,
    inputIds,
    pastLens: new Int32Array(batch),
    newLens: Int32Array.from(seqs, (s) => s.length),
    kv: slots.rows(0, batch),
    capacity: slots.capacity,
    logitsToKeep: 0,
    logits,
  });
  let worst = 0;
  for (let b = 0; b < batch; b++) {
    const want = await standardLogits(standard, seqs[b]);
    const got = logits.subarray(b * width * vocab, (b * width + seqs[b].length) * vocab);
    worst = Math.max(worst, maxDiff(got, want));
  }
  for (let step = 0; step < steps; step++) {
    const next = seqs.map((s, b) => (s[s.length - 1] * 7 + b + step) % vocab);
    const out = await gqa.stepInPlace({
      batch,
      seq: 1,
      inputIds: BigInt64Array.from(next, BigInt),
      pastLens: Int32Array.from(seqs, (s) => s.length),
      newLens: new Int32Array(batch).fill(1),
      kv: slots.rows(0, batch),
      capacity: slots.capacity,
      logitsToKeep: 1,
      logits,
    });
    for (const [b, s] of seqs.entries()) s.push(next[b]);
    for (let b = 0; b < batch; b++) {
      const want = await standardLogits(standard, seqs[b]);
      const last = want.subarray((seqs[b].length - 1) * vocab);
      worst = Math.max(worst, maxDiff(out.subarray(b * vocab, (b + 1) * vocab), last));
    }
  }
  return worst;
}

/** One sequence through the in-place graph in chunks of `chunk` (batch 1, past growing). */
async function chunkedLogits(
  p: Pair,
  ids: number[],
  chunk: number,
  lastOnly: boolean,
): Promise<Float32Array> {
  const slots = new KvSlots(p.gqa.layout, 1);
  slots.reserve(1, ids.length);
  slots.add();
  return chunkedInto(p.gqa, slots, ids, chunk, lastOnly);
}

describe.each(IN_PLACE_KINDS)('%s decoder graph vs the standard graph', (kind) => {
  for (const preset of ['tiny', 'small'] as const) {
    describe(preset, () => {
      let p: Pair;
      beforeAll(async () => {
        p = await pair(presetConfig(preset), 3, kind);
      });
      afterAll(async () => {
        await p.release();
      });

      it('is the graph the decoder reports', () => {
        expect(p.gqa.kind).toBe(kind);
        expect(p.gqa.inPlace).toBe(true);
        expect(p.standard.kind).toBe('standard');
        expect(p.standard.inPlace).toBe(false);
      });

      it('batched right-padded prompts of uneven lengths, then batched decode steps', async () => {
        const v = p.vocab;
        const worst = await batchedParity(
          p,
          [tokens(3, 1, v), tokens(11, 2, v), tokens(7, 3, v), tokens(1, 4, v)],
          6,
        );
        expect(worst).toBeLessThan(TOL);
      });

      it('chunked prefill gives every position the logits of one whole step', async () => {
        const ids = tokens(29, 5, p.vocab);
        const want = await standardLogits(p.standard, ids);
        for (const chunk of [1, 4, 10, 29])
          expect(maxDiff(await chunkedLogits(p, ids, chunk, false), want)).toBeLessThan(TOL);
      });

      it('num_logits_to_keep 1 gives the last position only, the same numbers', async () => {
        const ids = tokens(17, 6, p.vocab);
        const want = (await standardLogits(p.standard, ids)).subarray(16 * p.vocab);
        expect(maxDiff(await chunkedLogits(p, ids, 6, true), want)).toBeLessThan(TOL);
      });
    });
  }
});

describe.each(IN_PLACE_KINDS)('%s decoder graph: every RoPE scaling, far into the context', (kind) => {
  it.each(ROPE_SCALINGS)('%s', async (_name, modelType, scaling) => {
    const config = modelConfigSchema.parse({
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
      rope_scaling: scaling,
    });
    const p = await pair(config, 11, kind);
    try {
      const ids = tokens(120, 9, p.vocab);
      const want = await standardLogits(p.standard, ids);
      expect(maxDiff(await chunkedLogits(p, ids, 37, false), want)).toBeLessThan(TOL);
      expect(await batchedParity(p, [tokens(90, 1, 48), tokens(57, 2, 48)], 5)).toBeLessThan(TOL);
    } finally {
      await p.release();
    }
  });
});

describe('GQA decoder graph', () => {
  it('updates the shared buffer in place through onnxruntime-node: only the new slots change', async () => {
    const p = await pair(presetConfig('small'), 7, 'gqa');
    try {
      const slots = new KvSlots(p.gqa.layout, 1);
      slots.reserve(1, 20);
      slots.add(10);
      for (const t of slots.kv) t.fill(7);
      await p.gqa.stepInPlace({
        batch: 1,
        seq: 1,
        inputIds: BigInt64Array.of(3n),
        pastLens: Int32Array.of(10),
        newLens: Int32Array.of(1),
        kv: slots.rows(0, 1),
        capacity: slots.capacity,
        logitsToKeep: 1,
        logits: new Float32Array(p.vocab),
      });
      const { kvHeads, headDim } = p.gqa.layout;
      for (const t of slots.kv) {
        for (let h = 0; h < kvHeads; h++) {
          const row = t.subarray(h * slots.capacity * headDim, (h + 1) * slots.capacity * headDim);
          const slot = (s: number) => Array.from(row.subarray(s * headDim, (s + 1) * headDim));
          expect(slot(10).some((x) => x !== 7)).toBe(true);
          for (const s of [0, 9, 11, slots.capacity - 1]) expect(slot(s).every((x) => x === 7)).toBe(true);
        }
      }
    } finally {
      await p.release();
    }
  });

  it('refuses head_dim that GQA rotary cannot take, naming it', () => {
    const config = modelConfigSchema.parse({ ...presetConfig('tiny'), head_dim: 24 });
    expect(gqaUnsupported(config)).toMatch(/head_dim 24/);
    expect(() => exportDecoderExternal(config, weightsFor(config, 1), { attention: 'gqa' })).toThrow(
      /head_dim 24/,
    );
  });
});

describe('slots decoder graph: what only it allows', () => {
  let p: Pair;
  beforeAll(async () => {
    p = await pair(presetConfig('small'), 5, 'slots');
  });
  afterAll(async () => {
    await p.release();
  });

  it('rows with different pasts take several (right-padded) tokens in one step', async () => {
    const { gqa: slotsDecoder, standard, vocab } = p;
    const prompts = [tokens(9, 1, vocab), tokens(4, 2, vocab), tokens(13, 3, vocab)];
    const more = [tokens(5, 7, vocab), tokens(2, 8, vocab), tokens(1, 9, vocab)];
    const batch = prompts.length;
    const slots = new KvSlots(slotsDecoder.layout, batch);
    slots.reserve(batch, 20);
    // Each row's prompt on its own (batch 1) into its row, then one step of all rows together.
    for (const [b, ids] of prompts.entries()) {
      slots.add();
      await slotsDecoder.stepInPlace({
        batch: 1,
        seq: ids.length,
        inputIds: BigInt64Array.from(ids, BigInt),
        pastLens: Int32Array.of(0),
        newLens: Int32Array.of(ids.length),
        kv: slots.rows(b, 1),
        capacity: slots.capacity,
        logitsToKeep: 1,
        logits: new Float32Array(vocab),
      });
    }
    const { width, inputIds } = rightPadded(more);
    const logits = new Float32Array(batch * width * vocab);
    await slotsDecoder.stepInPlace({
      batch,
      seq: width,
      inputIds,
      pastLens: Int32Array.from(prompts, (x) => x.length),
      newLens: Int32Array.from(more, (m) => m.length),
      kv: slots.rows(0, batch),
      capacity: slots.capacity,
      logitsToKeep: 0,
      logits,
    });
    for (let b = 0; b < batch; b++) {
      const whole = [...prompts[b], ...more[b]];
      const want = (await standardLogits(standard, whole)).subarray(prompts[b].length * vocab);
      const got = logits.subarray(b * width * vocab, (b * width + more[b].length) * vocab);
      expect(maxDiff(got, want)).toBeLessThan(TOL);
    }
    // The cache now holds every row's whole sequence: one more decode step checks it.
    const next = [3, 4, 5];
    const out = await slotsDecoder.stepInPlace({
      batch,
      seq: 1,
      inputIds: BigInt64Array.from(next, BigInt),
      pastLens: Int32Array.from(prompts, (x, b) => x.length + more[b].length),
      newLens: new Int32Array(batch).fill(1),
      kv: slots.rows(0, batch),
      capacity: slots.capacity,
      logitsToKeep: 1,
      logits,
    });
    for (let b = 0; b < batch; b++) {
      const whole = [...prompts[b], ...more[b], next[b]];
      const want = (await standardLogits(standard, whole)).subarray((whole.length - 1) * vocab);
      expect(maxDiff(out.subarray(b * vocab, (b + 1) * vocab), want)).toBeLessThan(TOL);
    }
  });

  it('never reads the slots past a row’s length, whatever they hold', async () => {
    const { gqa: slotsDecoder, vocab } = p;
    const ids = tokens(12, 4, vocab);
    const run = async (fill: number) => {
      const slots = new KvSlots(slotsDecoder.layout, 1);
      slots.reserve(1, 64);
      for (const t of slots.kv) t.fill(fill);
      slots.add();
      return chunkedInto(slotsDecoder, slots, ids, 5);
    };
    const clean = await run(0);
    expect(maxDiff(await run(1e6), clean)).toBe(0);
    expect(maxDiff(await run(-3.5), clean)).toBe(0);
  });
});

/**
 * `ids` through `decoder` into row 0 of `slots`, `chunk` tokens a step: every position's logits,
 * or with `lastOnly` the last position's.
 */
async function chunkedInto(
  decoder: OnnxDecoder,
  slots: KvSlots,
  ids: number[],
  chunk: number,
  lastOnly = false,
): Promise<Float32Array> {
  const { vocab } = decoder.layout;
  const all = new Float32Array((lastOnly ? 1 : ids.length) * vocab);
  for (let start = 0; start < ids.length; start += chunk) {
    const end = Math.min(ids.length, start + chunk);
    const out = await decoder.stepInPlace({
      batch: 1,
      seq: end - start,
      inputIds: BigInt64Array.from(ids.slice(start, end), BigInt),
      pastLens: Int32Array.of(start),
      newLens: Int32Array.of(end - start),
      kv: slots.rows(0, 1),
      capacity: slots.capacity,
      logitsToKeep: lastOnly ? 1 : 0,
      logits: new Float32Array((lastOnly ? 1 : end - start) * vocab),
    });
    all.set(out, lastOnly ? 0 : start * vocab);
  }
  return all;
}
