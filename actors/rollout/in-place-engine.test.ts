/**
 * The generation engine on the in-place decoders, slots and GQA (one cache buffer whose rows
 * are the members, members leaving by moving the last row into their place), against the
 * engine on the standard decoder of the same weights: greedy generations identical, logprobs
 * and teacher scores within float tolerance, with requests of uneven prompts and lengths
 * joining and leaving a running batch, grouped first-prompt steps and chunked prefill; aborts
 * and weight swaps; and the RolloutModel option that picks the graph.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { dims } from '../models/model-config.js';
import { initRandomModel, randomWeights } from '../models/model-init.js';
import { exportDecoderExternal, exportDecoderOnnx } from '../models/onnx-export.js';
import type { DecoderAttention } from '../models/onnx-graph.js';
import { batchBytes, prefillBytes } from './memory-budget.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { type GenerateRequest, GenerationEngine } from './rollout-engine.js';
import { chooseAttention, DEFAULT_ATTENTION, RolloutModel } from './rollout-model.js';
import { presetConfig } from './test-model.js';

const close = (a: number[], b: number[]) => {
  expect(a).toHaveLength(b.length);
  for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThan(1e-4);
};

const tokens = (n: number, salt: number) =>
  Array.from({ length: n }, (_, j) => (salt * 31 + j * 17 + 5) % 384);

const IN_PLACE_KINDS: Exclude<DecoderAttention, 'standard'>[] = ['slots', 'gqa'];

async function engines(
  kind: DecoderAttention,
  prefillChunkTokens: number,
): Promise<{ standard: GenerationEngine; gqa: GenerationEngine; inPlace: OnnxDecoder }> {
  const config = presetConfig('tiny');
  const d = dims(config);
  const weights = randomWeights(d, 4);
  const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
  const g = exportDecoderExternal(config, weights, { attention: kind });
  const options = { eosTokenIds: [], maxContext: 1024, prefillChunkTokens, maxBatchSize: 4 };
  const inPlace = await OnnxDecoder.load({ graph: g.graph, data: g.data }, layout, 'cpu');
  return {
    standard: new GenerationEngine(
      await OnnxDecoder.load(exportDecoderOnnx(config, weights), layout, 'cpu'),
      options,
    ),
    gqa: new GenerationEngine(inPlace, options),
    inPlace,
  };
}

/** More requests than batch slots, of uneven prompts and lengths: members join and leave. */
function requests(): GenerateRequest[] {
  return [3, 40, 9, 1, 17, 26, 5, 12, 33, 2].map((len, i) => ({
    promptTokenIds: tokens(len, i),
    maxTokens: 2 + ((i * 5) % 11),
    temperature: 0,
    topLogprobs: 2,
  }));
}

