/**
 * The behaviour every Runner must share (runner.ts), whatever its graph kind and wherever its
 * cache lives; each runner's test file runs it. `make` returns a new runner on the contract's
 * model (a seeded `tiny` one) with the given prefill chunk; every logit it returns is checked
 * against a full recompute of the row's tokens on the CPU with the standard graph.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { dims, type ModelConfig } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { exportDecoderOnnx } from '../models/onnx-export.js';
import type { WeightMap } from '../models/weight-names.js';
import { type KvLayout, OnnxDecoder } from './onnx-decoder.js';
import { maxAbsDiff, recomputeLastLogits } from './recompute.test-support.js';
import type { Runner } from './runner.js';
import { presetConfig } from './test-model.js';

export interface ContractModel {
  config: ModelConfig;
  weights: WeightMap;
  layout: KvLayout;
  prefillChunkTokens: number;
}

/** Logits may differ from the recompute by float error alone. */
const TOLERANCE = 1e-4;

export function runRunnerContract(name: string, make: (model: ContractModel) => Promise<Runner>): void {
  describe(`${name} runner contract`, () => {
    const config = presetConfig('tiny');
    const d = dims(config);
    const layout: KvLayout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
    const weights = randomWeights(d, 11);
    const model: ContractModel = { config, weights, layout, prefillChunkTokens: 4 };
    const made: Runner[] = [];
    let cpu: OnnxDecoder;

    beforeAll(async () => {
      cpu = await OnnxDecoder.load(exportDecoderOnnx(config, weights), layout, 'cpu');
    });
    afterAll(async () => {
      await cpu.release();
    });
    afterEach(async () => {
      await Promise.all(made.splice(0).map((r) => r.release().catch(() => {})));
    });

    async function fresh(): Promise<Runner> {
      const runner = await make(model);
      made.push(runner);
      return runner;
    }

    const recompute = (tokens: readonly number[]) => recomputeLastLogits(cpu, tokens);

    /** Row b of `logits` is the recompute of `histories[b]`. */
    async function expectRows(
      logits: Float32Array,
      histories: readonly (readonly number[])[],
    ): Promise<void> {
      expect(logits.length).toBeGreaterThanOrEqual(histories.length * layout.vocab);
      for (const [b, history] of histories.entries()) {
        const want = await recompute(history);
        const got = logits.subarray(b * layout.vocab, (b + 1) * layout.vocab);
        expect(maxAbsDiff(got, want), `row ${b}`).toBeLessThan(TOLERANCE);
      }
    }

    /** Three rows: a prompt longer than the chunk alone, then two short ones in one call. */
    async function threeRows(runner: Runner): Promise<number[][]> {
      const histories = [[9, 8, 7, 6, 5, 4, 3]];
      await expectRows(await runner.admit(histories, 16), histories);
      const grouped = [
        [2, 4],
        [1, 3, 5],
      ];
      await expectRows(await runner.admit(grouped, 16), grouped);
      histories.push(...grouped);
      expect(runner.rows).toBe(3);
      return histories;
    }

    it('admits a chunked prompt and grouped ones after the rows it has, and decodes every row', async () => {
      const runner = await fresh();
      expect(runner.layout).toEqual(layout);
      expect(runner.rows).toBe(0);
      const histories = await threeRows(runner);
      for (const tokens of [
        [11, 12, 13],
        [20, 21, 22],
      ]) {
        for (const [b, h] of histories.entries()) h.push(tokens[b]);
        await expectRows(await runner.decode(tokens), histories);
      }
      expect(runner.cacheBytes).toBeGreaterThan(0);
    });

    it('drops rows and says the survivors’ order, which the next steps keep', async () => {
      const runner = await fresh();
      let histories = await threeRows(runner);
      const order = await runner.drop([0]);
      expect([...order].sort()).toEqual([1, 2]);
      expect(runner.rows).toBe(2);
      histories = order.map((i) => histories[i]);
      for (const [b, h] of histories.entries()) h.push(30 + b);
      await expectRows(await runner.decode([30, 31]), histories);
      // A row joins after the survivors.
      await expectRows(await runner.admit([[6, 6, 6]], 16), [[6, 6, 6]]);
      histories.push([6, 6, 6]);
      const last = await runner.drop([1, 2]);
      expect(last).toEqual([0]);
      histories[0].push(40);
      await expectRows(await runner.decode([40]), [histories[0]]);
    });

    it('scores one sequence alone at every position from `from`, leaving the batch as it was', async () => {
      const runner = await fresh();
      const histories = await threeRows(runner);
      const sequence = [5, 6, 7, 8, 9, 10, 11, 12, 13];
      const seen: number[] = [];
      await runner.score(sequence, 2, (p, logits) => {
        seen.push(p);
        // Only the live row is valid: compared while it is.
        expect(logits.length).toBeGreaterThanOrEqual(layout.vocab);
      });
      expect(seen).toEqual([2, 3, 4, 5, 6, 7, 8]);
      const rows: Float32Array[] = [];
      await runner.score(sequence, 6, (_, logits) => {
        rows.push(logits.slice(0, layout.vocab));
      });
      for (const [k, row] of rows.entries()) await expectRows(row, [sequence.slice(0, 7 + k)]);
      for (const h of histories) h.push(1);
      await expectRows(await runner.decode([1, 1, 1]), histories);
    });

    it('clears every row, gives its memory back when fit, and admits again', async () => {
      const runner = await fresh();
      await threeRows(runner);
      await runner.clear();
      expect(runner.rows).toBe(0);
      await runner.fit();
      expect(runner.cacheBytes).toBe(0);
      await expectRows(await runner.admit([[3, 1, 4, 1, 5]], 16), [[3, 1, 4, 1, 5]]);
      await expectRows(await runner.decode([9]), [[3, 1, 4, 1, 5, 9]]);
    });

    it('refuses work once released', async () => {
      const runner = await fresh();
      await runner.admit([[1, 2, 3]], 8);
      await runner.release();
      await expect(runner.admit([[1, 2]], 8).then(() => runner.decode([1, 1]))).rejects.toThrow();
    });
  });
}
