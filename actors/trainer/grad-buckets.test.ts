/**
 * DDP's buckets on the trainer: the layout (backward order, sizes, one host buffer each), the
 * decoder's gradient tap (each trainable variable's whole gradient exactly once, the last layers'
 * first, the tied embedding last, with and without gradient checkpointing, full and LoRA), and a
 * tapped pass starting every bucket's read during the backward pass with the sums of the step's
 * earlier passes added. On the cpu backend: the logic, not the device (webgpu-trainer.test.ts).
 */
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { dims, modelConfigSchema, PRESETS } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { selectBackend } from '../models/tfjs-backend.js';
import { TfjsDecoder, tokenLogprobs } from '../models/tfjs-decoder.js';
import { weightSpecs } from '../models/weight-names.js';
import { GradientBuckets, planBuckets } from './grad-buckets.js';
import { initLoraAdapters, loraScale, loraTargets } from './lora.js';

const config = modelConfigSchema.parse(PRESETS.tiny);
const d = dims(config);
const weights = randomWeights(d, 5);
const inputIds = [
  [3, 9, 27, 81, 243, 5],
  [7, 49, 343 % 384, 11, 2, 1],
];
const targets = inputIds.map((row) => [...row.slice(1), 0]);

beforeAll(async () => {
  await selectBackend('cpu');
});

function loraDecoder(): TfjsDecoder {
  const lora = { rank: 2, alpha: 4, dropout: 0, targetModules: ['q_proj', 'down_proj'] };
  const shapes = new Map(weightSpecs(d).map((s) => [s.name, s.shape]));
  const adapters = initLoraAdapters(loraTargets(shapes.keys(), lora), shapes, lora, 1);
  return new TfjsDecoder(config, weights, {
    lora: {
      scale: loraScale(lora),
      adapters: new Map([...adapters].map(([t, a]) => [t, { A: a.A, B: a.B.map(() => 0.01), rank: a.rank }])),
    },
  });
}

/** One backward pass with the tap: the tapped gradients in order, and variableGrads' own. */
function tappedPass(decoder: TfjsDecoder, checkpoint: boolean) {
  const order: string[] = [];
  const tapped = new Map<string, Float32Array>();
  const vars = [...decoder.trainableVariables.values()];
  const { value, grads } = tf.variableGrads(() => {
    const { logits } = decoder.forward({
      inputIds,
      training: true,
      checkpoint,
      onGradient: (name, grad) => {
        order.push(name);
        tapped.set(name, grad.dataSync() as Float32Array);
      },
    });
    return tf.neg(tf.sum(tokenLogprobs(logits, targets))) as tf.Scalar;
  }, vars);
  value.dispose();
  const byName = new Map<string, Float32Array>();
  for (const [name, v] of decoder.trainableVariables) {
    byName.set(name, grads[v.name].dataSync() as Float32Array);
    grads[v.name].dispose();
  }
  return { order, tapped, grads: byName };
}

describe('TfjsDecoder onGradient', () => {
  for (const checkpoint of [false, true]) {
    it(`hands over every trainable gradient once, last layer first${checkpoint ? ', with gradient checkpointing' : ''}`, () => {
      for (const decoder of [new TfjsDecoder(config, weights), loraDecoder()]) {
        const before = tf.memory().numTensors;
        const { order, tapped, grads } = tappedPass(decoder, checkpoint);
        expect([...order].sort()).toEqual([...decoder.trainableVariables.keys()].sort());
        for (const [name, g] of grads) expect(tapped.get(name)).toEqual(g);
        const lastOf = (layer: number) =>
          Math.max(...order.map((n, i) => (n.startsWith(`model.layers.${layer}.`) ? i : -1)));
        const firstOf = (layer: number) => order.findIndex((n) => n.startsWith(`model.layers.${layer}.`));
        expect(lastOf(1)).toBeLessThan(firstOf(0));
        // Tied to the LM head, the embedding's gradient is complete only at the very end.
        if (decoder.trainableVariables.has('model.embed_tokens.weight')) {
          expect(order.at(-1)).toBe('model.embed_tokens.weight');
        }
        expect(tf.memory().numTensors).toBe(before);
        decoder.dispose();
      }
    });
  }
});

describe('planBuckets', () => {
  it('cuts the parameters in backward order into buckets of about the cap, each with its own buffer', () => {
    const sizes = new Map(weightSpecs(d).map((s) => [s.name, s.shape.reduce((a, b) => a * b, 1)]));
    const cap = 40_000;
    const buckets = planBuckets(sizes, cap);
    const names = buckets.flatMap((b) => b.names);
    expect([...names].sort()).toEqual([...sizes.keys()].sort());
    expect(names[0]).toBe('model.norm.weight');
    expect(names.at(-1)).toBe('model.embed_tokens.weight');
    expect(names.findLastIndex((n) => n.startsWith('model.layers.1.'))).toBeLessThan(
      names.findIndex((n) => n.startsWith('model.layers.0.')),
    );
    for (const b of buckets) {
      expect(b.host.length).toBe(b.sizes.reduce((x, y) => x + y, 0));
      // Over the cap only when one parameter alone is.
      if (b.names.length > 1) expect(b.host.length * 4).toBeLessThanOrEqual(cap);
    }
    // The layout is a function of names and sizes: every rank cuts the same buckets.
    expect(planBuckets(new Map([...sizes].reverse()), cap).map((b) => b.names)).toEqual(
      buckets.map((b) => b.names),
    );
  });
});

describe('GradientBuckets', () => {
  it("reads every bucket during the backward pass, the earlier passes' sums added", async () => {
    const decoder = loraDecoder();
    const sizes = new Map([...decoder.trainableVariables].map(([n, v]) => [n, v.size]));
    const buckets = new GradientBuckets(sizes, 2_000);
    expect(buckets.buckets.length).toBeGreaterThan(2);
    const earlier = new Map([...decoder.trainableVariables].map(([n, v]) => [n, tf.onesLike(v)]));
    const pass = buckets.tap(earlier);
    const vars = [...decoder.trainableVariables.values()];
    const { value, grads } = tf.variableGrads(() => {
      const { logits } = decoder.forward({
        inputIds,
        training: true,
        onGradient: pass.onGradient,
      });
      return tf.neg(tf.sum(tokenLogprobs(logits, targets))) as tf.Scalar;
    }, vars);
    value.dispose();
    const byName = new Map([...decoder.trainableVariables].map(([n, v]) => [n, grads[v.name]]));
    expect(pass.startedDuringBackward).toBe(buckets.buckets.length);
    const hosts = await Promise.all(pass.finish(byName));
    buckets.buckets.forEach((bucket, k) => {
      expect(hosts[k]).toBe(bucket.host);
      let offset = 0;
      bucket.names.forEach((name, i) => {
        const want = (byName.get(name)!.dataSync() as Float32Array).map((g) => g + 1);
        expect(bucket.host.subarray(offset, offset + bucket.sizes[i])).toEqual(want);
        offset += bucket.sizes[i];
      });
    });
    for (const t of [...byName.values(), ...earlier.values()]) t.dispose();
    decoder.dispose();
  });
});