for (const kind of IN_PLACE_KINDS)
  for (const chunk of [6, 512]) {
    describe(`engine on a ${kind} decoder (prefill chunks of ${chunk})`, () => {
      let standard: GenerationEngine;
      let gqa: GenerationEngine;
      let inPlace: OnnxDecoder;
      beforeAll(async () => {
        ({ standard, gqa, inPlace } = await engines(kind, chunk));
      });
      afterAll(async () => {
        await standard.close();
        await gqa.close();
      });

      it('generates what the standard decoder generates, concurrently', async () => {
        const want = await Promise.all(requests().map((r) => standard.generate(r)));
        const got = await Promise.all(requests().map((r) => gqa.generate(r)));
        got.forEach((g, i) => {
          expect(g.tokenIds).toEqual(want[i].tokenIds);
          expect(g.finishReason).toBe(want[i].finishReason);
          close(g.logprobs, want[i].logprobs);
          close(
            g.topLogprobs!.flat().map((t) => t.logprob),
            want[i].topLogprobs!.flat().map((t) => t.logprob),
          );
        });
        expect(gqa.batchSize).toBe(0);
      });

      it('a grouped first-prompt step computes logits only where a row ends', async () => {
        // Right-padded to 14, rows of 9 to 14 tokens end within the last 14 − 9 + 1 = 6 positions.
        const group = [12, 9, 14, 10].map((len, i) => ({
          promptTokenIds: tokens(len, 50 + i),
          maxTokens: 3,
          temperature: 0,
          topLogprobs: 2,
        }));
        const steps: Array<{ batch: number; seq: number; logitsToKeep: number }> = [];
        const step = inPlace.stepInPlace.bind(inPlace);
        inPlace.stepInPlace = (input) => {
          steps.push({ batch: input.batch, seq: input.seq, logitsToKeep: input.logitsToKeep });
          return step(input);
        };
        try {
          const want = await Promise.all(group.map((r) => standard.generate(r)));
          const got = await Promise.all(group.map((r) => gqa.generate(r)));
          got.forEach((g, i) => {
            expect(g.tokenIds).toEqual(want[i].tokenIds);
            close(g.logprobs, want[i].logprobs);
          });
        } finally {
          inPlace.stepInPlace = step;
        }
        // The first request starts alone (the engine starts on it); with 512-token prefill chunks
        // the other three (9, 14 and 10 tokens) share one step, with 6 each is chunked.
        const grouped = steps.filter((s) => s.batch > 1 && s.seq > 1);
        expect(grouped).toEqual(chunk === 512 ? [{ batch: 3, seq: 14, logitsToKeep: 6 }] : []);
      });

      it('sampled generations with a seed match too', async () => {
        const sampled = requests().map((r, i) => ({ ...r, temperature: 1, seed: 100 + i }));
        const want = await Promise.all(sampled.map((r) => standard.generate(r)));
        const got = await Promise.all(sampled.map((r) => gqa.generate(r)));
        for (const [i, g] of got.entries()) expect(g.tokenIds).toEqual(want[i].tokenIds);
      });

      it('teacher scores match (every position, top-K)', async () => {
        const ids = tokens(45, 7);
        close(await gqa.computeLogprobs(ids, 1, 1), await standard.computeLogprobs(ids, 1, 1));
        const a = await gqa.computeTopLogprobs(ids, 20, 0.7, 3);
        const b = await standard.computeTopLogprobs(ids, 20, 0.7, 3);
        close(a.logprobs, b.logprobs);
        expect(a.top.ids).toEqual(b.top.ids);
      });
    });
  }

describe('RolloutModel attention option', () => {
  let root: string;
  let dir: string;
  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'clawray-gqa-'));
    dir = join(root, 'tiny');
    initRandomModel({ preset: 'tiny', outDir: dir, seed: 2 });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it.each([
    ['gqa when asked', 'gqa'],
    ['slots by default', undefined],
  ] as const)(
    'serves %s: the standard graph’s greedy tokens, updates included',
    async (_label, attention) => {
      const gqa = await RolloutModel.load({
        modelDir: dir,
        provider: 'cpu',
        attention,
        intraOpNumThreads: 1,
      });
      const standard = await RolloutModel.load({ modelDir: dir, provider: 'cpu', attention: 'standard' });
      try {
        expect(gqa.engine.decoderKind).toBe(attention ?? 'slots');
        expect(standard.engine.decoderKind).toBe('standard');
        const request = { promptTokenIds: tokens(11, 3), maxTokens: 8, temperature: 0 };
        expect((await gqa.generate(request)).tokenIds).toEqual((await standard.generate(request)).tokenIds);
        // A weight update reaches the GQA graph's buffer like the standard one's.
        const weights = gqa.readWeights();
        const head = weights.get('model.embed_tokens.weight')!.map((x, i) => x + (i % 7) * 0.05);
        const update = new Map([['model.embed_tokens.weight', head]]);
        await gqa.updateWeights(1, update);
        await standard.updateWeights(1, new Map(update));
        const after = await gqa.generate(request);
        expect(after.weightVersion).toBe(1);
        expect(after.tokenIds).toEqual((await standard.generate(request)).tokenIds);
      } finally {
        await gqa.close();
        await standard.close();
      }
    },
  );

  it('serves slots by default, any head_dim; refuses GQA where it cannot serve the model', () => {
    const odd = { ...presetConfig('tiny'), head_dim: 24 };
    expect(DEFAULT_ATTENTION).toBe('slots');
    expect(chooseAttention(presetConfig('tiny'), undefined)).toBe('slots');
    expect(chooseAttention(odd, undefined)).toBe('slots');
    expect(chooseAttention(odd, 'standard')).toBe('standard');
    expect(() => chooseAttention(odd, 'gqa')).toThrow(/head_dim 24/);
  });

  it('refuses an unknown attention kind, naming the option', async () => {
    await expect(
      RolloutModel.load({ modelDir: dir, provider: 'cpu', attention: 'flash' as 'gqa' }),
    ).rejects.toThrow(ConfigError);
    await expect(
      RolloutModel.load({ modelDir: dir, provider: 'cpu', intraOpNumThreads: -1 }),
    ).rejects.toThrow(/intraOpNumThreads/);
  });
});

