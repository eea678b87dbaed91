/**
 * A 2-D matrix product that stays on tfjs-backend-wasm's fast path, forward and backward.
 *
 * The wasm backend hands a matMul to XNNPACK only when it is 2-D, unbatched and neither
 * operand is transposed; anything else runs through a naive loop. TensorFlow.js's own
 * gradient of a matMul multiplies by transposed operands, so the one-hot embedding's weight
 * gradient (a [3024, 384]ᵀ · [3024, 64] product for 16 × 190 tokens on the tiny model) took
 * 240 ms where an explicit transposed copy and a plain product take 25 ms: a training step
 * 5–8% faster. Other backends (native TensorFlow, cpu) take tf.matMul's own gradient.
 *
 * Attention's batched products (`batchMatMul`) are split into one 2-D product per batch
 * entry. The split must not use tf.slice/tf.split: the wasm Slice kernel copies the whole
 * input out of the heap for every slice it cuts (quadratic in the batch), which is why an
 * earlier split made a step slower. Reading each entry's range of the heap directly keeps the
 * split linear: 3–4× faster than the batched naive loop, forward and backward, at the tiny
 * model's training shapes.
 */
import * as tf from '@tensorflow/tfjs';

type Arg = tf.Tensor | tf.GradSaveFunc;

const onWasm = () => tf.getBackend() === 'wasm';
/** A backend whose tensors live on a device: cut them there, never read them back to cut them. */
const onDevice = () => tf.getBackend() === 'webgpu';

/** The wasm backend's heap read: a copy of elements [start, end) of one tensor. */
interface RangeReader {
  readSync(dataId: object, start?: number, end?: number): Float32Array;
}

/**
 * Below this many multiply-adds per batch entry the batched loop is as fast as a split (a
 * decode step's attention, say); above it each entry's plain product wins.
 */
const SPLIT_MIN_MACS = 16_384;

