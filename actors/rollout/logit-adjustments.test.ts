import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GenerationEngine } from './rollout-engine.js';
import { randomDecoder } from './test-model.js';

describe('GenerationEngine with logit_bias and penalties', () => {
  let engine: GenerationEngine;
  beforeAll(async () => {
    engine = new GenerationEngine((await randomDecoder('tiny', 2)).decoder, {
      eosTokenIds: [],
      maxContext: 256,
    });
  });
  afterAll(async () => {
    await engine.close();
  });

  it('samples what the bias dictates but records the logprob under the model’s own distribution', async () => {
    const request = { promptTokenIds: [5, 6, 7], maxTokens: 4, temperature: 0.8, seed: 3 };
    const forced = await engine.generate({ ...request, logitBias: [[42, 100]] });
    expect(forced.tokenIds).toEqual([42, 42, 42, 42]);
    // Unbiased, token 42 is one of 384 and far from certain: the recorded logprobs say so.
    for (const lp of forced.logprobs) expect(lp).toBeLessThan(-1);
    // The same token scored by the model as the trainer would: the recorded numbers.
    const scored = await engine.computeLogprobs([5, 6, 7, 42, 42, 42, 42], 3, 0.8);
    for (let i = 0; i < 4; i++) expect(Math.abs(scored[i] - forced.logprobs[i])).toBeLessThan(1e-4);
    // A frequency penalty this large never repeats a token.
    const varied = await engine.generate({
      ...request,
      maxTokens: 12,
      frequencyPenalty: 100,
      logitBias: [[42, 50]],
    });
    expect(new Set(varied.tokenIds).size).toBe(12);
    await expect(engine.generate({ ...request, logitBias: [[9999, 1]] })).rejects.toThrow(/logit_bias/);
  });
});