describe.each(IN_PLACE_KINDS)('engine on a %s decoder: aborts and weight swaps', (kind) => {
  const config = presetConfig('tiny');
  const d = dims(config);
  const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
  const inPlaceDecoder = async (seed: number) => {
    const g = exportDecoderExternal(config, randomWeights(d, seed), { attention: kind });
    return OnnxDecoder.load({ graph: g.graph, data: g.data }, layout, 'cpu');
  };

  it('an aborted member leaves the batch and the others go on unharmed', async () => {
    const engine = new GenerationEngine(await inPlaceDecoder(1), { eosTokenIds: [], maxContext: 1024 });
    const alone = new GenerationEngine(await inPlaceDecoder(1), { eosTokenIds: [], maxContext: 1024 });
    try {
      const controller = new AbortController();
      let n = 0;
      const doomed = engine.generate({
        promptTokenIds: tokens(9, 1),
        maxTokens: 50,
        signal: controller.signal,
        onToken: () => {
          if (++n === 3) controller.abort();
        },
      });
      const others = [2, 3, 4].map((s) =>
        engine.generate({ promptTokenIds: tokens(4 + s, s), maxTokens: 12, temperature: 0 }),
      );
      await expect(doomed).rejects.toThrow(/aborted/);
      const got = await Promise.all(others);
      const want = await Promise.all(
        [2, 3, 4].map((s) =>
          alone.generate({ promptTokenIds: tokens(4 + s, s), maxTokens: 12, temperature: 0 }),
        ),
      );
      for (const [i, g] of got.entries()) expect(g.tokenIds).toEqual(want[i].tokenIds);
      expect(engine.abortedRequests).toBe(1);
    } finally {
      await engine.close();
      await alone.close();
    }
  });

  it('finishes in-flight sequences on the old weights, or requeues them onto the new ones', async () => {
    for (const swapMode of ['finish', 'requeue'] as const) {
      const engine = new GenerationEngine(await inPlaceDecoder(1), {
        eosTokenIds: [],
        maxContext: 1024,
        swapMode,
        weightVersion: 1,
        reload: async (tensors) => {
          const g = exportDecoderExternal(config, tensors, { attention: kind });
          return OnnxDecoder.load({ graph: g.graph, data: g.data }, layout, 'cpu');
        },
      });
      try {
        let swap: Promise<void> | undefined;
        const inFlight = engine.generate({
          promptTokenIds: tokens(6, 2),
          maxTokens: 30,
          temperature: 0,
          onToken: () => {
            swap ??= engine.updateWeights(2, randomWeights(d, 9));
          },
        });
        const result = await inFlight;
        await swap;
        expect(result.weightVersion).toBe(swapMode === 'finish' ? 1 : 2);
        expect(result.tokenIds).toHaveLength(30);
        if (swapMode === 'requeue') {
          // Restarted in the buffer its first attempt wrote (kept, zeroed): what a fresh engine
          // on the new weights generates.
          const g = exportDecoderExternal(config, randomWeights(d, 9), { attention: kind });
          const fresh = new GenerationEngine(
            await OnnxDecoder.load({ graph: g.graph, data: g.data }, layout, 'cpu'),
            {
              eosTokenIds: [],
              maxContext: 1024,
            },
          );
          const want = await fresh.generate({ promptTokenIds: tokens(6, 2), maxTokens: 30, temperature: 0 });
          await fresh.close();
          expect(result.tokenIds).toEqual(want.tokenIds);
        }
        const after = await engine.generate({ promptTokenIds: tokens(6, 2), maxTokens: 4, temperature: 0 });
        expect(after.weightVersion).toBe(2);
      } finally {
        await engine.close();
      }
    }
  });
});

