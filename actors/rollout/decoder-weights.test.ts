import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { mergeLora } from '../models/lora-merge.js';
import { dims, type ModelConfig, modelConfigSchema, PRESETS } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import {
  entriesBySource,
  exportDecoderExternal,
  exportDecoderOnnx,
  writeDecoderOnnx,
} from '../models/onnx-export.js';
import { MODEL_DATA_FILE } from '../models/onnx-graph.js';
import type { WeightMap } from '../models/weight-names.js';
import { DecoderWeights } from './decoder-weights.js';
import { type GraphWithData, OnnxDecoder } from './onnx-decoder.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-weights-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const TINY: ModelConfig = modelConfigSchema.parse(PRESETS.tiny);
const UNTIED: ModelConfig = modelConfigSchema.parse({ ...PRESETS.tiny, tie_word_embeddings: false });
const d = dims(TINY);
const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
const PROMPT = [3, 17, 42, 99, 5, 250, 7];

/** Logits of a prefill of PROMPT on `model`. */
async function logits(model: Uint8Array | string | GraphWithData): Promise<Float32Array> {
  const decoder = await OnnxDecoder.load(model, layout, 'cpu');
  try {
    const n = PROMPT.length;
    const out = await decoder.step({
      batch: 1,
      seq: n,
      past: 0,
      inputIds: BigInt64Array.from(PROMPT, BigInt),
      attentionMask: new BigInt64Array(n).fill(1n),
      positionIds: BigInt64Array.from({ length: n }, (_, i) => BigInt(i)),
      pastKv: Array.from({ length: 2 * d.layers }, () => new Float32Array(0)),
    });
    return out.logits;
  } finally {
    await decoder.release();
  }
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function scaled(w: Float32Array, k: number): Float32Array {
  return w.map((v, i) => v * k + (i % 7) * 1e-3);
}

const storeOf = (config: ModelConfig, w: WeightMap, dtype?: 'float32' | 'bfloat16' | 'float16') =>
  DecoderWeights.fromTensors(config, (n) => w.get(n)!, { dtype });

describe('external data', () => {
  it('a graph with its weights as in-memory external data gives the logits of the inline export', async () => {
    const w = randomWeights(d, 1);
    const inline = await logits(exportDecoderOnnx(TINY, w));
    const ext = exportDecoderExternal(TINY, w);
    // The graph protobuf holds no weights: a few KiB whatever the model's size.
    expect(ext.graph.byteLength).toBeLessThan(64 * 1024);
    expect(ext.data.byteLength).toBeGreaterThan(4 * 98_688);
    expect(maxAbsDiff(await logits({ graph: ext.graph, data: ext.data }), inline)).toBe(0);
    // And the same pair written as model.onnx + model.onnx_data loads by path.
    const files = writeDecoderOnnx(join(root, 'ext'), TINY, w, { externalData: true });
    expect(files.data).toBe(join(root, 'ext', MODEL_DATA_FILE));
    expect(maxAbsDiff(await logits(files.model), inline)).toBe(0);
  });

  it('bfloat16 storage halves the buffer and computes in float32 from the rounded weights', async () => {
    const w = randomWeights(d, 2);
    const f32 = storeOf(TINY, w);
    const bf16 = storeOf(TINY, w, 'bfloat16');
    const weightBytes = (s: DecoderWeights) => s.layout.entries.reduce((n, e) => n + e.bytes, 0);
    expect(weightBytes(bf16)).toBe(weightBytes(f32) / 2);
    const rounded = bf16.readAll();
    const name = 'model.layers.0.mlp.up_proj.weight';
    expect(maxAbsDiff(rounded.get(name)!, w.get(name)!)).toBeLessThan(0.01 * 0.1);
    // bf16 storage == a float32 export of the bf16-rounded weights, exactly.
    expect(maxAbsDiff(await logits(bf16), await logits(exportDecoderOnnx(TINY, rounded)))).toBe(0);
  });
});

describe('DecoderWeights updates', () => {
  it('a partial update gives exactly the logits of a fresh export with those weights, touching only their bytes', async () => {
    for (const config of [TINY, UNTIED]) {
      const w = randomWeights(dims(config), 3);
      const store = storeOf(config, w);
      const before = Uint8Array.from(store.data);
      const update: WeightMap = new Map([
        [
          'model.layers.1.self_attn.q_proj.weight',
          scaled(w.get('model.layers.1.self_attn.q_proj.weight')!, 3),
        ],
        ['model.embed_tokens.weight', scaled(w.get('model.embed_tokens.weight')!, 2)],
      ]);
      const applied = await store.apply(update);
      expect(applied.tensors.sort()).toEqual([...update.keys()].sort());
      const merged: WeightMap = new Map([...w, ...update]);
      expect(maxAbsDiff(await logits(store), await logits(exportDecoderOnnx(config, merged)))).toBe(0);

      // Bytes outside the updated tensors' initializers are untouched.
      const touched = [...update.keys()].flatMap((n) => entriesBySource(store.layout).get(n)!);
      // The tied embedding also fills lm_head.weight.T.
      expect(touched.map((e) => e.name)).toEqual(
        config.tie_word_embeddings
          ? expect.arrayContaining(['model.embed_tokens.weight', 'lm_head.weight.T'])
          : expect.not.arrayContaining(['lm_head.weight.T']),
      );
      let outside = 0;
      let inside = 0;
      for (let i = 0; i < before.length; i++) {
        const inTouched = touched.some((e) => i >= e.offset && i < e.offset + e.bytes);
        if (before[i] !== store.data[i]) {
          if (inTouched) inside++;
          else outside++;
        }
      }
      expect(outside).toBe(0);
      expect(inside).toBeGreaterThan(0);
      expect(applied.bytesWritten).toBe(touched.reduce((n, e) => n + e.bytes, 0));
    }
  });

  it('refuses unknown tensors, wrong sizes and adapters without a scale, and changes nothing then', async () => {
    const w = randomWeights(d, 4);
    const store = storeOf(TINY, w);
    const before = Uint8Array.from(store.data);
    const good = scaled(w.get('model.norm.weight')!, 2);
    await expect(
      store.apply(
        new Map([
          ['model.norm.weight', good],
          ['nope', new Float32Array(1)],
        ]),
      ),
    ).rejects.toThrow(/unknown tensor nope/);
    await expect(store.apply(new Map([['model.norm.weight', new Float32Array(3)]]))).rejects.toThrow(
      ConfigError,
    );
    const A = new Float32Array(2 * d.hidden);
    const B = new Float32Array(d.heads * d.headDim * 2);
    const adapters = new Map([
      ['model.layers.0.self_attn.q_proj.lora_A.weight', A],
      ['model.layers.0.self_attn.q_proj.lora_B.weight', B],
    ]);
    await expect(store.apply(adapters)).rejects.toThrow(/without their scale/);
    await expect(
      store.apply(new Map([['model.layers.0.self_attn.q_proj.lora_A.weight', A]]), 1),
    ).rejects.toThrow(/lacks its lora_B/);
    expect(Buffer.from(store.data).equals(Buffer.from(before))).toBe(true);
  });

  it('LoRA delta sync gives the same weights as publishing the merged ones, and cumulative adapters never compound', async () => {
    const w = randomWeights(d, 5);
    const rank = 4;
    const scale = 16 / rank;
    const targets = ['model.layers.0.self_attn.q_proj.weight', 'model.layers.1.mlp.down_proj.weight'];
    const adapterSet = (seed: number): Map<string, { A: Float32Array; B: Float32Array }> => {
      const out = new Map<string, { A: Float32Array; B: Float32Array }>();
      for (const [k, t] of targets.entries()) {
        const [o, i] = t.includes('q_proj') ? [d.heads * d.headDim, d.hidden] : [d.hidden, d.intermediate];
        out.set(t, {
          A: Float32Array.from({ length: rank * i }, (_, j) => Math.sin(seed + k + j) * 0.05),
          B: Float32Array.from({ length: o * rank }, (_, j) => Math.cos(seed * 3 + k + j) * 0.05),
        });
      }
      return out;
    };
    const asTensors = (set: Map<string, { A: Float32Array; B: Float32Array }>): WeightMap => {
      const m: WeightMap = new Map();
      for (const [t, { A, B }] of set) {
        const module = t.slice(0, -'.weight'.length);
        m.set(`${module}.lora_A.weight`, A);
        m.set(`${module}.lora_B.weight`, B);
      }
      return m;
    };
    const mergedFull = (set: Map<string, { A: Float32Array; B: Float32Array }>): WeightMap =>
      new Map([...set].map(([t, { A, B }]) => [t, mergeLora(w.get(t)!, A, B, scale)]));

    const delta = storeOf(TINY, w);
    const full = storeOf(TINY, w);
    for (const seed of [1, 2, 3]) {
      const set = adapterSet(seed);
      const sent = asTensors(set);
      const applied = await delta.apply(sent, scale);
      expect(applied.tensors.sort()).toEqual([...targets].sort());
      await full.apply(mergedFull(set));
      // Exactly the same bytes: the engine's merge is the trainer's merge.
      expect(Buffer.from(delta.data).equals(Buffer.from(full.data))).toBe(true);
      let sentBytes = 0;
      for (const t of sent.values()) sentBytes += t.byteLength;
      let fullBytes = 0;
      for (const t of w.values()) fullBytes += t.byteLength;
      expect(sentBytes).toBeLessThan(fullBytes / 4);
    }
    expect(maxAbsDiff(await logits(delta), await logits(full))).toBe(0);
    // A full update of an adapted tensor becomes its new base.
    const newBase = scaled(w.get(targets[0])!, 2);
    await delta.apply(new Map([[targets[0], newBase]]));
    const set = adapterSet(9);
    await delta.apply(asTensors(set), scale);
    const { A, B } = set.get(targets[0])!;
    expect(maxAbsDiff(delta.read(targets[0]), mergeLora(newBase, A, B, scale))).toBe(0);
  });

  it('takes the weights of clawray model.onnx files (inline or external) by name, and returns null for foreign ones', async () => {
    const w = randomWeights(d, 6);
    const inlineDir = join(root, 'inline');
    writeDecoderOnnx(inlineDir, TINY, w);
    const { decodeModel } = await import('../models/onnx-proto.js');
    const fromInline = DecoderWeights.fromOnnx(
      decodeModel(readFileSync(join(inlineDir, 'model.onnx'))),
      TINY,
      inlineDir,
    );
    const extDir = join(root, 'external');
    writeDecoderOnnx(extDir, TINY, w, { externalData: true });
    const fromExt = DecoderWeights.fromOnnx(
      decodeModel(readFileSync(join(extDir, 'model.onnx'))),
      TINY,
      extDir,
    );
    const reference = storeOf(TINY, w);
    expect(Buffer.from(fromInline!.data).equals(Buffer.from(reference.data))).toBe(true);
    expect(Buffer.from(fromExt!.data).equals(Buffer.from(reference.data))).toBe(true);
    const foreign = decodeModel(readFileSync(join(inlineDir, 'model.onnx')));
    foreign.metadata_props = [];
    expect(DecoderWeights.fromOnnx(foreign, TINY, inlineDir)).toBeNull();
  });
});
