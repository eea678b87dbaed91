import { describe, expect, it } from 'vitest';
import {
  adjustLogits,
  hasAdjustments,
  logSoftmax,
  nucleusCutoff,
  RowBuffers,
  type Sampled,
  type SamplingParams,
  sample,
  sampleLogprobs,
  seededRandom,
  topLogprobs,
} from './sampler.js';

/** The sampler as it was, sorting the whole vocabulary: what partial selection must equal. */
function fullSortSample(logits: ArrayLike<number>, params: SamplingParams, random: () => number): Sampled {
  const logp = logSoftmax(logits, params.temperature);
  if (params.temperature <= 0) {
    let best = 0;
    for (let i = 1; i < logp.length; i++) if (logp[i] > logp[best]) best = i;
    return { tokenId: best, logprob: logp[best] };
  }
  if (params.topK <= 0 && params.topP >= 1) {
    let r = random();
    for (let i = 0; i < logp.length; i++) {
      r -= Math.exp(logp[i]);
      if (r <= 0) return { tokenId: i, logprob: logp[i] };
    }
    return { tokenId: logp.length - 1, logprob: logp[logp.length - 1] };
  }
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

function fullSortTop(logits: ArrayLike<number>, k: number, temperature: number): Sampled[] {
  const logp = logSoftmax(logits, temperature);
  return Array.from(logp.keys())
    .sort((a, b) => logp[b] - logp[a])
    .slice(0, k)
    .map((tokenId) => ({ tokenId, logprob: logp[tokenId] }));
}

/** Rows of several shapes: flat, peaked (LM-like), with many exact ties, with −∞ entries. */
function randomRow(seed: number, vocab: number): Float32Array {
  const random = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const row = new Float32Array(vocab);
  const kind = seed % 4;
  for (let i = 0; i < vocab; i++) {
    if (kind === 0) row[i] = gauss();
    else if (kind === 1) row[i] = 4 * gauss() + (random() < 0.01 ? 12 : 0);
    else if (kind === 2)
      row[i] = Math.round(gauss() * 2) / 2; // few distinct values: ties everywhere
    else row[i] = random() < 0.2 ? Number.NEGATIVE_INFINITY : Math.round(gauss() * 4);
  }
  return row;
}

describe('sampler', () => {
  const logits = [1, 3, 2, -1];

  it('computes log-softmax at a temperature', () => {
    const lp = logSoftmax(logits);
    expect(Array.from(lp).reduce((s, x) => s + Math.exp(x), 0)).toBeCloseTo(1, 12);
    const z = Math.log(logits.reduce((s, x) => s + Math.exp(x), 0));
    expect(lp[1]).toBeCloseTo(3 - z, 12);
    const hot = logSoftmax(logits, 2);
    const z2 = Math.log(logits.reduce((s, x) => s + Math.exp(x / 2), 0));
    expect(hot[0]).toBeCloseTo(0.5 - z2, 12);
  });

  it('is greedy at temperature 0, with the raw logprob', () => {
    const s = sample(logits, { temperature: 0, topP: 1, topK: 0 }, seededRandom(1));
    expect(s.tokenId).toBe(1);
    expect(s.logprob).toBeCloseTo(logSoftmax(logits)[1], 12);
  });

  it('draws in proportion to the probabilities, reproducibly from a seed', () => {
    const counts = [0, 0, 0, 0];
    const random = seededRandom(42);
    for (let i = 0; i < 20000; i++)
      counts[sample(logits, { temperature: 1, topP: 1, topK: 0 }, random).tokenId]++;
    const p = Array.from(logSoftmax(logits), Math.exp);
    for (let i = 0; i < 4; i++) expect(counts[i] / 20000).toBeCloseTo(p[i], 1);
    const a = Array.from(
      { length: 50 },
      (_, i) => sample(logits, { temperature: 1, topP: 1, topK: 0 }, seededRandom(i)).tokenId,
    );
    const b = Array.from(
      { length: 50 },
      (_, i) => sample(logits, { temperature: 1, topP: 1, topK: 0 }, seededRandom(i)).tokenId,
    );
    expect(a).toEqual(b);
  });

  it('truncates with top-k and top-p but reports the untruncated logprob', () => {
    const random = seededRandom(7);
    for (let i = 0; i < 200; i++) {
      const s = sample(logits, { temperature: 1, topP: 1, topK: 2 }, random);
      expect([1, 2]).toContain(s.tokenId);
      expect(s.logprob).toBeCloseTo(logSoftmax(logits)[s.tokenId], 12);
    }
    // p(1) ≈ 0.66 < 0.7, so top-p 0.7 keeps tokens 1 and 2.
    for (let i = 0; i < 200; i++)
      expect([1, 2]).toContain(sample(logits, { temperature: 1, topP: 0.7, topK: 0 }, random).tokenId);
    for (let i = 0; i < 50; i++)
      expect(sample(logits, { temperature: 1, topP: 0.1, topK: 0 }, random).tokenId).toBe(1);
  });

  it('lists the top logprobs', () => {
    expect(topLogprobs(logits, 2).map((t) => t.tokenId)).toEqual([1, 2]);
    expect(topLogprobs(logits, 0)).toEqual([]);
  });

  it('draws exactly what a full sort draws: the same token for the same seed, ties included', () => {
    const topPs = [1e-9, 0.05, 0.3, 0.5, 0.9, 0.95, 0.999, 1];
    const topKs = [0, 1, 2, 5, 40, 1000];
    let compared = 0;
    for (let seed = 1; seed <= 32; seed++) {
      const vocab = seed % 3 === 0 ? 4000 : 300;
      const row = randomRow(seed, vocab);
      for (const temperature of [0.6, 1, 0]) {
        for (const topP of topPs) {
          for (const topK of topKs) {
            const params = { temperature, topP, topK };
            const a = seededRandom(seed * 7919 + topK);
            const b = seededRandom(seed * 7919 + topK);
            for (let draw = 0; draw < 3; draw++) {
              expect(sample(row, params, a)).toEqual(fullSortSample(row, params, b));
              compared++;
            }
          }
        }
      }
    }
    expect(compared).toBe(32 * 3 * topPs.length * topKs.length * 3);
  });

  it('keeps the lowest ids of a tie when the nucleus ends inside it (uniform logits)', () => {
    const uniform = new Float32Array(8).fill(1.5);
    for (const topP of [0.25, 0.5, 0.625, 1]) {
      const seen = new Set<number>();
      const a = seededRandom(3);
      const b = seededRandom(3);
      for (let i = 0; i < 200; i++) {
        const s = sample(uniform, { temperature: 0.6, topP, topK: 0 }, a);
        expect(s).toEqual(fullSortSample(uniform, { temperature: 0.6, topP, topK: 0 }, b));
        seen.add(s.tokenId);
      }
      // Equal values keep index order: the nucleus is the first ids (⌈8p⌉, or one more where
      // the rounded probabilities fall an ulp short of p).
      const ids = [...seen].sort((x, y) => x - y);
      expect(ids).toEqual([...ids.keys()]);
      expect(ids.length).toBeGreaterThanOrEqual(Math.ceil(8 * topP));
    }
  });

  it('draws exactly on a flat 152k-entry row, where the nucleus is tens of thousands of tokens', () => {
    const row = randomRow(4, 151_936);
    for (const topP of [0.5, 0.95]) {
      const params = { temperature: 0.6, topP, topK: 0 };
      const a = seededRandom(11);
      const b = seededRandom(11);
      for (let i = 0; i < 3; i++) expect(sample(row, params, a)).toEqual(fullSortSample(row, params, b));
    }
  });

  it('finds a top-p cutoff above which the mass surely reaches p, a little past the nucleus', () => {
    for (let seed = 1; seed <= 12; seed++) {
      const logp = logSoftmax(randomRow(seed, 20_000), 0.6);
      const sorted = Float64Array.from(logp).sort().reverse();
      for (const topP of [0.1, 0.5, 0.9, 0.95, 0.99, 0.999]) {
        const cutoff = nucleusCutoff(logp, topP);
        let above = 0;
        let count = 0;
        for (const v of logp) {
          if (v >= cutoff) {
            above += Math.exp(v);
            count++;
          }
        }
        expect(above).toBeGreaterThanOrEqual(topP);
        let mass = 0;
        let nucleus = 0;
        while (mass < topP) mass += Math.exp(sorted[nucleus++]);
        // Never the whole row when the nucleus is a small part of it.
        if (nucleus < 1000) expect(count).toBeLessThan(4 * nucleus + 2000);
      }
    }
  });

  it('samples a row through reused buffers as it does through fresh arrays', () => {
    // The engine's path: the log-softmax written into RowBuffers, the plain draw walking their
    // weights rather than exponentiating every logprob again; rows of several lengths in turn.
    const row = new RowBuffers();
    let draws = 0;
    for (let seed = 1; seed <= 16; seed++) {
      const logits = randomRow(seed, seed % 2 ? 3000 : 500);
      for (const temperature of [0.6, 1, 1.3]) {
        const logp = logSoftmax(logits, temperature, row);
        expect(logp).toEqual(logSoftmax(logits, temperature));
        // Each weight is its probability times the total.
        for (let i = 0; i < logp.length; i += 97)
          expect(row.weights[i]).toBeCloseTo(Math.exp(logp[i]) * row.total, 9);
        const params = { temperature, topP: 1, topK: 0 };
        const a = seededRandom(seed);
        const b = seededRandom(seed);
        for (let i = 0; i < 100; i++, draws++)
          expect(sampleLogprobs(logp, params, a, row)).toEqual(sample(logits, params, b));
      }
    }
    expect(draws).toBe(16 * 3 * 100);
  });

  it('lists the same top logprobs as a full sort, ties in index order', () => {
    for (let seed = 1; seed <= 24; seed++) {
      const row = randomRow(seed, 2000);
      for (const k of [1, 5, 20, 2000, 3000])
        expect(topLogprobs(row, k, 0.6)).toEqual(fullSortTop(row, k, 0.6));
    }
  });
});

describe('logit adjustments (logit_bias, presence and frequency penalties)', () => {
  it('adds biases and subtracts penalties over the generated tokens, leaving the input alone', () => {
    const logits = new Float32Array([1, 2, 3, 4]);
    const out = adjustLogits(
      logits,
      { logitBias: new Map([[0, 10]]), presencePenalty: 1, frequencyPenalty: 0.5 },
      [3, 3, 1],
    );
    // token 0: +10; token 1: −(1 + 0.5·1); token 3: −(1 + 0.5·2)
    expect([...out]).toEqual([11, 0.5, 3, 2]);
    expect([...logits]).toEqual([1, 2, 3, 4]);
    expect(hasAdjustments({})).toBe(false);
    expect(hasAdjustments({ logitBias: new Map() })).toBe(false);
    expect(hasAdjustments({ presencePenalty: 0.1 })).toBe(true);
  });
});
