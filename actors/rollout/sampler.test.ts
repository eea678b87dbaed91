import { describe, expect, it } from 'vitest';
import { adjustLogits, hasAdjustments, logSoftmax, sample, seededRandom, topLogprobs } from './sampler.js';

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
