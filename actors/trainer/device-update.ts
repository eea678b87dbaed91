/**
 * The weight update on the device (webgpu): a step's gradients are summed over its passes as
 * tensors, clipped and applied by `DeviceAdamW` to the variables in place, so one shard moves
 * nothing between host and device but a few numbers. With data-parallel ranks the last pass's
 * gradients are read back bucket by bucket while its backward pass goes on, each bucket
 * all-reduced as soon as it lands (grad-buckets.ts), and the sums uploaded for the update.
 *
 * Semantics as `HostUpdate`'s (weight-update.ts): the global norm before clipping, torch's clip
 * rule, a step skipped on every rank when any rank's loss or the summed gradients are not finite.
 * With ranks, the norm is taken on the host from the summed buckets (the same bits on every
 * rank), so every rank clips alike and skips alike.
 */
import * as tf from '@tensorflow/tfjs';
import type { GradientTap, TfjsDecoder } from '../models/tfjs-decoder.js';
import { DeviceAdamW } from './device-adamw.js';
import { type BucketPass, DEFAULT_BUCKET_BYTES, GradientBuckets } from './grad-buckets.js';
import type { AdamWOptions, AdamWState } from './optimizer.js';
import type { UpdateOptions, WeightUpdate } from './weight-update.js';

export class DeviceUpdate implements WeightUpdate {
  readonly optimizer: DeviceAdamW;
  private readonly buckets: GradientBuckets;
  /** The step's gradients so far (earlier passes), by parameter name. */
  private sum = new Map<string, tf.Tensor>();
  /** The last pass's bucket tap while it runs, then its bucket reads. */
  private pass: BucketPass | undefined;
  private reads: Array<Promise<Float32Array>> | undefined;

  constructor(
    private readonly decoder: TfjsDecoder,
    options: AdamWOptions,
    bucketBytes = DEFAULT_BUCKET_BYTES,
  ) {
    this.optimizer = new DeviceAdamW(options);
    this.buckets = new GradientBuckets(
      new Map([...decoder.trainableVariables].map(([name, v]) => [name, v.size])),
      bucketBytes,
    );
  }

  get stepsTaken(): number {
    return this.optimizer.stepsTaken;
  }

  tap(last: boolean, reducing: boolean): GradientTap | undefined {
    if (!(last && reducing)) return undefined;
    this.pass = this.buckets.tap(this.sum);
    return this.pass.onGradient;
  }

  reset(): void {
    for (const g of this.sum.values()) g.dispose();
    this.sum = new Map();
    this.pass = undefined;
    this.reads = undefined;
  }

  async add(grads: Map<string, tf.Tensor>): Promise<void> {
    if (this.pass) {
      // Read during the backward pass (the buckets add the earlier passes' sums themselves);
      // what the tap never saw is read from here.
      this.reads = this.pass.finish(grads);
      this.pass = undefined;
      for (const g of grads.values()) g.dispose();
      return;
    }
    for (const [name, g] of grads) {
      const before = this.sum.get(name);
      if (before) {
        this.sum.set(name, tf.add(before, g));
        before.dispose();
        g.dispose();
      } else {
        this.sum.set(name, g);
      }
    }
  }

  async finish({ lossFinite, reduce, lr, maxGradNorm }: UpdateOptions) {
    const vars = this.decoder.trainableVariables;
    try {
      if (reduce) {
        const hosts = await this.reduceBuckets(lossFinite, reduce);
        let squares = 0;
        for (const host of hosts) for (let i = 0; i < host.length; i++) squares += host[i] * host[i];
        const gradNorm = Math.sqrt(squares);
        if (!Number.isFinite(gradNorm)) return { gradNorm, skipped: true };
        const grads = this.upload(hosts);
        try {
          this.optimizer.step(vars, grads, lr, clipScale(gradNorm, maxGradNorm));
        } finally {
          for (const g of grads.values()) g.dispose();
        }
        return { gradNorm, skipped: false };
      }
      // A stack, not addN: WebGPU binds every input of one kernel (8 storage buffers on lavapipe).
      const norm = tf.tidy(() =>
        tf.sqrt(tf.sum(tf.stack([...this.sum.values()].map((g) => tf.sum(tf.square(g)))))),
      );
      const gradNorm = lossFinite ? (await norm.data())[0] : Number.NaN;
      norm.dispose();
      if (!Number.isFinite(gradNorm)) return { gradNorm, skipped: true };
      this.optimizer.step(vars, this.sum, lr, clipScale(gradNorm, maxGradNorm));
      return { gradNorm, skipped: false };
    } finally {
      for (const g of this.sum.values()) g.dispose();
      this.sum = new Map();
      this.reads = undefined;
    }
  }

  /**
   * Each bucket all-reduced as soon as its read lands, in layout order (the order every rank
   * calls the collective in). A rank whose loss is not finite poisons the first bucket, so every
   * rank's sum is not finite and all skip the step.
   */
  private async reduceBuckets(lossFinite: boolean, reduce: (flat: Float32Array) => Promise<void>) {
    // Without a tapped pass (a step of one pass with no ranks never gets here) read them now.
    const reads = this.reads ?? this.buckets.tap(this.sum).finish(new Map());
    this.reads = undefined;
    const hosts: Float32Array[] = [];
    for (const [k, read] of reads.entries()) {
      const host = await read;
      if (k === 0 && !lossFinite) host[0] = Number.NaN;
      await reduce(host);
      hosts.push(host);
    }
    return hosts;
  }

  /** The summed buckets back on the device, as one tensor per parameter. */
  private upload(hosts: Float32Array[]): Map<string, tf.Tensor> {
    const grads = new Map<string, tf.Tensor>();
    this.buckets.buckets.forEach((bucket, k) => {
      let offset = 0;
      bucket.names.forEach((name, i) => {
        const size = bucket.sizes[i];
        grads.set(name, tf.tensor1d(hosts[k].subarray(offset, offset + size), 'float32'));
        offset += size;
      });
    });
    return grads;
  }

  resetMoments(): void {
    this.optimizer.resetMoments();
  }

  state(): Promise<AdamWState> {
    return this.optimizer.state();
  }

  loadState(state: AdamWState): void {
    this.optimizer.loadState(
      state,
      new Map([...this.decoder.trainableVariables].map(([n, v]) => [n, v.shape])),
    );
  }

  dispose(): void {
    for (const g of this.sum.values()) g.dispose();
    this.sum.clear();
    this.optimizer.dispose();
  }
}

/** torch's clip_grad_norm_ factor: maxNorm / (norm + 1e-6) when below 1; 1 without clipping. */
function clipScale(norm: number, maxNorm: number): number {
  if (maxNorm === 0) return 1;
  const coef = maxNorm / (norm + 1e-6);
  return coef < 1 ? coef : 1;
}
