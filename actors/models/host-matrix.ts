/**
 * Products with a frozen weight kept in host memory (a Float32Array, never a backend tensor),
 * uploaded only for the product that uses it and freed right after: the forward's and, again,
 * its gradient's. Under LoRA the base is frozen, so the backend then holds adapters, norms and
 * activations only — the parameter offload of DeepSpeed's ZeRO-Offload, for a base that the
 * backend cannot hold: tfjs-backend-wasm's heap stops at 4 GiB, and Qwen3-0.6B's base alone
 * is 2.4 GB in float32, which left no room for a pass's activations.
 *
 * An upload is a copy of the weight into the backend, about what the resident path's
 * transposed copy of each weight costs anyway; the gradient's upload is the extra cost (one
 * more copy of the base per pass). No gradient for the weight: it is frozen.
 */
import * as tf from '@tensorflow/tfjs';
import { HEAD_CHUNK_ROWS, headInputGrad } from './plain-matmul.js';

type Arg = tf.Tensor | tf.GradSaveFunc;

/** A row-major [rows, cols] matrix in host memory (a Linear's weight is [out, in]). */
export interface HostMatrix {
  data: Float32Array;
  rows: number;
  cols: number;
}

const upload = (m: HostMatrix, start = 0, end = m.rows): tf.Tensor2D =>
  tf.tensor2d(m.data.subarray(start * m.cols, end * m.cols), [end - start, m.cols]);

/**
 * x · Wᵀ for x [n, in] and a frozen W [out, in]. The product is plain (W's transposed copy
 * made on the backend), the product form tfjs-backend-wasm runs through XNNPACK; dx = dy · W.
 */
export function hostLinear(x: tf.Tensor2D, weight: HostMatrix): tf.Tensor2D {
  return tf.customGrad((...args: Arg[]) => {
    const input = args[0] as tf.Tensor2D;
    return {
      value: tf.tidy(() => tf.matMul(input, tf.transpose(upload(weight))) as tf.Tensor2D),
      gradFunc: (dy: tf.Tensor2D) => tf.tidy(() => tf.matMul(dy, upload(weight))),
    };
  })(x) as tf.Tensor2D;
}

/**
 * x · Wᵀ for an LM head: x [n, hidden] (n ≪ vocab), W [vocab, hidden] frozen, uploaded a
 * chunk of rows at a time in both directions, so that at most one chunk of the head is on
 * the backend: logits are (W_c · xᵀ) per chunk, whose packed operand is the small xᵀ, and
 * dx = Σ_c dy[:, c] · W_c.
 */
export function hostHeadMatMul(x: tf.Tensor2D, head: HostMatrix): tf.Tensor2D {
  const chunks: Array<[number, number]> = [];
  for (let start = 0; start < head.rows; start += HEAD_CHUNK_ROWS)
    chunks.push([start, Math.min(head.rows, start + HEAD_CHUNK_ROWS)]);
  return tf.customGrad((...args: Arg[]) => {
    const input = args[0] as tf.Tensor2D;
    const value = tf.tidy(() => {
      const xT = tf.transpose(input);
      const parts = chunks.map(([start, end]) => {
        const w = upload(head, start, end);
        const part = tf.matMul(w, xT);
        w.dispose();
        return part;
      });
      return tf.transpose(tf.concat(parts, 0)) as tf.Tensor2D;
    });
    return {
      value,
      gradFunc: (dy: tf.Tensor2D) => headInputGrad(dy, (start, end) => upload(head, start, end)),
    };
  })(x) as tf.Tensor2D;
}

/** Rows `ids` of a frozen embedding, looked up in host memory: [ids.length, cols]. */
export function hostEmbed(ids: readonly number[], embed: HostMatrix): tf.Tensor2D {
  const { cols } = embed;
  const out = new Float32Array(ids.length * cols);
  ids.forEach((id, i) => {
    out.set(embed.data.subarray(id * cols, (id + 1) * cols), i * cols);
  });
  return tf.tensor2d(out, [ids.length, cols]);
}
