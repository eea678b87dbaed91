/**
 * The k largest entries of a row of logprobs, without sorting the whole vocabulary: teacher
 * scoring for top-K distillation asks this at every response position, and a full sort of a
 * 150k-token row per position (what `topLogprobs` in sampler.ts does for OpenAI's small
 * `top_logprobs`) would cost more than the forward pass.
 */

/**
 * A response's top-K rows, flat and row-major: position p's entries are
 * `ids[p·k .. p·k + k)` and `logprobs[p·k .. p·k + k)`, most likely first. Flat arrays keep a
 * trajectory record compact (K·L numbers each, no nested arrays).
 */
export interface TopLogprobRows {
  k: number;
  ids: number[];
  logprobs: number[];
}

/** A teacher's (or student's) scores of a response: the given tokens' logprobs and the top-K. */
export interface ScoredTokens {
  /** Logprob of each given token, one per position. */
  logprobs: number[];
  /** The k most likely tokens at each position (k = min(requested, vocabulary)). */
  top: TopLogprobRows;
}

/**
 * Appends the indices of the k largest values of `row` (descending; equal values: lower index
 * first, as a stable sort gives) and those values to `ids` / `values`. O(V·log k) at worst, O(V)
 * in practice: most entries are below the current k-th and cost one comparison.
 */
export function appendTopK(row: ArrayLike<number>, k: number, ids: number[], values: number[]): void {
  const n = Math.min(k, row.length);
  if (n <= 0) return;
  // Kept sorted descending; a candidate enters only if it beats the current smallest.
  const bestIds = new Int32Array(n);
  const best = new Float64Array(n).fill(Number.NEGATIVE_INFINITY);
  let size = 0;
  for (let i = 0; i < row.length; i++) {
    const v = row[i];
    if (size === n && !(v > best[n - 1])) continue;
    // Binary search for the first slot holding a smaller value (equal values stay ahead).
    let lo = 0;
    let hi = size;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (best[mid] >= v) lo = mid + 1;
      else hi = mid;
    }
    const end = size < n ? size : n - 1;
    for (let j = end; j > lo; j--) {
      best[j] = best[j - 1];
      bestIds[j] = bestIds[j - 1];
    }
    best[lo] = v;
    bestIds[lo] = i;
    if (size < n) size++;
  }
  for (let j = 0; j < size; j++) {
    ids.push(bestIds[j]);
    values.push(best[j]);
  }
}
