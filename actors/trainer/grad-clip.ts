/**
 * Global-norm gradient clipping (as `torch.nn.utils.clip_grad_norm_`) and gradient
 * accumulation over micro-batches. Sums run in float64 in the Map's iteration order, so the
 * same grads give the same bits in every process.
 */
import { ConfigError } from '../../common/errors.js';

/** The L2 norm of all gradients together, as if they were one vector. */
export function globalNorm(grads: ReadonlyMap<string, Float32Array>): number {
  let sum = 0;
  for (const g of grads.values()) {
    for (let i = 0; i < g.length; i++) sum += g[i] * g[i];
  }
  return Math.sqrt(sum);
}

/**
 * Scales every gradient in place by `maxNorm / (norm + 1e-6)` when that is below 1 (torch's
 * rule) and returns the norm before clipping. A non-finite norm (NaN/Inf in some gradient)
 * leaves the gradients untouched: the caller should skip the step when the result is not finite.
 * `norm`: the gradients' global norm when the caller has it already (one pass fewer).
 */
export function clipGradNorm(
  grads: Map<string, Float32Array>,
  maxNorm: number,
  norm: number = globalNorm(grads),
): number {
  if (!Number.isFinite(maxNorm) || maxNorm <= 0) {
    throw new ConfigError(`clipGradNorm: maxNorm must be a finite number > 0, got ${String(maxNorm)}`, {
      fields: { option: 'maxNorm' },
    });
  }
  if (!Number.isFinite(norm)) return norm;
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) {
    for (const g of grads.values()) {
      for (let i = 0; i < g.length; i++) g[i] *= coef;
    }
  }
  return norm;
}

/**
 * Sums micro-batch gradients and hands back their mean. The first `add` fixes the parameter
 * names and lengths; later micro-batches must match them exactly.
 */
export class GradAccumulator {
  private sums = new Map<string, Float32Array>();
  private n = 0;

  /** Micro-batches added since the last reset. */
  get count(): number {
    return this.n;
  }

  add(grads: ReadonlyMap<string, Float32Array>): void {
    if (this.n === 0) {
      this.sums = new Map([...grads].map(([name, g]) => [name, g.slice()] as const));
      this.n = 1;
      return;
    }
    for (const name of this.sums.keys()) {
      if (!grads.has(name)) {
        throw new ConfigError(`GradAccumulator: micro-batch ${this.n + 1} has no gradient for '${name}'`, {
          fields: { param: name },
        });
      }
    }
    for (const [name, g] of grads) {
      const s = this.sums.get(name);
      if (!s) {
        throw new ConfigError(
          `GradAccumulator: micro-batch ${this.n + 1} has an unexpected gradient '${name}'`,
          {
            fields: { param: name },
          },
        );
      }
      if (s.length !== g.length) {
        throw new ConfigError(
          `GradAccumulator: gradient '${name}' has ${g.length} elements, earlier micro-batches had ${s.length}`,
          { fields: { param: name } },
        );
      }
    }
    for (const [name, g] of grads) {
      const s = this.sums.get(name)!;
      for (let i = 0; i < s.length; i++) s[i] += g[i];
    }
    this.n += 1;
  }

  /** The mean gradient over the micro-batches added (new arrays; the sums are kept). */
  mean(): Map<string, Float32Array> {
    if (this.n === 0) throw new ConfigError('GradAccumulator: mean() before any micro-batch was added');
    const k = this.n;
    const out = new Map<string, Float32Array>();
    for (const [name, s] of this.sums) {
      const m = new Float32Array(s.length);
      for (let i = 0; i < s.length; i++) m[i] = s[i] / k;
      out.set(name, m);
    }
    return out;
  }

  reset(): void {
    this.sums = new Map();
    this.n = 0;
  }
}
