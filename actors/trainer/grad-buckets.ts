/**
 * Gradient buckets for data parallelism on a device (PyTorch DDP's `Reducer`): the trainable
 * parameters in the order the backward pass finishes their gradients (the LM head and the last
 * layers first, the embedding last), cut into buckets of about `bucketBytes`. During the last
 * backward pass of a step, as soon as every gradient of a bucket exists (TfjsDecoder's
 * `onGradient`), the bucket is joined on the device and its read-back is queued right there in
 * the device's command stream; the all-reduce of bucket k then runs as soon as its read lands,
 * while the device still computes the gradients of the buckets after it.
 *
 * The layout depends only on the parameters' names and sizes, so every rank cuts the same
 * buckets and calls the all-reduce for them in the same order. The host buffers the reads land
 * in and the all-reduce sums in place are made once and reused every step.
 */
import * as tf from '@tensorflow/tfjs';
import type { GradientTap } from '../models/tfjs-decoder.js';

/** PyTorch DDP's default `bucket_cap_mb`. */
export const DEFAULT_BUCKET_BYTES = 25 * 2 ** 20;

export interface Bucket {
  /** Parameter names, in layout order. */
  names: string[];
  /** Each one's element count. */
  sizes: number[];
  /** The host buffer its read lands in and the all-reduce sums (reused every step). */
  host: Float32Array;
}

/**
 * Where a name sits in the backward pass: the LM head and final norm are done first, then the
 * layers from the last, the embedding last (tied to the head, its gradient completes only there).
 */
function readiness(name: string): number {
  const layer = /^model\.layers\.(\d+)\./.exec(name);
  if (layer) return 1 + Number(layer[1]);
  if (name.startsWith('model.embed_tokens')) return 0;
  return 2e6; // lm_head, model.norm
}

/** The bucket layout of these parameters (name → element count). */
export function planBuckets(
  sizes: ReadonlyMap<string, number>,
  bucketBytes = DEFAULT_BUCKET_BYTES,
): Bucket[] {
  const names = [...sizes.keys()].sort((a, b) => readiness(b) - readiness(a) || (a < b ? -1 : a > b ? 1 : 0));
  const limit = Math.max(1, Math.floor(bucketBytes / 4));
  const buckets: Bucket[] = [];
  let current: { names: string[]; sizes: number[]; floats: number } | undefined;
  for (const name of names) {
    const size = sizes.get(name)!;
    if (current && current.floats + size > limit) {
      buckets.push({ names: current.names, sizes: current.sizes, host: new Float32Array(current.floats) });
      current = undefined;
    }
    current ??= { names: [], sizes: [], floats: 0 };
    current.names.push(name);
    current.sizes.push(size);
    current.floats += size;
  }
  if (current)
    buckets.push({ names: current.names, sizes: current.sizes, host: new Float32Array(current.floats) });
  return buckets;
}

/** One backward pass's bucket reads (see `GradientBuckets.tap`). */
export interface BucketPass {
  onGradient: GradientTap;
  /** Buckets whose read the tap started during the backward pass (the rest start in `finish`). */
  readonly startedDuringBackward: number;
  /**
   * After the backward pass: starts the reads of buckets some of whose gradients never came
   * through the tap (taken from `grads`, zeros where absent), then gives each bucket's read in
   * layout order; each resolves to the bucket's host buffer once the read has landed there.
   */
  finish(grads: ReadonlyMap<string, tf.Tensor>): Array<Promise<Float32Array>>;
}

export class GradientBuckets {
  readonly buckets: Bucket[];
  private readonly bucketOf = new Map<string, number>();

  constructor(sizes: ReadonlyMap<string, number>, bucketBytes = DEFAULT_BUCKET_BYTES) {
    this.buckets = planBuckets(sizes, bucketBytes);
    this.buckets.forEach((b, i) => {
      for (const name of b.names) this.bucketOf.set(name, i);
    });
  }

  /**
   * A tap for the last backward pass of a step. `earlier`: the gradients the step's earlier
   * passes accumulated (by name), added to this pass's before a bucket is read.
   */
  tap(earlier?: ReadonlyMap<string, tf.Tensor>): BucketPass {
    const pending = this.buckets.map(() => new Map<string, tf.Tensor>());
    const reads: Array<Promise<Float32Array> | undefined> = this.buckets.map(() => undefined);
    const start = (k: number, grads: ReadonlyMap<string, tf.Tensor>) => {
      const bucket = this.buckets[k];
      const joined = tf.keep(
        tf.tidy(() => {
          const parts = bucket.names.map((name, i) => {
            const g = grads.get(name);
            const flat = g ? g.reshape([-1]) : tf.zeros([bucket.sizes[i]]);
            const before = earlier?.get(name);
            return before ? tf.add(flat, before.reshape([-1])) : flat;
          });
          return parts.length === 1 ? parts[0].clone() : tf.concat(parts);
        }),
      );
      // data() queues the copy to a staging buffer now, between this pass's backward kernels.
      const read = joined.data() as Promise<Float32Array>;
      reads[k] = read.then(
        (values) => {
          bucket.host.set(values);
          joined.dispose();
          return bucket.host;
        },
        (err) => {
          joined.dispose();
          throw err;
        },
      );
    };
    let startedDuringBackward = 0;
    return {
      get startedDuringBackward() {
        return startedDuringBackward;
      },
      onGradient: (name, grad) => {
        const k = this.bucketOf.get(name);
        if (k === undefined || reads[k]) return;
        const waiting = pending[k];
        waiting.set(name, tf.keep(grad.clone()));
        if (waiting.size < this.buckets[k].names.length) return;
        try {
          start(k, waiting);
          startedDuringBackward += 1;
        } finally {
          for (const t of waiting.values()) t.dispose();
          waiting.clear();
        }
      },
      finish: (grads) => {
        for (let k = 0; k < this.buckets.length; k++) {
          if (reads[k]) continue;
          const merged = new Map(grads);
          for (const [name, t] of pending[k]) merged.set(name, t);
          start(k, merged);
          for (const t of pending[k].values()) t.dispose();
          pending[k].clear();
        }
        return reads as Array<Promise<Float32Array>>;
      },
    };
  }
}
