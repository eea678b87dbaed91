/**
 * AdamW on flat float32 arrays keyed by parameter name (Hugging Face tensor names).
 *
 * Data-parallel trainer shards all-reduce ONE flattened gradient buffer (`flattenGrads`, in a
 * fixed name order), split it back (`unflatten`) and call `step` with identical inputs, so every
 * shard must compute bit-identical updates. The update follows `torch.optim.AdamW` exactly:
 *
 *   p ← p · (1 − lr·wd)                         (decoupled weight decay, before the Adam step)
 *   m ← β1·m + (1 − β1)·g
 *   v ← β2·v + (1 − β2)·g²
 *   p ← p − (lr / (1 − β1ᵗ)) · m / (√v / √(1 − β2ᵗ) + ε)
 *
 * Each element is computed in float64 from float32 inputs and rounded once to float32 when
 * stored (`Math.fround` / Float32Array stores). IEEE double arithmetic (+, −, ×, ÷, √) is
 * correctly rounded, so the result depends only on the inputs: every process computes the
 * same bits. Bias corrections are products of β over the step count, kept in the state (no
 * `Math.pow`, whose last bit may differ between engines).
 */
import { ConfigError } from '../../common/errors.js';

export interface AdamWOptions {
  lr: number;
  betas?: readonly [number, number];
  eps?: number;
  weightDecay?: number;
}

/** What a checkpoint stores: moments by parameter name and the step count. */
export interface AdamWState {
  /** Optimizer steps taken (the next step is `step + 1`). */
  step: number;
  /**
   * Steps the moments have accumulated (Adam's bias-correction t): `step` unless the moments
   * were reset (`AdamW.resetMoments`) since. Absent: `step`.
   */
  momentSteps?: number;
  /** First moments (exp_avg) by parameter name. */
  m: Map<string, Float32Array>;
  /** Second moments (exp_avg_sq) by parameter name. */
  v: Map<string, Float32Array>;
}

function checkFinite(what: string, x: number, min: number, maxExclusive = Number.POSITIVE_INFINITY): void {
  if (typeof x !== 'number' || !Number.isFinite(x) || x < min || x >= maxExclusive) {
    const range = maxExclusive === Number.POSITIVE_INFINITY ? `≥ ${min}` : `in [${min}, ${maxExclusive})`;
    throw new ConfigError(`AdamW ${what} must be a finite number ${range}, got ${String(x)}`, {
      fields: { option: what },
    });
  }
}

export class AdamW {
  readonly lr: number;
  readonly betas: readonly [number, number];
  readonly eps: number;
  readonly weightDecay: number;
  private stepCount = 0;
  /** Steps since the moments started (t of the bias correction; see resetMoments). */
  private momentSteps = 0;
  /** β1ᵗ and β2ᵗ for t = momentSteps, built by repeated multiplication. */
  private beta1Pow = 1;
  private beta2Pow = 1;
  private readonly m = new Map<string, Float32Array>();
  private readonly v = new Map<string, Float32Array>();

  constructor({ lr, betas = [0.9, 0.999], eps = 1e-8, weightDecay = 0.01 }: AdamWOptions) {
    checkFinite('lr', lr, 0);
    if (!Array.isArray(betas) || betas.length !== 2) {
      throw new ConfigError(`AdamW betas must be [beta1, beta2], got ${JSON.stringify(betas)}`, {
        fields: { option: 'betas' },
      });
    }
    checkFinite('betas[0]', betas[0], 0, 1);
    checkFinite('betas[1]', betas[1], 0, 1);
    checkFinite('eps', eps, 0);
    checkFinite('weightDecay', weightDecay, 0);
    this.lr = lr;
    this.betas = [betas[0], betas[1]];
    this.eps = eps;
    this.weightDecay = weightDecay;
  }

  /** Optimizer steps taken so far. */
  get stepsTaken(): number {
    return this.stepCount;
  }

  /**
   * Forgets the moments (and restarts the bias correction) but keeps the step count: a new
   * objective starts from a fresh AdamW, as an RL job that loads an SFT checkpoint does, while
   * steps (checkpoint names, schedules, seeds) keep counting.
   */
  resetMoments(): void {
    this.m.clear();
    this.v.clear();
    this.momentSteps = 0;
    this.beta1Pow = 1;
    this.beta2Pow = 1;
  }

