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
 *
 * Truncation never sorts the vocabulary (a 152k-entry sort per token cost ~50 ms): see
 * `truncatedDraw`. It draws exactly what a stable descending sort of the whole row would give,
 * the same token for the same random number, ties and sums included (sampler.test.ts checks
 * it against that sort).
 */
import { atLeast, everything, largest } from './top-k.js';

export { seededRandom } from '../../common/random.js';
export { adjustLogits, hasAdjustments, type LogitAdjustments } from './logit-adjustments.js';

export interface SamplingParams {
  /** 0 is greedy. Default 1. */
  temperature: number;
  /** Keep the smallest set of tokens whose probability reaches topP. Default 1 (off). */
  topP: number;
  /** Keep the k most likely tokens; 0 is off. Default 0. */
  topK: number;
}

export const DEFAULT_SAMPLING: SamplingParams = { temperature: 1, topP: 1, topK: 0 };

/** The sampling an output was drawn with (GenerateResult.sampling): its parameters and seed. */
export interface UsedSampling extends SamplingParams {
  seed: number;
}

/** A top-k up to this many is gathered by count (one heap pass); a larger one, or none, by mass. */
const GATHER_BY_COUNT_MAX = 2048;
/** The histogram that finds a top-p cutoff: buckets of 1/16 nat of −logprob, down to e^−64. */
const BUCKETS_PER_NAT = 16;
const HISTOGRAM_NATS = 64;
/** How far a row's summed probabilities may be trusted to be 1 (they are within ~1e-11). */
const MASS_SLACK = 1e-9;

/** The temperature a logprob is taken at: T itself, and 1 for greedy (T = 0; see the header). */
export function scoringTemperature(temperature: number): number {
  return temperature > 0 ? temperature : 1;
}

/**
 * Buffers a caller reuses for one row after another (an engine samples its rows one at a time),
 * so that a row of Qwen3's 151,936 logits allocates nothing: `logp` holds the row's log-softmax
 * and `weights` its unnormalised probabilities exp(logit/T − max), which `total` sums. With
 * them a plain draw walks the weights instead of taking an exp of every logprob again.
 */
export class RowBuffers {
  logp = new Float64Array(0);
  weights = new Float64Array(0);
  total = 0;

  /** Views of `size` entries, the buffers grown when a row is longer than any before. */
  views(size: number): { logp: Float64Array; weights: Float64Array } {
    if (this.logp.length < size) {
      this.logp = new Float64Array(size);
      this.weights = new Float64Array(size);
    }
    return { logp: this.logp.subarray(0, size), weights: this.weights.subarray(0, size) };
  }
}

/**
 * log-softmax of `logits / temperature` at every index (temperature 0 → 1): a new array, or
 * `into`'s buffer (which then also holds the row's weights and their total).
 */
export function logSoftmax(logits: ArrayLike<number>, temperature = 1, into?: RowBuffers): Float64Array {
  const t = scoringTemperature(temperature);
  const views = into?.views(logits.length);
  const out = views?.logp ?? new Float64Array(logits.length);
  let max = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < logits.length; i++) {
    out[i] = logits[i] / t;
    if (out[i] > max) max = out[i];
  }
  let sum = 0;
  if (views) {
    const w = views.weights;
    for (let i = 0; i < out.length; i++) {
      w[i] = Math.exp(out[i] - max);
      sum += w[i];
    }
    into!.total = sum;
  } else {
    for (let i = 0; i < out.length; i++) sum += Math.exp(out[i] - max);
  }
  const logZ = max + Math.log(sum);
  for (let i = 0; i < out.length; i++) out[i] -= logZ;
  return out;
}

export interface Sampled {
  tokenId: number;
  logprob: number;
}

export function sample(logits: ArrayLike<number>, params: SamplingParams, random: () => number): Sampled {
  return sampleLogprobs(logSoftmax(logits, params.temperature), params, random);
}

/**
 * `sample` from a row already passed through `logSoftmax(logits, params.temperature)`, so that
 * a caller who also wants the row (top_logprobs, the recorded logprob) computes it once.
 */
export function sampleLogprobs(
  logp: Float64Array,
  params: SamplingParams,
  random: () => number,
  /** The buffers `logp` was computed into, if it was: a plain draw then walks their weights. */
  row?: RowBuffers,
): Sampled {
  if (params.temperature <= 0) {
    let best = 0;
    for (let i = 1; i < logp.length; i++) if (logp[i] > logp[best]) best = i;
    return { tokenId: best, logprob: logp[best] };
  }
  if (params.topK <= 0 && params.topP >= 1) {
    // No truncation: draw straight from the distribution, no ordering needed.
    if (row && row.logp.buffer === logp.buffer) return weightedDraw(logp, row, random);
    let r = random();
    for (let i = 0; i < logp.length; i++) {
      r -= Math.exp(logp[i]);
      if (r <= 0) return { tokenId: i, logprob: logp[i] };
    }
    return { tokenId: logp.length - 1, logprob: logp[logp.length - 1] };
  }
  return truncatedDraw(logp, params, random);
}

/**
 * The plain draw over a row's weights: the first index where the running sum of weights
 * reaches random() × their total, i.e. the walk above (the running sum of probabilities
 * reaching random()) scaled by the total, without an exp per entry (at 151,936 entries those
 * were a third of a token's sampling time).
 */
function weightedDraw(logp: Float64Array, row: RowBuffers, random: () => number): Sampled {
  const w = row.weights;
  let r = random() * row.total;
  for (let i = 0; i < logp.length; i++) {
    r -= w[i];
    if (r <= 0) return { tokenId: i, logprob: logp[i] };
  }
  return { tokenId: logp.length - 1, logprob: logp[logp.length - 1] };
}

