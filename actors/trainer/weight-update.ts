/**
 * What a trainer step does between its backward passes and the new weights: sum the passes'
 * gradients, sum them over the data-parallel ranks, clip them to the global norm and apply
 * AdamW. Two implementations of one interface:
 *
 * - `HostUpdate` (wasm, cpu, tfjs-node): gradients read back as flat float32 arrays in a fixed
 *   name order, one all-reduce of the whole buffer, norm and AdamW in float64-per-element
 *   JavaScript; every rank on any machine computes bit-identical weights.
 * - `DeviceUpdate` (device-update.ts, webgpu): gradients, moments and the update stay on the
 *   device; with ranks, gradients are read back per bucket and all-reduced while the backward
 *   pass goes on (grad-buckets.ts).
 */
import type * as tf from '@tensorflow/tfjs';
import type { GradientTap, TfjsDecoder } from '../models/tfjs-decoder.js';
import { clipGradNorm, globalNorm } from './grad-clip.js';
import {
  AdamW,
  type AdamWOptions,
  type AdamWState,
  canonicalOrder,
  flattenGrads,
  unflatten,
} from './optimizer.js';

/** Sums a flat gradient buffer across data-parallel ranks, in place. */
export type GradientReducer = (flat: Float32Array) => Promise<void>;

export interface UpdateOptions {
  /** This rank's loss over the step was finite (else every rank skips the step). */
  lossFinite: boolean;
  reduce?: GradientReducer;
  lr: number;
  /** Global gradient norm cap; 0: no clipping. */
  maxGradNorm: number;
}

export interface WeightUpdate {
  readonly stepsTaken: number;
  /**
   * The hook of one backward pass (TfjsDecoder's `onGradient`), when this update reads the
   * gradients during it (the step's last pass, with ranks to reduce with); else undefined.
   */
  tap(last: boolean, reducing: boolean): GradientTap | undefined;
  /** Drops what an earlier step that failed midway left (called as a step starts). */
  reset(): void;
  /** Takes one pass's gradients by parameter name (disposing them). */
  add(grads: Map<string, tf.Tensor>): Promise<void>;
  /**
   * Sums the step's gradients over the ranks, clips and applies them, unless they are not
   * finite on some rank: then nothing changes (`skipped`). Returns the norm before clipping.
   */
  finish(options: UpdateOptions): Promise<{ gradNorm: number; skipped: boolean }>;
  resetMoments(): void;
  /** AdamW's state, for a checkpoint (the same form for both updates). */
  state(): Promise<AdamWState>;
  loadState(state: AdamWState): void;
  dispose(): void;
}

/** Everything on the host: the path whose every rank gets bit-identical weights anywhere. */
export class HostUpdate implements WeightUpdate {
  readonly optimizer: AdamW;
  private readonly names: string[];
  private readonly shapes: Map<string, number[]>;
  private flat: Float32Array | undefined;

  constructor(
    private readonly decoder: TfjsDecoder,
    options: AdamWOptions,
  ) {
    this.optimizer = new AdamW(options);
    const trainable = decoder.trainableVariables;
    this.names = canonicalOrder(trainable.keys());
    this.shapes = new Map([...trainable].map(([name, v]) => [name, v.shape]));
  }

  get stepsTaken(): number {
    return this.optimizer.stepsTaken;
  }

  tap(): undefined {
    return undefined;
  }

  reset(): void {
    this.flat = undefined;
  }

  async add(grads: Map<string, tf.Tensor>): Promise<void> {
    const byName = new Map<string, Float32Array>();
    for (const [name, g] of grads) {
      byName.set(name, Float32Array.from((await g.data()) as Float32Array));
      g.dispose();
    }
    const part = flattenGrads(this.names, byName);
    // Every pass's loss is already divided by the global token count: the sum is the batch's.
    if (this.flat) for (let i = 0; i < part.length; i++) this.flat[i] += part[i];
    else this.flat = part;
  }

  async finish({ lossFinite, reduce, lr, maxGradNorm }: UpdateOptions) {
    const flat = this.flat!;
    this.flat = undefined;
    // A rank whose loss is not finite poisons its gradient, so that the sum every rank gets
    // from the all-reduce is not finite either and all of them skip the step together.
    if (!lossFinite) flat[0] = Number.NaN;
    await reduce?.(flat);
    const summed = unflatten(flat, this.names, this.shapes);
    const gradNorm = globalNorm(summed);
    // As torch's GradScaler and DeepSpeed do with an overflow: a step whose gradients are not
    // finite is not taken. The weights and AdamW's moments stay as they were (one NaN in a
    // moment would poison every later step), and the caller counts it.
    const skipped = !Number.isFinite(gradNorm);
    if (!skipped) {
      if (maxGradNorm !== 0) clipGradNorm(summed, maxGradNorm, gradNorm);
      const params = this.decoder.readTrainable();
      this.optimizer.step(params, summed, lr);
      this.decoder.assignTrainable(params);
    }
    return { gradNorm, skipped };
  }

  resetMoments(): void {
    this.optimizer.resetMoments();
  }

  async state(): Promise<AdamWState> {
    return this.optimizer.state();
  }

  loadState(state: AdamWState): void {
    this.optimizer.loadState(state);
  }

  dispose(): void {}
}
