/**
 * Outcome + process (step) reward combination, as in the OpenClaw-RL Track-2 environments:
 * final = outcome + coef · mean(step scores). Also returns per-step values and token spans in the shape of
 * slime's `metadata.step_wise` (step_scores_with_outcome, step_indices, step_token_spans).
 */

export interface StepScore {
  /** Judge score of this agent step (e.g. majority vote in {−1, 0, 1}). */
  score: number;
  /** Token span [start, end) of this step's response tokens in the sample. */
  span: readonly [number, number];
}

export interface StepRewardResult {
  /** outcome + coef · mean(step scores); equals outcome when there are no steps. */
  final: number;
  outcome: number;
  /** Mean of the step scores (0 when there are none). */
  stepMean: number;
  /** Per step: outcome + coef · score_i. */
  stepScoresWithOutcome: number[];
  stepIndices: number[];
  stepTokenSpans: Array<[number, number]>;
}

export function combineStepRewards(
  outcome: number,
  steps: ReadonlyArray<StepScore>,
  coef: number,
): StepRewardResult {
  if (!Number.isFinite(outcome)) throw new RangeError(`outcome must be finite, got ${outcome}`);
  if (!Number.isFinite(coef)) throw new RangeError(`coef must be finite, got ${coef}`);
  let sum = 0;
  steps.forEach((s, i) => {
    if (!Number.isFinite(s.score)) throw new RangeError(`step ${i} score must be finite, got ${s.score}`);
    const [a, b] = s.span;
    if (!Number.isInteger(a) || !Number.isInteger(b) || a < 0 || b < a) {
      throw new RangeError(`step ${i} span must be integers 0 <= start <= end, got [${a}, ${b}]`);
    }
    sum += s.score;
  });
  const stepMean = steps.length > 0 ? sum / steps.length : 0;
  return {
    final: outcome + coef * stepMean,
    outcome,
    stepMean,
    stepScoresWithOutcome: steps.map((s) => outcome + coef * s.score),
    stepIndices: steps.map((_, i) => i),
    stepTokenSpans: steps.map((s) => [s.span[0], s.span[1]]),
  };
}