/**
 * A draw from the top-k / top-p truncation of `logp`, as if the row were stably sorted by
 * descending logprob (equal values: lower index first), cut to the first k, then to the shortest
 * prefix whose mass reaches p (at least one token), and walked in that order subtracting each
 * probability from random() × the kept mass.
 *
 * Only a prefix of that order is ever built: the entries at or above a cutoff are gathered in
 * one pass and only their values sorted. The cutoff is the k-th largest value (a bounded heap)
 * for a small top-k, which holds the whole truncation; otherwise one that surely leaves mass
 * ≥ p above it (`nucleusCutoff`), so a peaked row orders a few hundred values, not 152k. The
 * mass and the walk depend on the sorted VALUES alone (equal values have equal probabilities),
 * so they add the same numbers in the same order as the full sort; which token a position
 * stands for is then fixed by its rank among equal values, in index order.
 */
function truncatedDraw(logp: Float64Array, params: SamplingParams, random: () => number): Sampled {
  const vocab = logp.length;
  const cap = params.topK > 0 ? Math.min(params.topK, vocab) : vocab;
  const byMass = params.topP < 1 && cap > GATHER_BY_COUNT_MAX;
  let gathered = byMass
    ? atLeast(logp, nucleusCutoff(logp, params.topP))
    : cap >= vocab
      ? everything(logp)
      : largest(logp, cap);
  for (;;) {
    const { ids, values } = gathered;
    const sorted = values.slice().sort().reverse();
    const limit = Math.min(cap, sorted.length);
    let keep = limit;
    if (params.topP < 1) {
      let mass = 0;
      keep = 0;
      while (keep < limit && (keep === 0 || mass < params.topP)) mass += Math.exp(sorted[keep++]);
      // The cutoff's mass, summed in another order, fell an ulp short of p: take the top-k whole.
      if (keep === limit && limit < cap && mass < params.topP) {
        gathered = cap >= vocab ? everything(logp) : largest(logp, cap);
        continue;
      }
    }
    let total = 0;
    for (let j = 0; j < keep; j++) total += Math.exp(sorted[j]);
    let r = random() * total;
    let at = keep - 1;
    for (let j = 0; j < keep; j++) {
      r -= Math.exp(sorted[j]);
      if (r <= 0) {
        at = j;
        break;
      }
    }
    const value = sorted[at];
    let rank = 0;
    while (at - rank > 0 && sorted[at - rank - 1] === value) rank++;
    for (let c = 0; c < ids.length; c++) {
      if (values[c] === value && rank-- === 0) return { tokenId: ids[c], logprob: logp[ids[c]] };
    }
    throw new Error(`sampler: value ${value} vanished from the candidates`);
  }
}

/**
 * A logprob τ such that the entries of `logp` at or above τ hold a mass of at least `topP`, in
 * one pass and no exp per entry: entries are counted in buckets of 1/16 nat of −logprob, and a
 * bucket's mass is bounded by its count × the probability at its edges. τ is the first edge
 * where the mass above is surely ≥ p: by the lower bounds summed from the top, or by 1 − the
 * upper bounds of everything below (tight when the tail is small, as it is for p near 1). The
 * entries above τ are the nucleus and a bucket or two more. −∞ (everything) when neither bound
 * gets there.
 */
export function nucleusCutoff(logp: Float64Array, topP: number): number {
  const buckets = BUCKETS_PER_NAT * HISTOGRAM_NATS;
  const counts = new Int32Array(buckets + 1);
  for (let i = 0; i < logp.length; i++) {
    // floor(v) for 0 ≤ v < buckets is v | 0; ∞ (a −∞ logit) and NaN land in the last bucket.
    const v = -logp[i] * BUCKETS_PER_NAT;
    counts[v < buckets ? (v > 0 ? v | 0 : 0) : buckets]++;
  }
  // below[b]: an upper bound of the mass in buckets b… (the last one: everything under e^−64).
  const below = new Float64Array(buckets + 1);
  below[buckets] = counts[buckets] * Math.exp(-HISTOGRAM_NATS);
  for (let b = buckets - 1; b >= 0; b--) below[b] = below[b + 1] + counts[b] * Math.exp(-b / BUCKETS_PER_NAT);
  let above = 0;
  for (let b = 0; b < buckets; b++) {
    const edge = -(b + 1) / BUCKETS_PER_NAT;
    above += counts[b] * Math.exp(edge);
    // The row's probabilities sum to 1 within rounding (≪ MASS_SLACK).
    if (above >= topP || 1 - below[b + 1] >= topP + MASS_SLACK) return edge;
  }
  return Number.NEGATIVE_INFINITY;
}

/** The k most likely tokens with their logprobs (for OpenAI's `top_logprobs`). */
export function topLogprobs(logits: ArrayLike<number>, k: number, temperature = 1): Sampled[] {
  if (k <= 0) return [];
  return topOfLogprobs(logSoftmax(logits, temperature), k);
}

/** `topLogprobs` of a row already through `logSoftmax`: most likely first, ties in index order. */
export function topOfLogprobs(logp: Float64Array, k: number): Sampled[] {
  if (k <= 0) return [];
  const n = Math.min(k, logp.length);
  const { ids, values } = n >= logp.length ? everything(logp) : largest(logp, n);
  // A stable sort of the few candidates (index order kept among equal values).
  const order = Array.from(ids.keys()).sort((a, b) => values[b] - values[a]);
  return order.slice(0, n).map((c) => ({ tokenId: ids[c], logprob: values[c] }));
}
