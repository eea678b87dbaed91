import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchBytes, kvBytesPerToken, prefillBytes } from './memory-budget.js';
import { toOpenAiError } from './openai-errors.js';
import { ContextLengthError, GenerationEngine } from './rollout-engine.js';
import { randomDecoder } from './test-model.js';

const tokens = (n: number, salt = 0) => Array.from({ length: n }, (_, j) => (salt * 31 + j * 17 + 5) % 384);
const close = (a: number[], b: number[]) => {
  expect(a).toHaveLength(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThan(1e-4);
};

describe('chunked prefill', () => {
  let chunked: GenerationEngine;
  let whole: GenerationEngine;

  beforeAll(async () => {
    // The same seeded model twice: one engine feeds prompts 5 tokens a step, one all at once.
    chunked = new GenerationEngine((await randomDecoder('tiny', 4)).decoder, {
      eosTokenIds: [],
      maxContext: 1024,
      prefillChunkTokens: 5,
    });
    whole = new GenerationEngine((await randomDecoder('tiny', 4)).decoder, {
      eosTokenIds: [],
      maxContext: 1024,
      prefillChunkTokens: 4096,
    });
  });
  afterAll(async () => {
    await chunked.close();
    await whole.close();
  });

  it('generates what an unchunked prefill generates, logprobs within float tolerance', async () => {
    for (const length of [3, 5, 23, 41]) {
      const request = {
        promptTokenIds: tokens(length, length),
        maxTokens: 6,
        temperature: 0,
        topLogprobs: 3,
      };
      const a = await chunked.generate(request);
      const b = await whole.generate(request);
      expect(a.tokenIds).toEqual(b.tokenIds);
      close(a.logprobs, b.logprobs);
      close(
        a.topLogprobs!.flat().map((t) => t.logprob),
        b.topLogprobs!.flat().map((t) => t.logprob),
      );
    }
  });

  it('scores a long sequence chunk by chunk as it scores it whole', async () => {
    const ids = tokens(67, 2);
    for (const from of [1, 4, 5, 6, 66]) {
      close(await chunked.computeLogprobs(ids, from, 0.6), await whole.computeLogprobs(ids, from, 0.6));
    }
    const a = await chunked.computeTopLogprobs(ids, 10, 1, 4);
    const b = await whole.computeTopLogprobs(ids, 10, 1, 4);
    close(a.logprobs, b.logprobs);
    close(a.top.logprobs, b.top.logprobs);
    expect(a.logprobs).toHaveLength(57);
  });

  it('refuses a bad chunk size when built', async () => {
    const { decoder } = await randomDecoder('tiny', 4);
    expect(
      () => new GenerationEngine(decoder, { eosTokenIds: [], maxContext: 64, prefillChunkTokens: 0 }),
    ).toThrow(/prefillChunkTokens/);
    await decoder.release();
  });
});

describe('memory budget', () => {
  const shape = { layers: 2, kvHeads: 2, headDim: 16, vocab: 384, heads: 8 };
  let engine: GenerationEngine;
  let steps: number[];

  beforeAll(async () => {
    steps = [];
    // Room for one 100-token sequence (prompt 60 + 40) but not for two beside each other.
    const alone = Math.max(batchBytes(shape, [100]), prefillBytes(shape, 60, 512));
    const beside = batchBytes(shape, [100, 100]) + prefillBytes(shape, 60, 512);
    const budget = Math.round((alone + beside) / 2);
    engine = new GenerationEngine((await randomDecoder('tiny', 5)).decoder, {
      eosTokenIds: [],
      maxContext: 1024,
      memoryBudgetBytes: budget,
      attentionHeads: 8,
      observer: { onStep: (batch) => steps.push(batch) },
    });
  });
  afterAll(async () => {
    await engine.close();
  });

  it('estimates from the model shape', () => {
    expect(kvBytesPerToken(shape)).toBe(2 * 2 * 2 * 16 * 4);
    // Linear in the prompt once it is longer than a chunk (attention is chunk × past).
    const a = prefillBytes(shape, 10_000, 512);
    const b = prefillBytes(shape, 20_000, 512);
    expect(b / a).toBeCloseTo(2, 1);
  });

  it('refuses a request that cannot fit with a 400 naming the counts', async () => {
    const err = await engine
      .generate({ promptTokenIds: tokens(900), maxTokens: 50 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContextLengthError);
    const refusal = err as ContextLengthError;
    expect(refusal.message).toMatch(/900 prompt tokens \+ 50 to generate/);
    expect(refusal.message).toMatch(/memory budget/);
    const fields = refusal.fields as { promptTokens: number; maxTokens: number; maxPromptTokens: number };
    expect(fields).toMatchObject({ promptTokens: 900, maxTokens: 50 });
    expect(fields.maxPromptTokens).toBeGreaterThan(0);
    expect(fields.maxPromptTokens).toBeLessThan(900);
    const http = toOpenAiError(err, 1 << 20);
    expect(http.status).toBe(400);
    expect(http.code).toBe('context_length_exceeded');
    // The longest prompt it names does fit.
    const fits = await engine.generate({ promptTokenIds: tokens(fields.maxPromptTokens), maxTokens: 50 });
    expect(fits.tokenIds).toHaveLength(50);
    await expect(engine.computeLogprobs(tokens(1000), 1)).rejects.toThrow(ContextLengthError);
  });

  it('lets a sequence that fits alone wait for the batch instead of joining it', async () => {
    steps.length = 0;
    const results = await Promise.all(
      [0, 1, 2].map((i) => engine.generate({ promptTokenIds: tokens(60, i), maxTokens: 40, temperature: 0 })),
    );
    for (const r of results) expect(r.tokenIds).toHaveLength(40);
    expect(Math.max(...steps)).toBe(1);
    // Small requests still batch under the same budget.
    steps.length = 0;
    await Promise.all(
      [0, 1, 2].map((i) => engine.generate({ promptTokenIds: tokens(4, i), maxTokens: 4, temperature: 0 })),
    );
    expect(Math.max(...steps)).toBe(3);
  });
});