/** a · b for 2-D a, b, with a gradient of plain products (explicit transposed copies). */
export function matMul2d(a: tf.Tensor2D, b: tf.Tensor2D): tf.Tensor2D {
  if (!onWasm()) return tf.matMul(a, b);
  return tf.customGrad((...args: Arg[]) => {
    const [x, y, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
    save([x, y]);
    return {
      value: tf.matMul(x, y) as tf.Tensor2D,
      gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => {
        const [xs, ys] = saved as tf.Tensor2D[];
        return [tf.matMul(dy, tf.transpose(ys)), tf.matMul(tf.transpose(xs), dy)];
      },
    };
  })(a, b) as tf.Tensor2D;
}

/**
 * The embedding as a one-hot product (for backends without a `gather` gradient): rows of
 * `embed` for `ids`. The [tokens, vocab] one-hot is built again for the gradient rather than
 * kept from the forward pass, and only the weight's gradient is computed (the ids have none).
 */
export function oneHotEmbed(ids: tf.Tensor1D, embed: tf.Tensor2D): tf.Tensor2D {
  const vocab = embed.shape[0];
  return tf.customGrad((...args: Arg[]) => {
    const [tokens, weight, save] = args as [tf.Tensor1D, tf.Tensor2D, tf.GradSaveFunc];
    save([tokens]);
    return {
      value: matMul2d(tf.oneHot(tokens, vocab).toFloat() as tf.Tensor2D, weight),
      gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => {
        const oneHotT = tf.transpose(tf.oneHot(saved[0] as tf.Tensor1D, vocab).toFloat());
        return [tf.zerosLike(saved[0]), tf.matMul(oneHotT, dy)];
      },
    };
  })(ids, embed) as tf.Tensor2D;
}

/** `[n, m, k] · [n, k, p]` as n plain 2-D products, read from the heap one entry at a time. */
function splitProduct(a: tf.Tensor3D, b: tf.Tensor3D): tf.Tensor3D {
  const [n, m, k] = a.shape;
  const p = b.shape[2];
  // The product or its transpose, whichever holds the smaller right operand (XNNPACK packs the
  // right operand on every call).
  if (p > m) return tf.tidy(() => transposeLast(splitProduct(transposeLast(b), transposeLast(a))));
  return tf.tidy(() => {
    const heap = tf.backend() as unknown as RangeReader;
    const entry = (x: tf.Tensor3D, i: number, rows: number, cols: number) =>
      tf.tensor2d(heap.readSync(x.dataId, i * rows * cols, (i + 1) * rows * cols), [rows, cols]);
    const parts = Array.from({ length: n }, (_, i) => tf.matMul(entry(a, i, m, k), entry(b, i, k, p)));
    return tf.concat(parts, 0).reshape([n, m, p]) as tf.Tensor3D;
  });
}

const transposeLast = (x: tf.Tensor3D) => tf.transpose(x, [0, 2, 1]) as tf.Tensor3D;

/**
 * tf.matMul(a, b, transposeA, transposeB) for operands of the same rank ≥ 3 and equal leading
 * (batch) dimensions, with its gradient. On the wasm backend, for products big enough to gain,
 * it runs as one plain product per batch entry; elsewhere it is tf.matMul.
 */
export function batchMatMul<T extends tf.Tensor>(
  a: T,
  b: tf.Tensor,
  transposeA = false,
  transposeB = false,
): T {
  const lead = a.shape.slice(0, -2);
  const [m, k] = transposeA ? [a.shape[a.rank - 1], a.shape[a.rank - 2]] : a.shape.slice(-2);
  const p = transposeB ? b.shape[b.rank - 2] : b.shape[b.rank - 1];
  // The heap is read as float32: other dtypes keep tf.matMul.
  const plain = !onWasm() || a.dtype !== 'float32' || b.dtype !== 'float32' || m * k * p < SPLIT_MIN_MACS;
  if (plain) return tf.matMul(a, b, transposeA, transposeB) as T;
  const n = lead.reduce((x, y) => x * y, 1);
  const flat = (x: tf.Tensor) => x.reshape([n, ...x.shape.slice(-2)]) as tf.Tensor3D;
  const product = tf.customGrad((...args: Arg[]) => {
    const [x, y, save] = args as [tf.Tensor3D, tf.Tensor3D, tf.GradSaveFunc];
    save([x, y]);
    const left = (u: tf.Tensor3D) => (transposeA ? transposeLast(u) : u);
    const right = (u: tf.Tensor3D) => (transposeB ? transposeLast(u) : u);
    return {
      value: splitProduct(left(x), right(y)),
      gradFunc: (dy: tf.Tensor3D, saved: tf.Tensor[]) => {
        const [xs, ys] = saved as tf.Tensor3D[];
        const da = splitProduct(dy, transposeLast(right(ys)));
        const db = splitProduct(transposeLast(left(xs)), dy);
        return [transposeA ? transposeLast(da) : da, transposeB ? transposeLast(db) : db];
      },
    };
  });
  return (product(flat(a), flat(b)) as tf.Tensor).reshape([...lead, m, p]) as T;
}

/** Rows of an LM head multiplied at once (64 MiB of a 1024-wide head). */
export const HEAD_CHUNK_ROWS = 16_384;

/**
 * dx = dy · W for an LM head W [vocab, hidden] and dy [rows, vocab], over W's rows in chunks:
 * `weightRows(start, end)` gives rows [start, end) of W as a new tensor (disposed here), so that
 * no more than one chunk of W is packed (or on the backend at all) at once.
 */
export function headInputGrad(
  dy: tf.Tensor2D,
  weightRows: (start: number, end: number) => tf.Tensor2D,
): tf.Tensor2D {
  return tf.tidy(() => {
    const [rows, vocab] = dy.shape;
    const dyT = tf.transpose(dy) as tf.Tensor2D; // [vocab, rows]: a chunk's rows are one range
    // On wasm a range straight from the heap; on a device a slice there; elsewhere one read of
    // the whole.
    const whole = onWasm() || onDevice() ? undefined : (dyT.dataSync() as Float32Array);
    const heap = tf.backend() as unknown as RangeReader;
    const dyRows = (start: number, end: number): tf.Tensor2D =>
      onDevice()
        ? dyT.slice([start, 0], [end - start, rows])
        : tf.tensor2d(
            whole
              ? whole.subarray(start * rows, end * rows)
              : heap.readSync(dyT.dataId, start * rows, end * rows),
            [end - start, rows],
          );
    let sum: tf.Tensor2D | undefined;
    for (let start = 0; start < vocab; start += HEAD_CHUNK_ROWS) {
      const end = Math.min(vocab, start + HEAD_CHUNK_ROWS);
      const w = weightRows(start, end);
      const g = dyRows(start, end);
      const part = tf.matMul(tf.transpose(g), w) as tf.Tensor2D;
      const next = sum ? (tf.add(sum, part) as tf.Tensor2D) : part;
      sum?.dispose();
      w.dispose();
      g.dispose();
      sum = next;
    }
    return sum!;
  });
}

/**
 * x · Wᵀ for an LM head: x [rows, hidden], W [vocab, hidden] with vocab ≫ rows. On the wasm
 * backend a plain x · Wᵀ needs W's transposed copy and XNNPACK packs that right operand on
 * every call: at Qwen3's 151,936 × 1024 head two transient copies of 622 MB beside the weight
 * itself, which a 4 GiB heap cannot spare. So the forward computes (W · xᵀ)ᵀ, where the packed
 * operand is xᵀ (small), and the backward's dx = dy · W runs over W's rows in chunks read
 * straight from the heap (each chunk packed alone). W's gradient (a trainable head) is
 * (dyᵀ · x), whose packed operand is x. Other backends take tf.matMul with transposeB.
 */
export function headMatMul(
  x: tf.Tensor2D,
  weight: tf.Tensor2D,
  trainable = weight instanceof tf.Variable && weight.trainable,
): tf.Tensor2D {
  if (!onWasm() || weight.dtype !== 'float32') return tf.matMul(x, weight, false, true);
  const hidden = weight.shape[1];
  const forward = (input: tf.Tensor2D) => tf.transpose(tf.matMul(weight, tf.transpose(input))) as tf.Tensor2D;
  const inputGrad = (dy: tf.Tensor2D): tf.Tensor2D =>
    headInputGrad(dy, (start, end) => {
      const heap = tf.backend() as unknown as RangeReader;
      return tf.tensor2d(heap.readSync(weight.dataId, start * hidden, end * hidden), [end - start, hidden]);
    });
  if (trainable) {
    return tf.customGrad((...args: Arg[]) => {
      // The weight is an input only so that customGrad returns its gradient; forward reads `weight`.
      const [input, , save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
      save([input]);
      return {
        value: forward(input),
        gradFunc: (dy: tf.Tensor2D, [saved]: tf.Tensor[]) => [
          inputGrad(dy),
          tf.matMul(tf.transpose(dy), saved as tf.Tensor2D),
        ],
      };
    })(x, weight) as tf.Tensor2D;
  }
  // A frozen head (LoRA's base): no gradient for W at all.
  return tf.customGrad((...args: Arg[]) => {
    const [input] = args as [tf.Tensor2D, tf.GradSaveFunc];
    return { value: forward(input), gradFunc: (dy: tf.Tensor2D) => inputGrad(dy) };
  })(x) as tf.Tensor2D;
}
