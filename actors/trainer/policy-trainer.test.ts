import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelDir, type ModelDir } from '../models/model-dir.js';
import { initRandomModel } from '../models/model-init.js';
import { selectBackend } from '../models/tfjs-backend.js';
import { TfjsDecoder } from '../models/tfjs-decoder.js';
import { RolloutModel } from '../rollout/rollout-model.js';
import {
  type GradientReducer,
  PolicyTrainer,
  type PolicyTrainerOptions,
  type TrainSample,
} from './policy-trainer.js';

/** An all-reduce among in-process ranks: each rank's buffer becomes the sum of all of them. */
function inMemoryAllReduce(ranks: number): GradientReducer[] {
  let buffers: Float32Array[] = [];
  let waiting: Array<() => void> = [];
  return Array.from({ length: ranks }, () => async (flat: Float32Array) => {
    buffers.push(flat);
    if (buffers.length < ranks) {
      await new Promise<void>((resolve) => waiting.push(resolve));
      return;
    }
    const sum = new Float32Array(flat.length);
    for (const b of buffers) for (let i = 0; i < sum.length; i++) sum[i] += b[i];
    for (const b of buffers) b.set(sum);
    const release = waiting;
    buffers = [];
    waiting = [];
    for (const r of release) r();
  });
}

describe('PolicyTrainer', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-trainer-'));
  let model: ModelDir;
  const options: PolicyTrainerOptions = {
    method: 'rl',
    optimizer: { lr: 1e-3, weightDecay: 0 },
    maxGradNorm: 1,
  };

  beforeAll(async () => {
    await selectBackend('cpu');
    initRandomModel({ preset: 'tiny', outDir: join(root, 'tiny'), seed: 4 });
    model = loadModelDir(join(root, 'tiny'));
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  const samples: TrainSample[] = Array.from({ length: 4 }, (_, i) => {
    const tokenIds = Array.from({ length: 6 + i }, (_, j) => (i * 13 + j * 7) % 384);
    const responseLength = 3 + (i % 2);
    return {
      tokenIds,
      responseStart: tokenIds.length - responseLength,
      oldLogprobs: new Array(responseLength).fill(-5.9),
      advantages: i % 2 === 0 ? 1 : -1,
    };
  });

  it('lowers the SFT loss on a fixed batch', async () => {
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, { method: 'sft', optimizer: { lr: 1e-2, weightDecay: 0 } });
    const first = await trainer.step(samples);
    let last = first;
    for (let i = 0; i < 4; i++) last = await trainer.step(samples);
    expect(last.loss).toBeLessThan(first.loss);
    expect(first.tokens).toBe(PolicyTrainer.countTokens(samples));
    decoder.dispose();
  });

  it('takes the same step with 2 shards (summed gradients) as with 1 shard on the whole batch', async () => {
    const single = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), options);
    const shards = [0, 1].map(() => new PolicyTrainer(new TfjsDecoder(model.config, model.weights), options));
    const globalTokens = PolicyTrainer.countTokens(samples);
    for (let step = 0; step < 2; step++) {
      const reducers = inMemoryAllReduce(2);
      const whole = await single.step(samples);
      const parts = await Promise.all(
        shards.map((shard, r) =>
          shard.step(samples.slice(r * 2, r * 2 + 2), { globalTokens, reduce: reducers[r] }),
        ),
      );
      expect(parts[0].loss + parts[1].loss).toBeCloseTo(whole.loss, 5);
      expect(parts[0].gradNorm).toBeCloseTo(whole.gradNorm, 4);
    }
    const a = single.decoder.readWeights();
    const [b, c] = shards.map((s) => s.decoder.readWeights());
    let maxDiff = 0;
    for (const [name, w] of a) {
      const wb = b.get(name)!;
      const wc = c.get(name)!;
      for (let i = 0; i < w.length; i++) {
        maxDiff = Math.max(maxDiff, Math.abs(w[i] - wb[i]));
        // The shards apply identical updates to identical weights: bit-identical.
        expect(wb[i]).toBe(wc[i]);
      }
    }
    expect(maxDiff).toBeLessThan(1e-6);
    for (const t of [single, ...shards]) t.decoder.dispose();
  });

  it('accumulates micro-batches into the same step as the whole batch at once', async () => {
    const whole = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), options);
    const micro = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), {
      ...options,
      microBatchSize: 1,
    });
    const a = await whole.step(samples);
    const b = await micro.step(samples);
    expect(b.loss).toBeCloseTo(a.loss, 6);
    expect(b.entropy).toBeCloseTo(a.entropy, 5);
    expect(a.entropy).toBeGreaterThan(5); // near-uniform over 384 tokens: ln 384 ≈ 5.95
    const wa = whole.decoder.readWeights();
    const wb = micro.decoder.readWeights();
    let maxDiff = 0;
    for (const [name, w] of wa)
      for (let i = 0; i < w.length; i++) maxDiff = Math.max(maxDiff, Math.abs(w[i] - wb.get(name)![i]));
    expect(maxDiff).toBeLessThan(1e-6);
    whole.decoder.dispose();
    micro.decoder.dispose();
  });

  it('scores the rollout engine’s own samples with a logprob difference ≤ 1e-3', async () => {
    const rollout = await RolloutModel.load({ modelDir: join(root, 'tiny') });
    const prompt = rollout.encodeChat([{ role: 'user', content: 'score me' }]);
    const out = await rollout.generate({ promptTokenIds: prompt, maxTokens: 12, temperature: 1, seed: 3 });
    await rollout.close();
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, options);
    const metrics = await trainer.step([
      {
        tokenIds: [...prompt, ...out.tokenIds],
        responseStart: prompt.length,
        oldLogprobs: out.logprobs,
        advantages: 1,
      },
    ]);
    expect(metrics.logprobDiff).toBeLessThan(1e-3);
    decoder.dispose();
  });

  it('names what is wrong with a sample, and leaks no tensors', async () => {
    const before = tf.memory().numTensors;
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, options);
    await expect(trainer.step([{ tokenIds: [1, 2, 3], responseStart: 1, advantages: 1 }])).rejects.toThrow(
      'sample 0: oldLogprobs needs one value per response token (2)',
    );
    await expect(trainer.step([])).rejects.toThrow('at least one sample');
    await trainer.step(samples);
    decoder.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});
