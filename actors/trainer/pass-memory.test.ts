import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { dims, PRESETS, parseModelConfig } from '../models/model-config.js';
import { randomWeights } from '../models/model-init.js';
import { selectBackend } from '../models/tfjs-backend.js';
import { TfjsDecoder } from '../models/tfjs-decoder.js';
import { passBytes, planPasses } from './pass-memory.js';
import { PolicyTrainer, TrainerMemoryError, type TrainSample } from './policy-trainer.js';

function config(overrides: Record<string, unknown> = {}) {
  return parseModelConfig({ ...PRESETS.tiny, bos_token_id: 0, eos_token_id: 1, ...overrides }, 'config.json');
}

function rlSamples(count: number, length: number): TrainSample[] {
  return Array.from({ length: count }, (_, b) => {
    const responseStart = Math.floor(length / 3);
    return {
      tokenIds: Array.from({ length }, (_, t) => (b * 31 + t * 7) % 300),
      responseStart,
      oldLogprobs: new Array(length - responseStart).fill(-5),
      advantages: b % 2 ? 0.5 : -0.5,
      temperature: 0.6,
    };
  });
}

describe('planPasses', () => {
  // A cost of one unit per token of the padded pass.
  const tokens = (n: number, width: number) => n * width;

  it('groups samples longest first into passes within the budget', () => {
    const passes = planPasses([11, 41, 21, 31, 11], tokens, 70);
    expect(passes).toEqual([[1], [3, 2], [0, 4]]);
  });

  it('caps the samples per pass and places every sample exactly once', () => {
    const lengths = [5, 9, 7, 5, 9, 8, 6];
    const passes = planPasses(lengths, tokens, Number.POSITIVE_INFINITY, 3);
    expect(passes.map((p) => p.length)).toEqual([3, 3, 1]);
    expect(passes.flat().sort()).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it('gives a sample that alone exceeds the budget a pass of its own', () => {
    expect(planPasses([100, 3, 3], tokens, 10)).toEqual([[0], [1, 2]]);
  });
});

describe('passBytes on the wasm backend', () => {
  beforeAll(async () => {
    expect(await selectBackend('wasm')).toBe('wasm');
  });

  // Peaks measured with tf.profile around a real RL step (PPO, entropy, temperature 0.6): the
  // estimate must bound them without wasting much of the budget.
  it.each([
    ['tiny', {}, 1, 96],
    ['tiny', {}, 3, 48],
    ['more heads, larger vocabulary', { num_attention_heads: 8, vocab_size: 1024 }, 2, 64],
  ])('bounds the measured peak of a step (%s %j, %i × %i tokens)', async (_, overrides, count, length) => {
    const c = config(overrides);
    const decoder = new TfjsDecoder(c, randomWeights(dims(c), 0), { embedding: 'onehot' });
    const trainer = new PolicyTrainer(decoder, { method: 'rl', optimizer: { lr: 1e-3 } });
    const before = tf.memory().numBytes;
    const profile = await tf.profile(async () => {
      await trainer.step(rlSamples(count, length));
    });
    const measured = profile.peakBytes - before;
    const parameters = [...decoder.trainableVariables.values()].reduce((n, v) => n + v.size, 0);
    // The LM head runs on the response tokens alone (rlSamples: the last two thirds).
    const logitRows = count * (length - Math.floor(length / 3));
    const estimate = passBytes(decoder.dims, parameters, { samples: count, width: length - 1, logitRows });
    expect(estimate).toBeGreaterThanOrEqual(measured);
    expect(estimate).toBeLessThan(1.5 * measured);
    decoder.dispose();
  });

  // With gradient checkpointing the estimate holds one layer's activations: more layers, the
  // same bound (and far below the plain estimate).
  it.each([
    ['4 layers', { num_hidden_layers: 4 }, 2, 96],
    ['8 layers', { num_hidden_layers: 8 }, 1, 128],
  ])(
    'bounds the measured peak of a checkpointed step (%s %j, %i × %i tokens)',
    async (_, overrides, count, length) => {
      const c = config(overrides);
      const decoder = new TfjsDecoder(c, randomWeights(dims(c), 0), { embedding: 'onehot' });
      const trainer = new PolicyTrainer(decoder, {
        method: 'rl',
        optimizer: { lr: 1e-3 },
        gradientCheckpointing: 'on',
      });
      const before = tf.memory().numBytes;
      let checkpointed = false;
      const profile = await tf.profile(async () => {
        checkpointed = (await trainer.step(rlSamples(count, length))).gradientCheckpointing;
      });
      expect(checkpointed).toBe(true);
      const measured = profile.peakBytes - before;
      const parameters = [...decoder.trainableVariables.values()].reduce((n, v) => n + v.size, 0);
      const logitRows = count * (length - Math.floor(length / 3));
      const shape = { samples: count, width: length - 1, logitRows };
      const estimate = passBytes(decoder.dims, parameters, { ...shape, checkpoint: true });
      expect(estimate).toBeGreaterThanOrEqual(measured);
      expect(estimate).toBeLessThan(1.5 * measured);
      expect(estimate).toBeLessThan(passBytes(decoder.dims, parameters, shape));
      decoder.dispose();
    },
  );

  it('refuses a sample the heap cannot hold before computing anything, naming its length', async () => {
    const c = config({ max_position_embeddings: 32_768 });
    const decoder = new TfjsDecoder(c, randomWeights(dims(c), 0), { embedding: 'onehot' });
    const trainer = new PolicyTrainer(decoder, { method: 'rl', optimizer: { lr: 1e-3 } });
    const err = await trainer.step(rlSamples(1, 20_000)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrainerMemoryError);
    expect((err as Error).message).toMatch(/20000-token sample needs about \d+ MiB/);
    expect(trainer.stepsTaken).toBe(0);
    decoder.dispose();
  });
});
