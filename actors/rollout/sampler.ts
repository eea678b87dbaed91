/**
 * Picks the next token from a row of logits: temperature, top-k, top-p (nucleus), seeded.
 * The logprob returned is the sampled token's log-probability under the temperature-scaled
 * distribution softmax(logits / T) before top-k/top-p truncation, which is what the trainer
 * (TrainSample.temperature) and the teacher (`computeLogprobs(…, T)`) recompute from the same
 * logits at the same temperature.
 *
 * Temperature 0 (greedy) is not a draw from any distribution: its logprob is taken under the
 * untempered distribution softmax(logits) (`scoringTemperature(0)` is 1), so that scoring a
 * greedy output at "its" temperature gives back the recorded numbers. Greedy outputs are for
 * evaluation; the trainer refuses a sample whose temperature is 0 (PPO's ratio needs the
 * behaviour policy's probability of the token, which greedy decoding does not have).
 */

export { seededRandom } from '../../common/random.js';

export interface SamplingParams {
  /** 0 is greedy. Default 1. */
  temperature: number;
  /** Keep the smallest set of tokens whose probability reaches topP. Default 1 (off). */
  topP: number;
  /** Keep the k most likely tokens; 0 is off. Default 0. */
  topK: number;
}

export const DEFAULT_SAMPLING: SamplingParams = { temperature: 1, topP: 1, topK: 0 };

/** The temperature a logprob is taken at: T itself, and 1 for greedy (T = 0; see the header). */
export function scoringTemperature(temperature: number): number {
  return temperature > 0 ? temperature : 1;
}

/** log-softmax of `logits / temperature` at every index (temperature 0 → 1). */
export function logSoftmax(logits: ArrayLike<number>, temperature = 1): Float64Array {
  const t = scoringTemperature(temperature);
  const out = new Float64Array(logits.length);
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < logits.length; i++) {
    out[i] = logits[i] / t;
    if (out[i] > max) max = out[i];
  }
  let sum = 0;
  for (let i = 0; i < out.length; i++) sum += Math.exp(out[i] - max);
  const logZ = max + Math.log(sum);
  for (let i = 0; i < out.length; i++) out[i] -= logZ;
  return out;
}

export interface Sampled {
  tokenId: number;
  logprob: number;
}

export function sample(logits: ArrayLike<number>, params: SamplingParams, random: () => number): Sampled {
  const logp = logSoftmax(logits, params.temperature);
  if (params.temperature <= 0) {
    let best = 0;
    for (let i = 1; i < logp.length; i++) if (logp[i] > logp[best]) best = i;
    return { tokenId: best, logprob: logp[best] };
  }
  if (params.topK <= 0 && params.topP >= 1) {
    // No truncation: draw straight from the distribution, no sort needed.
    let r = random();
    for (let i = 0; i < logp.length; i++) {
      r -= Math.exp(logp[i]);
      if (r <= 0) return { tokenId: i, logprob: logp[i] };
    }
    return { tokenId: logp.length - 1, logprob: logp[logp.length - 1] };
  }
  // Candidates sorted by probability; truncation only narrows where we draw from.
  let order = Array.from(logp.keys()).sort((a, b) => logp[b] - logp[a]);
  if (params.topK > 0 && params.topK < order.length) order = order.slice(0, params.topK);
  if (params.topP < 1) {
    let mass = 0;
    let keep = 0;
    while (keep < order.length && (keep === 0 || mass < params.topP)) mass += Math.exp(logp[order[keep++]]);
    order = order.slice(0, keep);
  }
  let total = 0;
  for (const i of order) total += Math.exp(logp[i]);
  let r = random() * total;
  for (const i of order) {
    r -= Math.exp(logp[i]);
    if (r <= 0) return { tokenId: i, logprob: logp[i] };
  }
  const last = order[order.length - 1];
  return { tokenId: last, logprob: logp[last] };
}

/** The k most likely tokens with their logprobs (for OpenAI's `top_logprobs`). */
export function topLogprobs(logits: ArrayLike<number>, k: number, temperature = 1): Sampled[] {
  if (k <= 0) return [];
  const logp = logSoftmax(logits, temperature);
  return Array.from(logp.keys())
    .sort((a, b) => logp[b] - logp[a])
    .slice(0, k)
    .map((tokenId) => ({ tokenId, logprob: logp[tokenId] }));
}

/**
 * OpenAI's logit adjustments: `logitBias` (token id → bias added to its logit, −100…100) and
 * presence / frequency penalties over the tokens generated so far (subtract `presence` once a
 * token has appeared, and `frequency` × its count), applied to the logits before temperature as
 * OpenAI and vLLM do.
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
