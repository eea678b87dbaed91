/**
 * Keyword search over a local document store for the `lookup` tool: lower-cased word tokens,
 * stop words dropped, each passage scored by Σ over query terms of tf · idf (title words count
 * twice), ties broken by passage order. Deterministic, no index files.
 */
import { CORPUS, type Passage } from './corpus.js';

const STOP_WORDS = new Set(
  'a an and are as at be by for from has have how in is it its of on or the to was were what when where which who whom why with'.split(
    ' ',
  ),
);

export function terms(text: string): string[] {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((t) => !STOP_WORDS.has(t));
}

export interface SearchHit {
  passage: Passage;
  score: number;
}

export class DocumentStore {
  private readonly docTerms: Map<string, number>[];
  private readonly idf = new Map<string, number>();

  constructor(readonly passages: readonly Passage[] = CORPUS) {
    this.docTerms = passages.map((p) => {
      const counts = new Map<string, number>();
      for (const t of terms(p.text)) counts.set(t, (counts.get(t) ?? 0) + 1);
      for (const t of terms(p.title)) counts.set(t, (counts.get(t) ?? 0) + 2);
      return counts;
    });
    const df = new Map<string, number>();
    for (const counts of this.docTerms) for (const t of counts.keys()) df.set(t, (df.get(t) ?? 0) + 1);
    for (const [t, n] of df) this.idf.set(t, Math.log(1 + passages.length / n));
  }

  /** The best `k` passages for `query` (only those matching at least one term). */
  search(query: string, k = 3): SearchHit[] {
    const q = [...new Set(terms(query))];
    const hits: SearchHit[] = [];
    this.passages.forEach((passage, i) => {
      let score = 0;
      for (const t of q) score += (this.docTerms[i].get(t) ?? 0) * (this.idf.get(t) ?? 0);
      if (score > 0) hits.push({ passage, score });
    });
    hits.sort((a, b) => b.score - a.score);
    return hits.slice(0, k);
  }

  /** The tool's text result: one `[id] title: text` line per hit. */
  lookup(query: string, k = 3): string {
    const hits = this.search(query, k);
    if (hits.length === 0) return 'No passages found.';
    return hits.map((h) => `[${h.passage.id}] ${h.passage.title}: ${h.passage.text}`).join('\n');
  }
}
