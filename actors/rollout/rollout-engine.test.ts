import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dims } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderOnnx } from '../models/onnx-export.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { EngineBusyError, GenerationAbortedError, GenerationEngine } from './rollout-engine.js';
import { topLogprobs } from './sampler.js';
import { randomDecoder } from './test-model.js';

describe('GenerationEngine on an exported tiny model', () => {
  let engine: GenerationEngine;
  let reference: GenerationEngine;
  let model: Awaited<ReturnType<typeof randomDecoder>>;

  beforeAll(async () => {
    model = await randomDecoder('tiny', 1);
    engine = new GenerationEngine(model.decoder, { eosTokenIds: [], maxContext: 1024, maxBatchSize: 16 });
    // Batch size 1: every sequence alone, the reference for batched results.
    reference = new GenerationEngine((await randomDecoder('tiny', 1)).decoder, {
      eosTokenIds: [],
      maxContext: 1024,
      maxBatchSize: 1,
    });
  });
  afterAll(async () => {
    await engine.close();
    await reference.close();
  });

  const prompt = (i: number) => Array.from({ length: 3 + ((i * 7) % 13) }, (_, j) => (i * 31 + j * 17) % 384);

  it('gives every sequence of a dynamic batch exactly what it gets alone', async () => {
    const requests = Array.from({ length: 12 }, (_, i) => ({
      promptTokenIds: prompt(i),
      maxTokens: 5 + (i % 4) * 3,
      temperature: 0,
    }));
    const batched = await Promise.all(requests.map((r) => engine.generate(r)));
    for (const [i, r] of requests.entries()) {
      const alone = await reference.generate(r);
      expect(batched[i].tokenIds).toEqual(alone.tokenIds);
      for (let k = 0; k < alone.logprobs.length; k++)
        expect(Math.abs(batched[i].logprobs[k] - alone.logprobs[k])).toBeLessThan(1e-4);
      expect(batched[i].finishReason).toBe('length');
      expect(batched[i].tokenIds).toHaveLength(r.maxTokens);
      expect(batched[i].weightVersion).toBe(0);
    }
  });

  it('returns logprobs that teacher scoring of the same tokens reproduces', async () => {
    const out = await engine.generate({ promptTokenIds: prompt(3), maxTokens: 12, temperature: 1, seed: 5 });
    const scored = await engine.computeLogprobs(
      [...out.promptTokenIds, ...out.tokenIds],
      out.promptTokenIds.length,
    );
    expect(scored).toHaveLength(out.tokenIds.length);
    for (let k = 0; k < scored.length; k++) expect(Math.abs(scored[k] - out.logprobs[k])).toBeLessThan(1e-4);
  });

  it('scores at the temperature the tokens were sampled with; greedy ones at 1, as recorded', async () => {
    const ids = (r: { promptTokenIds: number[]; tokenIds: number[] }) => [...r.promptTokenIds, ...r.tokenIds];
    const hot = await engine.generate({
      promptTokenIds: prompt(4),
      maxTokens: 12,
      temperature: 0.6,
      seed: 5,
    });
    const start = hot.promptTokenIds.length;
    const atT = await engine.computeLogprobs(ids(hot), start, 0.6);
    const atOne = await engine.computeLogprobs(ids(hot), start);
    let drift = 0;
    for (let k = 0; k < atT.length; k++) {
      expect(Math.abs(atT[k] - hot.logprobs[k])).toBeLessThan(1e-6);
      drift += Math.abs(atOne[k] - hot.logprobs[k]) / atT.length;
    }
    // Scored at 1 instead, the same tokens are far off (the bug the temperature argument fixes).
    expect(drift).toBeGreaterThan(1e-2);
    const greedy = await engine.generate({ promptTokenIds: prompt(4), maxTokens: 6, temperature: 0 });
    const scored = await engine.computeLogprobs(ids(greedy), start, 0);
    for (let k = 0; k < scored.length; k++)
      expect(Math.abs(scored[k] - greedy.logprobs[k])).toBeLessThan(1e-6);
    await expect(engine.computeLogprobs(ids(greedy), start, -1)).rejects.toThrow(
      'temperature must be a number ≥ 0, got -1',
    );
  });

  it("gives the teacher's top-K at every position exactly as a full softmax at T sorts it", async () => {
    const hot = await engine.generate({
      promptTokenIds: prompt(6),
      maxTokens: 10,
      temperature: 0.6,
      seed: 3,
    });
    const ids = [...hot.promptTokenIds, ...hot.tokenIds];
    const start = hot.promptTokenIds.length;
    const k = 5;
    const scored = await engine.computeTopLogprobs(ids, start, 0.6, k);
    // The reference: the whole sequence through the same decoder, every row's full softmax at
    // T = 0.6 sorted (the sampler's OpenAI top_logprobs helper).
    const { vocab } = model.decoder.layout;
    const n = ids.length;
    const out = await model.decoder.step({
      batch: 1,
      seq: n,
      past: 0,
      inputIds: BigInt64Array.from(ids, BigInt),
      attentionMask: new BigInt64Array(n).fill(1n),
      positionIds: BigInt64Array.from({ length: n }, (_, i) => BigInt(i)),
      pastKv: Array.from({ length: model.decoder.layout.layers * 2 }, () => new Float32Array(0)),
    });
    expect(scored.top.k).toBe(k);
    expect(scored.logprobs).toHaveLength(hot.tokenIds.length);
    expect(scored.top.ids).toHaveLength(hot.tokenIds.length * k);
    expect(scored.top.logprobs).toHaveLength(hot.tokenIds.length * k);
    for (let p = 0; p < hot.tokenIds.length; p++) {
      const row = out.logits.subarray((start + p - 1) * vocab, (start + p) * vocab);
      const reference = topLogprobs(row, k, 0.6);
      expect(scored.top.ids.slice(p * k, (p + 1) * k)).toEqual(reference.map((r) => r.tokenId));
      for (let j = 0; j < k; j++)
        expect(Math.abs(scored.top.logprobs[p * k + j] - reference[j].logprob)).toBeLessThan(1e-9);
      // The sampled token's logprob is the one the engine recorded when it sampled it.
      expect(Math.abs(scored.logprobs[p] - hot.logprobs[p])).toBeLessThan(1e-6);
    }
    // Asking for more than the vocabulary gives the whole vocabulary, whose mass is 1.
    const all = await engine.computeTopLogprobs(ids.slice(0, start + 1), start, 0.6, vocab + 10);
    expect(all.top.k).toBe(vocab);
    expect(all.top.logprobs.reduce((a, l) => a + Math.exp(l), 0)).toBeCloseTo(1, 9);
    await expect(engine.computeTopLogprobs(ids, start, 0.6, 0)).rejects.toThrow(
      'topK must be a whole number ≥ 1, got 0',
    );
  });

  it('samples reproducibly from a seed and stops on stop tokens', async () => {
    const a = await engine.generate({ promptTokenIds: prompt(1), maxTokens: 10, temperature: 1, seed: 9 });
    const b = await engine.generate({ promptTokenIds: prompt(1), maxTokens: 10, temperature: 1, seed: 9 });
    expect(a.tokenIds).toEqual(b.tokenIds);
    const stopAt = a.tokenIds[3];
    const stopped = await engine.generate({
      promptTokenIds: prompt(1),
      maxTokens: 10,
      temperature: 1,
      seed: 9,
      stopTokenIds: [stopAt],
    });
    expect(stopped.finishReason).toBe('stop');
    expect(stopped.tokenIds.at(-1)).toBe(stopAt);
    expect(stopped.tokenIds.length).toBeLessThanOrEqual(4);
  });

  it('says what it sampled with: the defaults it filled in and the seed it drew, which repeats the draw', async () => {
    const drawn = await engine.generate({ promptTokenIds: prompt(2), maxTokens: 8, topK: 40 });
    expect(drawn.sampling).toMatchObject({ temperature: 1, topP: 1, topK: 40 });
    expect(Number.isInteger(drawn.sampling.seed)).toBe(true);
    const again = await engine.generate({
      promptTokenIds: prompt(2),
      maxTokens: 8,
      topK: 40,
      seed: drawn.sampling.seed,
    });
    expect(again.tokenIds).toEqual(drawn.tokenIds);
    expect(again.sampling).toEqual(drawn.sampling);
    // vLLM's top_k -1 (off) is reported as 0, the value a trajectory record keeps for off.
    const off = await engine.generate({ promptTokenIds: prompt(2), maxTokens: 2, topK: -1, seed: 1 });
    expect(off.sampling.topK).toBe(0);
    const set = await engine.generate({
      promptTokenIds: prompt(2),
      maxTokens: 4,
      temperature: 0.6,
      topP: 0.9,
      seed: 3,
    });
    expect(set.sampling).toEqual({ temperature: 0.6, topP: 0.9, topK: 0, seed: 3 });
  });

  it('streams tokens as they are sampled', async () => {
    const seen: number[] = [];
    const out = await engine.generate({
      promptTokenIds: prompt(2),
      maxTokens: 6,
      temperature: 0,
      onToken: (t) => seen.push(t.tokenId),
    });
    expect(seen).toEqual(out.tokenIds);
  });

  it('rejects bad requests with clear errors and sheds load beyond its queue', async () => {
    await expect(engine.generate({ promptTokenIds: [] })).rejects.toThrow('promptTokenIds is empty');
    await expect(engine.generate({ promptTokenIds: [999] })).rejects.toThrow('outside the vocabulary');
    await expect(engine.generate({ promptTokenIds: [1], maxTokens: 5000 })).rejects.toThrow(
      "exceeds the model's context",
    );
    const small = new GenerationEngine(model.decoder, {
      eosTokenIds: [],
      maxContext: 1024,
      maxBatchSize: 1,
      maxQueue: 2,
    });
    const running = [0, 1, 2].map(() =>
      small.generate({ promptTokenIds: [1, 2], maxTokens: 3 }).catch((e: unknown) => e),
    );
    const overflow = await small.generate({ promptTokenIds: [1, 2], maxTokens: 3 }).catch((e: unknown) => e);
    expect(overflow).toBeInstanceOf(EngineBusyError);
    await Promise.all(running);
  });

  it('stops a generation when its signal aborts, queued or decoding', async () => {
    const one = new GenerationEngine(model.decoder, { eosTokenIds: [], maxContext: 1024, maxBatchSize: 1 });
    const decoding = new AbortController();
    const queued = new AbortController();
    const first = one
      .generate({ promptTokenIds: prompt(6), maxTokens: 500, signal: decoding.signal })
      .catch((e: unknown) => e);
    const second = one
      .generate({ promptTokenIds: prompt(7), maxTokens: 500, signal: queued.signal })
      .catch((e: unknown) => e);
    const third = one.generate({ promptTokenIds: prompt(8), maxTokens: 3 });
    queued.abort();
    await new Promise((r) => setTimeout(r, 30));
    decoding.abort();
    expect(await first).toBeInstanceOf(GenerationAbortedError);
    expect(await second).toBeInstanceOf(GenerationAbortedError);
    // The freed slot serves the next request.
    expect((await third).tokenIds).toHaveLength(3);
    await expect(one.generate({ promptTokenIds: [1], signal: AbortSignal.abort() })).rejects.toBeInstanceOf(
      GenerationAbortedError,
    );
  });

  it('swaps weights without failing requests: in-flight ones finish on the old version', async () => {
    const d = dims(model.config);
    const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
    const swapping = new GenerationEngine((await randomDecoder('tiny', 1)).decoder, {
      eosTokenIds: [],
      maxContext: 1024,
      weightVersion: 1,
      reload: async (tensors) => OnnxDecoder.load(exportDecoderOnnx(model.config, tensors), layout, 'cpu'),
    });
    const inFlight = swapping.generate({ promptTokenIds: prompt(4), maxTokens: 40, temperature: 0 });
    await new Promise((r) => setTimeout(r, 20));
    const swap = swapping.updateWeights(2, randomWeights(dims(model.config), 2));
    const during = swapping.generate({ promptTokenIds: prompt(4), maxTokens: 5, temperature: 0 });
    const [old, , fresh] = await Promise.all([inFlight, swap, during]);
    expect(old.weightVersion).toBe(1);
    expect(fresh.weightVersion).toBe(2);
    expect(swapping.weightVersion).toBe(2);
    // The new weights really serve: the same greedy request scores differently.
    const before = await reference.generate({ promptTokenIds: prompt(4), maxTokens: 5, temperature: 0 });
    expect(fresh.logprobs).not.toEqual(before.logprobs);
    await swapping.close();
  });

  it('requeues in-flight sequences onto the new weights when asked to', async () => {
    const d = dims(model.config);
    const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
    const swapping = new GenerationEngine((await randomDecoder('tiny', 1)).decoder, {
      eosTokenIds: [],
      maxContext: 1024,
      swapMode: 'requeue',
      reload: async (tensors) => OnnxDecoder.load(exportDecoderOnnx(model.config, tensors), layout, 'cpu'),
    });
    // Ask for the swap from inside the generation (after its 2nd token), so it is surely in flight.
    let swap: Promise<void> | undefined;
    const inFlight = swapping.generate({
      promptTokenIds: prompt(5),
      maxTokens: 60,
      temperature: 0,
      onToken: () => {
        swap ??= swapping.updateWeights(7, randomWeights(dims(model.config), 3));
      },
    });
    const result = await inFlight;
    await swap;
    expect(result.weightVersion).toBe(7);
    expect(result.tokenIds).toHaveLength(60);
    await swapping.close();
  });
});
