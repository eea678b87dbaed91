/**
 * AdamW whose moments and update stay on the TensorFlow.js backend (a GPU's memory under
 * WebGPU): the same rule and bookkeeping as `AdamW` (optimizer.ts: torch.optim.AdamW, decoupled
 * weight decay before the Adam step, bias corrections from products of β kept in the state),
 * computed in float32 tensor ops on the variables themselves. What a step moves between host and
 * device is nothing at all on one shard, and the summed gradients' upload under data
 * parallelism; a host AdamW would read and write every trainable weight each step (2.4 GB each
 * way for a whole Qwen3-0.6B).
 *
 * The result agrees with the host AdamW to float32 rounding (each element's few operations
 * round in float32 here, once in float64 there). Ranks of a data-parallel group feed it the same
 * summed gradients on the same kind of device and keep identical weights; the state a
 * checkpoint stores is AdamW's (`AdamWState`), so either optimizer resumes the other's.
 */
import * as tf from '@tensorflow/tfjs';
import { ConfigError } from '../../common/errors.js';
import { AdamW, type AdamWOptions, type AdamWState } from './optimizer.js';

export class DeviceAdamW {
  readonly lr: number;
  readonly betas: readonly [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  private stepCount = 0;
  private momentSteps = 0;
  private beta1Pow = 1;
  private beta2Pow = 1;
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();

  constructor(options: AdamWOptions) {
    // The host optimizer's checks and defaults, once.
    const host = new AdamW(options);
    this.lr = host.lr;
    this.betas = host.betas;
    this.eps = host.eps;
    this.weightDecay = host.weightDecay;
  }

  get stepsTaken(): number {
    return this.stepCount;
  }

  /** As AdamW.resetMoments: the moments start afresh, the step count goes on. */
  resetMoments(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) t.dispose();
    this.m.clear();
    this.v.clear();
    this.momentSteps = 0;
    this.beta1Pow = 1;
    this.beta2Pow = 1;
  }

  /**
   * One AdamW step on the variables, in place. `grads[name]` is the gradient of `params[name]`
   * (any shape of the same size), multiplied by `gradScale` first (global-norm clipping); a
   * parameter without a gradient is left alone. The gradients are not disposed.
   */
  step(
    params: ReadonlyMap<string, tf.Variable>,
    grads: ReadonlyMap<string, tf.Tensor>,
    lr: number = this.lr,
    gradScale = 1,
  ): void {
    if (!(Number.isFinite(lr) && lr >= 0)) {
      throw new ConfigError(`AdamW lr must be a finite number ≥ 0, got ${String(lr)}`, {
        fields: { option: 'lr' },
      });
    }
    for (const [name, g] of grads) {
      const p = params.get(name);
      if (!p)
        throw new ConfigError(`AdamW: gradient for '${name}' names no parameter`, {
          fields: { param: name },
        });
      if (g.size !== p.size) {
        throw new ConfigError(
          `AdamW: gradient for '${name}' has ${g.size} elements but the parameter has ${p.size}`,
          { fields: { param: name } },
        );
      }
    }
    const [beta1, beta2] = this.betas;
    this.stepCount += 1;
    this.momentSteps += 1;
    this.beta1Pow *= beta1;
    this.beta2Pow *= beta2;
    const stepSize = lr / (1 - this.beta1Pow);
    const bc2Sqrt = Math.sqrt(1 - this.beta2Pow);
    const decay = 1 - lr * this.weightDecay;
    for (const [name, grad] of grads) {
      const p = params.get(name)!;
      let m = this.m.get(name);
      let v = this.v.get(name);
      if (!m || !v) {
        // In a tidy, as TfjsDecoder's: the initial tensor would otherwise outlive the variable.
        m = tf.tidy(() => tf.variable(tf.zeros(p.shape), false));
        v = tf.tidy(() => tf.variable(tf.zeros(p.shape), false));
        this.m.set(name, m);
        this.v.set(name, v);
      }
      const [mm, vv] = [m, v];
      tf.tidy(() => {
        const g = gradScale === 1 ? grad.reshape(p.shape) : tf.mul(grad.reshape(p.shape), gradScale);
        const mi = tf.add(tf.mul(mm, beta1), tf.mul(g, 1 - beta1));
        const vi = tf.add(tf.mul(vv, beta2), tf.mul(tf.square(g), 1 - beta2));
        const denom = tf.add(tf.div(tf.sqrt(vi), bc2Sqrt), this.eps);
        const decayed = decay === 1 ? p : tf.mul(p, decay);
        p.assign(tf.sub(decayed, tf.div(tf.mul(mi, stepSize), denom)));
        mm.assign(mi);
        vv.assign(vi);
      });
    }
  }

  /** The moments read back (for a checkpoint): AdamW's state, readable by either optimizer. */
  async state(): Promise<AdamWState> {
    const read = async (src: Map<string, tf.Variable>) => {
      const out = new Map<string, Float32Array>();
      for (const [name, t] of src) out.set(name, Float32Array.from((await t.data()) as Float32Array));
      return out;
    };
    return {
      step: this.stepCount,
      momentSteps: this.momentSteps,
      m: await read(this.m),
      v: await read(this.v),
    };
  }

  /** Replaces the moments and step count with `state` (checked as AdamW.loadState checks it). */
  loadState(state: AdamWState, shapes: ReadonlyMap<string, readonly number[]>): void {
    // The host optimizer validates the state (and computes the bias-correction powers).
    const host = new AdamW({ lr: this.lr, betas: this.betas, eps: this.eps, weightDecay: this.weightDecay });
    host.loadState(state);
    this.resetMoments();
    for (const [name, m] of state.m) {
      const shape = shapes.get(name);
      if (!shape)
        throw new ConfigError(`AdamW state: '${name}' names no parameter`, { fields: { param: name } });
      this.m.set(
        name,
        tf.tidy(() => tf.variable(tf.tensor(m, [...shape], 'float32'), false)),
      );
      this.v.set(
        name,
        tf.tidy(() => tf.variable(tf.tensor(state.v.get(name)!, [...shape], 'float32'), false)),
      );
    }
    this.stepCount = state.step;
    this.momentSteps = state.momentSteps ?? state.step;
    for (let i = 0; i < this.momentSteps; i++) {
      this.beta1Pow *= this.betas[0];
      this.beta2Pow *= this.betas[1];
    }
  }

  dispose(): void {
    this.resetMoments();
  }
}
