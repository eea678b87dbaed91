/**
 * The last line behind the trainer's skipped steps: weights (or optimizer moments) holding a
 * NaN or an infinity are never written to a checkpoint nor published to rollout engines, where
 * they would outlive the step that made them (a resumed job, every user's replies). The trainer
 * skips a non-finite step before it touches its weights, so this finds only what got past it.
 */
import { ClawrayError, registerErrorClass } from '../../common/errors.js';

/** Weights about to be checkpointed or published are not finite. */
export class NonFiniteWeightsError extends ClawrayError {}
registerErrorClass(NonFiniteWeightsError);

/**
 * Throws NonFiniteWeightsError naming the first tensor with a non-finite value and how many of
 * its values are. One pass over every value: a multiply by zero is NaN only for NaN and ±∞.
 */
export function assertFiniteWeights(tensors: Iterable<[string, Float32Array]>, what: string): void {
  for (const [name, data] of tensors) {
    let bad = 0;
    for (let i = 0; i < data.length; i++) if (data[i] * 0 !== 0) bad++;
    if (bad > 0) {
      throw new NonFiniteWeightsError(
        `${what}: '${name}' holds ${bad} of ${data.length} values that are NaN or infinite; refusing to write them`,
        { fields: { tensor: name, nonFinite: bad, size: data.length } },
      );
    }
  }
}
