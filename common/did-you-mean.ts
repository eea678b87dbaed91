/**
 * "Did you mean": the known word closest to a misspelt one (a manifest key, a request
 * parameter), when one is close enough to suggest.
 */

/** Edit distance counting a swap of neighbours as one edit (`trian` → `train`), for "did you mean". */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, rows[i - 2][j - 2] + 1);
      rows[i][j] = d;
    }
  }
  return rows[a.length][b.length];
}

/** The candidate `word` was most likely meant to be, if any is close enough to suggest. */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const squash = (s: string) => s.toLowerCase().replace(/[-_\s]/g, '');
  const exact = candidates.find((c) => squash(c) === squash(word));
  if (exact) return exact;
  // An abbreviation (`r` for `rank`) is as good a hint as a typo when only one key starts so.
  const prefixed = candidates.filter((c) => squash(c).startsWith(squash(word)));
  if (word.length > 0 && prefixed.length === 1) return prefixed[0];
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  const allowed = Math.min(3, Math.max(1, Math.floor(word.length / 3)));
  return bestDistance <= allowed ? best : undefined;
}