describe.each(IN_PLACE_KINDS)('engine on a %s decoder: the cache buffer between batches', (kind) => {
  const config = presetConfig('tiny');
  const d = dims(config);
  const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
  const shape = { ...layout, heads: d.heads };
  const engine = async (memoryBudgetBytes?: number, steps: number[] = []) => {
    const g = exportDecoderExternal(config, randomWeights(d, 3), { attention: kind });
    return new GenerationEngine(await OnnxDecoder.load({ graph: g.graph, data: g.data }, layout, 'cpu'), {
      eosTokenIds: [],
      maxContext: 1024,
      maxBatchSize: 4,
      attentionHeads: d.heads,
      memoryBudgetBytes,
      observer: { onStep: (batch) => steps.push(batch) },
    });
  };
  const wave = (salt: number, n: number, maxTokens: number): GenerateRequest[] =>
    Array.from({ length: n }, (_, i) => ({
      promptTokenIds: tokens(3 + i, salt + i),
      maxTokens: maxTokens - i,
      temperature: 0,
    }));
  const run = (e: GenerationEngine, reqs: GenerateRequest[]) => Promise.all(reqs.map((r) => e.generate(r)));

  it('keeps the buffer when the batch empties and the next batch reuses it, generating as a fresh engine does', async () => {
    const kept = await engine();
    const fresh = await engine();
    try {
      await run(kept, wave(1, 4, 60));
      const held = kept.kvCacheBytes;
      expect(held).toBeGreaterThan(0);
      const got = await run(kept, wave(7, 3, 20));
      expect(kept.kvCacheBytes).toBe(held);
      const want = await run(fresh, wave(7, 3, 20));
      expect(got.map((g) => g.tokenIds)).toEqual(want.map((w) => w.tokenIds));
    } finally {
      await kept.close();
      await fresh.close();
    }
  });

  it('lets the kept buffer go when a request’s estimate needs its memory', async () => {
    // How much a batch of four 64-token sequences leaves behind.
    const probe = await engine();
    await run(probe, wave(1, 4, 60));
    const held = probe.kvCacheBytes;
    const prompt = tokens(100, 5);
    const want = await probe.generate({ promptTokenIds: prompt, maxTokens: 1, temperature: 0 });
    await probe.close();
    // The 100-token prompt fits the budget alone, but not beside what the first batch kept.
    const budget = prefillBytes(shape, 100, 512) + Math.floor(held / 2);
    expect(Math.max(prefillBytes(shape, 100, 512), batchBytes(shape, [101]))).toBeLessThan(budget);
    const steps: number[] = [];
    const tight = await engine(budget, steps);
    try {
      await run(tight, wave(1, 4, 60));
      expect(Math.max(...steps)).toBe(4);
      expect(tight.kvCacheBytes).toBe(held);
      const got = await tight.generate({ promptTokenIds: prompt, maxTokens: 1, temperature: 0 });
      expect(got.tokenIds).toEqual(want.tokenIds);
      expect(tight.kvCacheBytes).toBeGreaterThan(0);
      expect(tight.kvCacheBytes).toBeLessThan(held);
    } finally {
      await tight.close();
    }
  });
});
