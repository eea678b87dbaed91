/**
 * The runners with the batch's cache in host memory — StandardRunner (optimum's graph, KvBatch)
 * and InPlaceRunner (slots and GQA graphs, KvSlots) — against the runner contract, and
 * `runnerFor`: the kind picks the runner, and a swap's new in-place runner takes over the
 * memory the old one kept.
 */
import { describe, expect, it } from 'vitest';
import { dims } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderExternal, exportDecoderOnnx } from '../models/onnx-export.js';
import type { DecoderAttention } from '../models/onnx-graph.js';
import type { WeightMap } from '../models/weight-names.js';
import { InPlaceRunner } from './in-place-runner.js';
import { type KvLayout, OnnxDecoder } from './onnx-decoder.js';
import { type ContractModel, runRunnerContract } from './runner.contract.js';
import { isRunner, runnerFor } from './runners.js';
import { StandardRunner } from './standard-runner.js';
import { presetConfig } from './test-model.js';

async function decoderOf(
  attention: DecoderAttention,
  config: ContractModel['config'],
  weights: WeightMap,
  layout: KvLayout,
): Promise<OnnxDecoder> {
  if (attention === 'standard') return OnnxDecoder.load(exportDecoderOnnx(config, weights), layout, 'cpu');
  const g = exportDecoderExternal(config, weights, { attention });
  return OnnxDecoder.load({ graph: g.graph, data: g.data }, layout, 'cpu');
}

for (const attention of ['standard', 'slots', 'gqa'] as const) {
  runRunnerContract(`${attention} (host cache)`, async (m) =>
    runnerFor(await decoderOf(attention, m.config, m.weights, m.layout), {
      prefillChunkTokens: m.prefillChunkTokens,
      maxBatchSize: 4,
    }),
  );
}

describe('runnerFor', () => {
  const config = presetConfig('tiny');
  const d = dims(config);
  const layout: KvLayout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
  const weights = randomWeights(d, 3);
  const options = { prefillChunkTokens: 8, maxBatchSize: 4 };

  it('picks the runner by graph kind; a runner is told from a decoder by its shape', async () => {
    const standard = await decoderOf('standard', config, weights, layout);
    const slots = await decoderOf('slots', config, weights, layout);
    const a = runnerFor(standard, options);
    const b = runnerFor(slots, options);
    try {
      expect(a).toBeInstanceOf(StandardRunner);
      expect(b).toBeInstanceOf(InPlaceRunner);
      expect([a.kind, b.kind]).toEqual(['standard', 'slots']);
      expect(isRunner(a)).toBe(true);
      expect(isRunner(standard)).toBe(false);
      expect(() => new StandardRunner(slots, options)).toThrow(/standard decoder graph, not slots/);
      expect(() => new InPlaceRunner(standard, options)).toThrow(/slots or GQA decoder graph, not standard/);
    } finally {
      await a.release();
      await b.release();
    }
  });

  it('hands an in-place runner’s kept buffer to the runner that replaces it', async () => {
    const old = runnerFor(await decoderOf('slots', config, weights, layout), options);
    await old.admit(
      [
        [1, 2, 3],
        [4, 5],
      ],
      16,
    );
    await old.decode([6, 7]);
    await old.drop([0, 1]);
    const held = old.cacheBytes;
    expect(held).toBeGreaterThan(0);
    const next = runnerFor(await decoderOf('slots', config, weights, layout), options, old);
    try {
      expect(next.cacheBytes).toBe(held);
      expect(old.cacheBytes).toBe(0);
      // The reused buffer serves as a fresh one would.
      const fresh = runnerFor(await decoderOf('slots', config, weights, layout), options);
      const want = await fresh.admit([[9, 8, 7, 6]], 16);
      const got = await next.admit([[9, 8, 7, 6]], 16);
      expect(Array.from(got)).toEqual(Array.from(want));
      expect(Array.from(await next.decode([5]))).toEqual(Array.from(await fresh.decode([5])));
      await fresh.release();
      // A runner with rows keeps its buffer.
      const busy = runnerFor(await decoderOf('slots', config, weights, layout), options, next);
      expect(busy.cacheBytes).toBe(0);
      expect(next.cacheBytes).toBe(held);
      await busy.release();
    } finally {
      await old.release();
      await next.release();
    }
  });
});
