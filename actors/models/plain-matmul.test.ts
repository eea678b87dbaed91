import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { matMul2d, oneHotEmbed } from './plain-matmul.js';
import { selectBackend } from './tfjs-backend.js';

/** Values in [-1, 1) from a fixed sequence, so a failure repeats. */
function values(n: number, seed: number): number[] {
  return Array.from({ length: n }, (_, i) => ((i * 7919 + seed * 104_729) % 2003) / 1001.5 - 1);
}

function maxDiff(a: tf.Tensor, b: tf.Tensor): number {
  return tf.tidy(() => tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]);
}

describe('plain products on the wasm backend', () => {
  beforeAll(async () => {
    expect(await selectBackend('wasm')).toBe('wasm');
  });

  it('matMul2d: the product and both gradients of tf.matMul', () => {
    const a = tf.tensor2d(values(6 * 5, 1), [6, 5]);
    const b = tf.tensor2d(values(5 * 4, 2), [5, 4]);
    const w = tf.tensor2d(values(6 * 4, 3), [6, 4]);
    const loss = (f: (x: tf.Tensor2D, y: tf.Tensor2D) => tf.Tensor2D) => (x: tf.Tensor, y: tf.Tensor) =>
      tf.sum(tf.mul(f(x as tf.Tensor2D, y as tf.Tensor2D), w));
    const ours = tf.grads(loss(matMul2d));
    const theirs = tf.grads(loss((x, y) => tf.matMul(x, y)));
    const [da, db] = ours([a, b]);
    const [ea, eb] = theirs([a, b]);
    expect(maxDiff(matMul2d(a, b), tf.matMul(a, b))).toBeLessThan(1e-6);
    expect(maxDiff(da, ea)).toBeLessThan(1e-5);
    expect(maxDiff(db, eb)).toBeLessThan(1e-5);
  });

  it('oneHotEmbed: the rows of the ids, and a weight gradient that sums their upstream rows', () => {
    const vocab = 7;
    const hidden = 3;
    const embed = tf.tensor2d(values(vocab * hidden, 4), [vocab, hidden]);
    const ids = [2, 5, 2, 0];
    const dy = values(ids.length * hidden, 5);
    const rows = oneHotEmbed(tf.tensor1d(ids, 'int32'), embed).arraySync();
    const table = embed.arraySync();
    expect(rows.map((r) => r.map((v) => v.toFixed(6)))).toEqual(
      ids.map((i) => table[i].map((v) => v.toFixed(6))),
    );
    const grad = tf
      .grad((e: tf.Tensor) =>
        tf.sum(
          tf.mul(
            oneHotEmbed(tf.tensor1d(ids, 'int32'), e as tf.Tensor2D),
            tf.tensor2d(dy, [ids.length, hidden]),
          ),
        ),
      )(embed)
      .arraySync() as number[][];
    const expected = Array.from({ length: vocab }, () => new Array<number>(hidden).fill(0));
    ids.forEach((id, t) => {
      for (let j = 0; j < hidden; j++) expected[id][j] += dy[t * hidden + j];
    });
    for (let v = 0; v < vocab; v++)
      for (let j = 0; j < hidden; j++) expect(grad[v][j]).toBeCloseTo(expected[v][j], 5);
  });
});