  /**
   * One AdamW step, in place on `params`. Every gradient must name a parameter of the same
   * length; a parameter without a gradient is left alone (like a `None` grad in torch) and its
   * moments do not advance. `lr` overrides the constructor's learning rate (from a schedule).
   */
  step(params: Map<string, Float32Array>, grads: Map<string, Float32Array>, lr: number = this.lr): void {
    checkFinite('lr', lr, 0);
    for (const [name, g] of grads) {
      const p = params.get(name);
      if (!p) {
        throw new ConfigError(`AdamW: gradient for '${name}' names no parameter`, {
          fields: { param: name },
        });
      }
      if (g.length !== p.length) {
        throw new ConfigError(
          `AdamW: gradient for '${name}' has ${g.length} elements but the parameter has ${p.length}`,
          { fields: { param: name } },
        );
      }
      const m = this.m.get(name);
      if (m && m.length !== p.length) {
        throw new ConfigError(
          `AdamW: parameter '${name}' has ${p.length} elements but its optimizer state has ${m.length}`,
          { fields: { param: name } },
        );
      }
    }
    const [beta1, beta2] = this.betas;
    this.stepCount += 1;
    this.momentSteps += 1;
    this.beta1Pow *= beta1;
    this.beta2Pow *= beta2;
    const bc1 = 1 - this.beta1Pow;
    const bc2Sqrt = Math.sqrt(1 - this.beta2Pow);
    const stepSize = lr / bc1;
    const decay = 1 - lr * this.weightDecay;
    const oneMinusBeta1 = 1 - beta1;
    const oneMinusBeta2 = 1 - beta2;
    const eps = this.eps;
    for (const [name, g] of grads) {
      const p = params.get(name)!;
      let m = this.m.get(name);
      let v = this.v.get(name);
      if (!m || !v) {
        m = new Float32Array(p.length);
        v = new Float32Array(p.length);
        this.m.set(name, m);
        this.v.set(name, v);
      }
      for (let i = 0; i < p.length; i++) {
        const gi = g[i];
        const mi = Math.fround(beta1 * m[i] + oneMinusBeta1 * gi);
        const vi = Math.fround(beta2 * v[i] + oneMinusBeta2 * gi * gi);
        m[i] = mi;
        v[i] = vi;
        const pd = Math.fround(p[i] * decay);
        p[i] = pd - (stepSize * mi) / (Math.sqrt(vi) / bc2Sqrt + eps);
      }
    }
  }

  /** A deep copy of the moments and the step count (for checkpoints). */
  state(): AdamWState {
    const copy = (src: Map<string, Float32Array>) =>
      new Map([...src].map(([k, a]) => [k, a.slice()] as const));
    return { step: this.stepCount, momentSteps: this.momentSteps, m: copy(this.m), v: copy(this.v) };
  }

  /** Replaces the moments and the step count with a copy of `state`. */
  loadState(state: AdamWState): void {
    if (!Number.isSafeInteger(state.step) || state.step < 0) {
      throw new ConfigError(`AdamW state: step must be a whole number ≥ 0, got ${String(state.step)}`);
    }
    const momentSteps = state.momentSteps ?? state.step;
    if (!Number.isSafeInteger(momentSteps) || momentSteps < 0 || momentSteps > state.step) {
      throw new ConfigError(
        `AdamW state: momentSteps must be a whole number in [0, step ${state.step}], got ${String(momentSteps)}`,
      );
    }
    for (const [name, m] of state.m) {
      const v = state.v.get(name);
      if (!v || v.length !== m.length) {
        throw new ConfigError(
          `AdamW state: parameter '${name}' has exp_avg but no exp_avg_sq of the same length`,
          {
            fields: { param: name },
          },
        );
      }
    }
    for (const name of state.v.keys()) {
      if (!state.m.has(name)) {
        throw new ConfigError(`AdamW state: parameter '${name}' has exp_avg_sq but no exp_avg`, {
          fields: { param: name },
        });
      }
    }
    this.m.clear();
    this.v.clear();
    for (const [name, m] of state.m) {
      this.m.set(name, m.slice());
      this.v.set(name, state.v.get(name)!.slice());
    }
    this.stepCount = state.step;
    this.momentSteps = momentSteps;
    this.beta1Pow = 1;
    this.beta2Pow = 1;
    for (let i = 0; i < momentSteps; i++) {
      this.beta1Pow *= this.betas[0];
      this.beta2Pow *= this.betas[1];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Flat gradient buffers

/** The canonical parameter order every shard uses: names sorted by UTF-16 code units. */
export function canonicalOrder(names: Iterable<string>): string[] {
  return [...names].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Concatenates `grads` in the order of `names` into one buffer (e.g. for an all-reduce). */
export function flattenGrads(
  names: readonly string[],
  grads: ReadonlyMap<string, Float32Array>,
): Float32Array {
  let total = 0;
  for (const name of names) {
    const g = grads.get(name);
    if (!g) throw new ConfigError(`flattenGrads: no gradient for '${name}'`, { fields: { param: name } });
    total += g.length;
  }
  const out = new Float32Array(total);
  let offset = 0;
  for (const name of names) {
    const g = grads.get(name)!;
    out.set(g, offset);
    offset += g.length;
  }
  return out;
}

export type ShapeList = ReadonlyMap<string, readonly number[]> | readonly (readonly number[])[];

/**
 * Splits a buffer made by `flattenGrads` back into arrays (copies) by name. `shapes` is either a
 * map by name or an array parallel to `names`; only the element counts matter.
 */
export function unflatten(
  buffer: Float32Array,
  names: readonly string[],
  shapes: ShapeList,
): Map<string, Float32Array> {
  const sizes = names.map((name, i) => {
    const shape = Array.isArray(shapes)
      ? (shapes as readonly (readonly number[])[])[i]
      : (shapes as ReadonlyMap<string, readonly number[]>).get(name);
    if (!shape) throw new ConfigError(`unflatten: no shape for '${name}'`, { fields: { param: name } });
    return shape.reduce((a, b) => a * b, 1);
  });
  const total = sizes.reduce((a, b) => a + b, 0);
  if (total !== buffer.length) {
    throw new ConfigError(`unflatten: the shapes hold ${total} elements but the buffer has ${buffer.length}`);
  }
  const out = new Map<string, Float32Array>();
  let offset = 0;
  names.forEach((name, i) => {
    out.set(name, buffer.slice(offset, offset + sizes[i]));
    offset += sizes[i];
  });
  return out;
}
