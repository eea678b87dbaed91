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

/** The entries of a row at or above its k-th largest value: indices ascending, and their values. */
export interface Candidates {
  ids: Int32Array;
  values: Float64Array;
}

/**
 * Every entry of `row` at or above its k-th largest value (1 ≤ k ≤ row.length; ties at the
 * cutoff all included, so possibly more than k), in index order, in one pass: a bounded
 * min-heap keeps the k largest values seen, and an entry is set aside when it reaches the
 * heap's root as it is visited: a superset of the answer (the root only rises), about
 * k·(1 + ln(V/k)) entries on a row in random order, filtered at the end. O(V + m·log k). The
 * row holds no NaN.
 */
export function largest(row: ArrayLike<number>, k: number): Candidates {
  const heap = new Float64Array(k);
  let size = 0;
  let seen = new Int32Array(Math.max(16, 4 * k));
  let count = 0;
  for (let i = 0; i < row.length; i++) {
    const v = row[i];
    if (size === k && v < heap[0]) continue;
    if (count === seen.length) {
      const grown = new Int32Array(2 * seen.length);
      grown.set(seen);
      seen = grown;
    }
    seen[count++] = i;
    if (size < k) {
      // Sift up.
      let at = size++;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (!(heap[parent] > v)) break;
        heap[at] = heap[parent];
        at = parent;
      }
      heap[at] = v;
    } else if (v > heap[0]) {
      // Replace the root and sift down.
      let at = 0;
      for (;;) {
        let child = 2 * at + 1;
        if (child >= k) break;
        if (child + 1 < k && heap[child + 1] < heap[child]) child++;
        if (!(heap[child] < v)) break;
        heap[at] = heap[child];
        at = child;
      }
      heap[at] = v;
    }
  }
  const cutoff = heap[0];
  let n = 0;
  for (let c = 0; c < count; c++) if (row[seen[c]] >= cutoff) seen[n++] = seen[c];
  const ids = seen.slice(0, n);
  const values = new Float64Array(n);
  for (let c = 0; c < n; c++) values[c] = row[ids[c]];
  return { ids, values };
}

/** Every entry of `row`, as `Candidates`. */
export function everything(row: ArrayLike<number>): Candidates {
  const ids = new Int32Array(row.length);
  const values = new Float64Array(row.length);
  for (let i = 0; i < row.length; i++) {
    ids[i] = i;
    values[i] = row[i];
  }
  return { ids, values };
}

/** Every entry of `row` at or above `cutoff`, as `Candidates` (index order). */
export function atLeast(row: ArrayLike<number>, cutoff: number): Candidates {
  let n = 0;
  for (let i = 0; i < row.length; i++) if (row[i] >= cutoff) n++;
  const ids = new Int32Array(n);
  const values = new Float64Array(n);
  n = 0;
  for (let i = 0; i < row.length; i++) {
    if (row[i] >= cutoff) {
      ids[n] = i;
      values[n++] = row[i];
    }
  }
  return { ids, values };
}
