import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { hostEmbed, hostHeadMatMul, hostLinear } from './host-matrix.js';
import { selectBackend } from './tfjs-backend.js';

/** Values in [-1, 1) from a fixed sequence, so a failure repeats. */
function values(n: number, seed: number): Float32Array {
  return Float32Array.from({ length: n }, (_, i) => ((i * 7919 + seed * 104_729) % 2003) / 1001.5 - 1);
}

/** max |a − b| relative to the largest |b|. */
function relDiff(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0] / tf.max(tf.abs(b)).dataSync()[0]);
}

describe('products with a frozen weight in host memory (wasm backend)', () => {
  beforeAll(async () => {
    expect(await selectBackend('wasm')).toBe('wasm');
  });

  it('hostLinear: x · Wᵀ and dx of tf.matMul, and nothing of W left on the backend', () => {
    const [rows, inF, out] = [7, 12, 20];
    const x = tf.tensor2d(values(rows * inF, 1), [rows, inF]);
    const weight = { data: values(out * inF, 2), rows: out, cols: inF };
    const w = tf.tensor2d(weight.data, [out, inF]);
    const upstream = tf.tensor2d(values(rows * out, 3), [rows, out]);
    const before = tf.memory().numTensors;
    const y = hostLinear(x, weight);
    expect(tf.memory().numTensors).toBe(before + 1); // the product alone
    expect(relDiff(y, tf.matMul(x, w, false, true))).toBeLessThan(1e-6);
    const dx = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(hostLinear(a as tf.Tensor2D, weight), upstream)))(x);
    const ex = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(tf.matMul(a, w, false, true), upstream)))(x);
    expect(relDiff(dx, ex)).toBeLessThan(1e-6);
    tf.dispose([x, w, upstream, y, dx, ex]);
  });

  it('hostHeadMatMul: logits and dx for a head taller than a chunk', () => {
    const [rows, hidden, vocab] = [5, 6, 40_000];
    const x = tf.tensor2d(values(rows * hidden, 6), [rows, hidden]);
    const head = { data: values(vocab * hidden, 7), rows: vocab, cols: hidden };
    const w = tf.tensor2d(head.data, [vocab, hidden]);
    const upstream = tf.tensor2d(values(rows * vocab, 8), [rows, vocab]);
    const logits = hostHeadMatMul(x, head);
    expect(logits.shape).toEqual([rows, vocab]);
    expect(relDiff(logits, tf.matMul(x, w, false, true))).toBeLessThan(1e-5);
    const dx = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(hostHeadMatMul(a as tf.Tensor2D, head), upstream)))(x);
    const ex = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(tf.matMul(a, w, false, true), upstream)))(x);
    // Sums over 40,000 terms, added chunk by chunk.
    expect(relDiff(dx, ex)).toBeLessThan(1e-5);
    tf.dispose([x, w, upstream, logits, dx, ex]);
  });

  it('hostEmbed: the rows of the ids, repeated ids included', () => {
    const embed = { data: values(10 * 4, 9), rows: 10, cols: 4 };
    const rows = hostEmbed([3, 0, 3, 9], embed);
    expect(rows.shape).toEqual([4, 4]);
    const data = rows.dataSync();
    for (const [i, id] of [3, 0, 3, 9].entries())
      expect(Array.from(data.subarray(i * 4, i * 4 + 4))).toEqual(
        Array.from(embed.data.subarray(id * 4, id * 4 + 4)),
      );
    rows.dispose();
  });
});
