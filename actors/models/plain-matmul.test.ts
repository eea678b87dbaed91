import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { batchMatMul, headMatMul, matMul2d, oneHotEmbed } from './plain-matmul.js';
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

  it('headMatMul: x · Wᵀ and its gradients for a head taller than a chunk, trainable or frozen', () => {
    const [rows, hidden, vocab] = [5, 6, 40_000];
    const x = tf.tensor2d(values(rows * hidden, 6), [rows, hidden]);
    const w = tf.variable(tf.tensor2d(values(vocab * hidden, 7), [vocab, hidden]));
    const upstream = tf.tensor2d(values(rows * vocab, 8), [rows, vocab]);
    const loss = (f: (a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D) => (a: tf.Tensor, b: tf.Tensor) =>
      tf.sum(tf.mul(f(a as tf.Tensor2D, b as tf.Tensor2D), upstream));
    const reference = (a: tf.Tensor2D, b: tf.Tensor2D) => tf.matMul(a, b, false, true) as tf.Tensor2D;
    // Relative to the largest entry: sums over 40,000 terms, added in another order.
    const close = (a: tf.Tensor, b: tf.Tensor) =>
      maxDiff(a, b) / tf.tidy(() => tf.max(tf.abs(b)).dataSync()[0]);
    expect(maxDiff(headMatMul(x, w), reference(x, w))).toBeLessThan(1e-5);
    const [dx, dw] = tf.grads(loss(headMatMul))([x, w]);
    const [ex, ew] = tf.grads(loss(reference))([x, w]);
    expect(close(dx, ex)).toBeLessThan(1e-5);
    expect(close(dw, ew)).toBeLessThan(1e-5);
    // Frozen (a LoRA base): the input's gradient alone, the same numbers.
    const frozen = tf.variable(w, false);
    const dxFrozen = tf.grad((a: tf.Tensor) =>
      tf.sum(tf.mul(headMatMul(a as tf.Tensor2D, frozen), upstream)),
    )(x);
    expect(close(dxFrozen, ex)).toBeLessThan(1e-5);
    for (const t of [x, w, upstream, dx, dw, ex, ew, frozen, dxFrozen]) t.dispose();
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

  // Shapes big enough to take the split path ([2, 3] batch entries of 40×24 · 24×30), and one
  // below its threshold; each with every transpose combination, against tf.matMul and its own
  // gradient (the backend's batched loop).
  const cases: Array<[string, number, number, number, number[]]> = [
    ['split', 40, 24, 30, [2, 3]],
    ['batched', 3, 4, 5, [2]],
  ];
  for (const [path, m, k, p, lead] of cases)
    for (const [ta, tb] of [
      [false, false],
      [false, true],
      [true, false],
      [true, true],
    ])
      it(`batchMatMul (${path} path, transposeA ${ta}, transposeB ${tb}): the product and both gradients of tf.matMul`, () => {
        const aShape = [...lead, ...(ta ? [k, m] : [m, k])];
        const bShape = [...lead, ...(tb ? [p, k] : [k, p])];
        const size = (s: number[]) => s.reduce((x, y) => x * y, 1);
        const a = tf.tensor(values(size(aShape), 6), aShape);
        const b = tf.tensor(values(size(bShape), 7), bShape);
        const w = tf.tensor(values(size([...lead, m, p]), 8), [...lead, m, p]);
        const loss = (f: (x: tf.Tensor, y: tf.Tensor) => tf.Tensor) => (x: tf.Tensor, y: tf.Tensor) =>
          tf.sum(tf.mul(f(x, y), w));
        const [da, db] = tf.grads(loss((x, y) => batchMatMul(x, y, ta, tb)))([a, b]);
        const [ea, eb] = tf.grads(loss((x, y) => tf.matMul(x, y, ta, tb)))([a, b]);
        const ours = batchMatMul(a, b, ta, tb);
        expect(ours.shape).toEqual([...lead, m, p]);
        expect(maxDiff(ours, tf.matMul(a, b, ta, tb))).toBeLessThan(1e-4);
        expect(maxDiff(da, ea)).toBeLessThan(1e-4);
        expect(maxDiff(db, eb)).toBeLessThan(1e-4);
      });

  it('batchMatMul leaves no more tensors behind than tf.matMul', () => {
    const a = tf.tensor(values(4 * 40 * 24, 9), [4, 40, 24]);
    const b = tf.tensor(values(4 * 24 * 30, 10), [4, 24, 30]);
    // tf.grads keeps its results out of the enclosing tidy: what tf.matMul leaves is the baseline.
    const left = (f: (x: tf.Tensor, y: tf.Tensor) => tf.Tensor) => {
      const before = tf.memory().numTensors;
      tf.tidy(() => tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(f(x, y)))([a, b]));
      return tf.memory().numTensors - before;
    };
    left((x, y) => batchMatMul(x, y));
    expect(left((x, y) => batchMatMul(x, y))).toBe(left((x, y) => tf.matMul(x, y)));
  });
});
