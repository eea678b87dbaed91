/**
 * OpenAI's logit adjustments: `logitBias` (token id → bias added to its logit, −100…100) and
 * presence / frequency penalties over the tokens generated so far (subtract `presence` once a
 * token has appeared, and `frequency` × its count), applied to the logits before temperature as
 * OpenAI and vLLM do. They change what is sampled, never the recorded logprob (see
 * rollout-engine.ts).
 */

export interface LogitAdjustments {
  logitBias?: ReadonlyMap<number, number>;
  presencePenalty?: number;
  frequencyPenalty?: number;
}

export function hasAdjustments(a: LogitAdjustments): boolean {
  return (a.logitBias?.size ?? 0) > 0 || !!a.presencePenalty || !!a.frequencyPenalty;
}

/** A copy of `logits` with the adjustments applied for a sequence that has generated `output`. */
export function adjustLogits(
  logits: ArrayLike<number>,
  a: LogitAdjustments,
  output: readonly number[],
): Float32Array {
  const out = Float32Array.from(logits);
  for (const [id, bias] of a.logitBias ?? []) if (id >= 0 && id < out.length) out[id] += bias;
  if (a.presencePenalty || a.frequencyPenalty) {
    const counts = new Map<number, number>();
    for (const id of output) counts.set(id, (counts.get(id) ?? 0) + 1);
    for (const [id, n] of counts) {
      out[id] -= (a.presencePenalty ?? 0) + (a.frequencyPenalty ?? 0) * n;
    }
  }
  return out;
}
