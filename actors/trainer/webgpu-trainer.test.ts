/**
 * The trainer on TensorFlow.js's WebGPU backend (Dawn over Vulkan: Mesa's lavapipe in CI, the
 * same kernels, buffers and read-backs as on a GPU) against the same steps on wasm: every method
 * (RL with GRPO advantages and a KL penalty, OPD's token advantages, combine, top-K distillation,
 * SFT), full fine-tune and LoRA, at two ranks whose gradients are read back per bucket during the
 * backward pass and all-reduced (DeviceUpdate), then gradient checkpointing over several passes,
 * TIS, one rank (no read-back at all), a skipped step, and AdamW's state across backends.
 *
 * Tolerances: losses and weights within 1e-4 relative. Both backends compute in float32; they
 * differ in summation order (GPU reductions, split products) and AdamW's rounding (float32 ops on
 * the device, float64 per element on the host): ~1e-7 of a weight, ~1e-6 of a loss measured here,
 * so 1e-4 catches any real difference (a wrong term moves a loss by percents) without flaking.
 * Where no Vulkan adapter answers, the cases are skipped and say why.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelDir, type ModelDir } from '../models/model-dir.js';
import { initRandomModel } from '../models/model-init.js';
import { releaseWebgpu, selectBackend, webgpuUnavailable } from '../models/tfjs-backend.js';
import { type LoraWeights, TfjsDecoder } from '../models/tfjs-decoder.js';
import { weightSpecs } from '../models/weight-names.js';
import { inMemoryAllReduce } from './in-memory-allreduce.test-support.js';
import { initLoraAdapters, type LoraConfig, loraScale, loraTargets } from './lora.js';
import {
  PolicyTrainer,
  type PolicyTrainerOptions,
  type StepMetrics,
  type TrainSample,
} from './policy-trainer.js';

const noAdapter = await webgpuUnavailable();
if (noAdapter) console.warn(`WebGPU trainer cases skipped: ${noAdapter}`);

const LORA: LoraConfig = { rank: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj', 'down_proj'] };
const K = 3;

/** Four samples of uneven lengths at T = 0.7; what each method adds to them. */
function batch(method: string): TrainSample[] {
  return Array.from({ length: 4 }, (_, i) => {
    const tokenIds = Array.from({ length: 9 + 2 * i }, (_, j) => (i * 13 + j * 7 + 5) % 384);
    const n = 3 + (i % 2);
    const top = {
      k: K,
      ids: Array.from({ length: n * K }, (_, j) => (j * 31 + i * 7) % 384),
      logprobs: Array.from({ length: n * K }, (_, j) => -1 - (j % K) * 0.7),
    };
    const base: TrainSample = {
      tokenIds,
      responseStart: tokenIds.length - n,
      oldLogprobs: Array.from({ length: n }, (_, j) => -5.9 + 0.01 * j),
      temperature: 0.7,
    };
    if (method === 'rl') return { ...base, advantages: i % 2 === 0 ? 1 : -1 };
    // OPD: teacher − old logprob per token.
    if (method === 'opd') return { ...base, advantages: Array.from({ length: n }, (_, j) => 0.3 - 0.2 * j) };
    if (method === 'combine') {
      return {
        ...base,
        advantages: Array.from({ length: n }, (_, j) => (i % 2 ? 0.5 : -0.5) + 0.1 * j),
        teacherTopK: top,
        distillWeight: 0.5,
      };
    }
    if (method === 'distill') return { ...base, advantages: 0, teacherTopK: top };
    return base; // sft
  });
}

const METHOD_OPTIONS: Record<string, Partial<PolicyTrainerOptions>> = {
  rl: { method: 'rl', klCoef: 0.05, entropyCoef: 0.01 },
  opd: { method: 'rl' },
  combine: { method: 'rl' },
  distill: { method: 'rl' },
  sft: { method: 'sft' },
};

describe.skipIf(noAdapter !== null)('PolicyTrainer on webgpu matches wasm', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-webgpu-trainer-'));
  let model: ModelDir;
  let adapters: Map<string, LoraWeights>;

  beforeAll(() => {
    initRandomModel({ preset: 'tiny', outDir: join(root, 'tiny'), seed: 9 });
    model = loadModelDir(join(root, 'tiny'));
    const shapes = new Map(weightSpecs(model.dims).map((s) => [s.name, s.shape]));
    const init = initLoraAdapters(loraTargets(shapes.keys(), LORA), shapes, LORA, 2);
    // B ≠ 0, so that A has a gradient at the first step too.
    adapters = new Map(
      [...init].map(([t, a]) => [t, { A: a.A, B: a.B.map((_, j) => 0.02 * Math.sin(j + 1)), rank: a.rank }]),
    );
  });
  afterAll(async () => {
    await releaseWebgpu();
    rmSync(root, { recursive: true, force: true });
  });

  function decoder(backend: string, lora: boolean): TfjsDecoder {
    return new TfjsDecoder(model.config, model.weights, {
      embedding: backend === 'wasm' && !lora ? 'onehot' : 'gather',
      ...(lora ? { lora: { scale: loraScale(LORA), adapters } } : {}),
    });
  }

  /** `steps` steps on `backend` with `ranks` ranks (each a slice of the batch); losses and weights. */
  async function train(
    backend: 'wasm' | 'webgpu',
    samples: TrainSample[],
    options: PolicyTrainerOptions,
    { ranks = 1, lora = false, steps = 2 } = {},
  ) {
    expect(await selectBackend(backend)).toBe(backend);
    const before = tf.memory().numTensors;
    const trainers = Array.from({ length: ranks }, () => new PolicyTrainer(decoder(backend, lora), options));
    const globalTokens = PolicyTrainer.countTokens(samples);
    const per = Math.ceil(samples.length / ranks);
    const metrics: StepMetrics[][] = [];
    for (let s = 0; s < steps; s++) {
      const reducers = ranks > 1 ? inMemoryAllReduce(ranks) : [];
      metrics.push(
        await Promise.all(
          trainers.map((t, r) =>
            t.step(samples.slice(r * per, (r + 1) * per), { globalTokens, reduce: reducers[r] }),
          ),
        ),
      );
    }
    const weights = await Promise.all(trainers.map((t) => t.decoder.readTrainableAsync()));
    const updates = trainers.map((t) => t.updatesOn);
    for (const t of trainers) {
      t.dispose();
      t.decoder.dispose();
    }
    expect(tf.memory().numTensors).toBe(before);
    return {
      losses: metrics.map((ms) => ms.reduce((n, m) => n + m.loss, 0)),
      metrics: metrics.map((ms) => ms[0]),
      weights,
      updates,
    };
  }

  function expectClose(got: Awaited<ReturnType<typeof train>>, want: Awaited<ReturnType<typeof train>>) {
    got.losses.forEach((loss, s) => {
      expect(Math.abs(loss - want.losses[s])).toBeLessThanOrEqual(
        1e-4 * Math.max(Math.abs(want.losses[s]), 1e-2),
      );
    });
    let scale = 0;
    let diff = 0;
    for (const [name, w] of want.weights[0]) {
      const g = got.weights[0].get(name)!;
      for (let i = 0; i < w.length; i++) {
        scale = Math.max(scale, Math.abs(w[i]));
        diff = Math.max(diff, Math.abs(w[i] - g[i]));
      }
    }
    expect(diff / scale).toBeLessThan(1e-4);
    // The ranks of a group apply the same summed update: identical weights.
    for (const other of got.weights.slice(1)) {
      for (const [name, w] of got.weights[0]) expect(other.get(name)).toEqual(w);
    }
  }

  const options = (method: string, extra: Partial<PolicyTrainerOptions> = {}): PolicyTrainerOptions =>
    ({
      optimizer: { lr: 1e-3, weightDecay: 0.01 },
      maxGradNorm: 1,
      ...METHOD_OPTIONS[method],
      ...extra,
    }) as PolicyTrainerOptions;

  for (const lora of [false, true]) {
    for (const method of ['rl', 'opd', 'combine', 'distill', 'sft']) {
      it(`${method}, ${lora ? 'LoRA' : 'full fine-tune'}: two webgpu ranks (bucketed all-reduce) take wasm's steps`, async () => {
        const samples = batch(method);
        const want = await train('wasm', samples, options(method), { lora });
        // Small buckets: several reads and all-reduces interleave with the backward pass.
        const got = await train('webgpu', samples, options(method, { bucketBytes: 16 * 1024 }), {
          ranks: 2,
          lora,
        });
        expect(want.updates).toEqual(['host']);
        expect(got.updates).toEqual(['device', 'device']);
        expectClose(got, want);
        if (method === 'combine' || method === 'distill')
          expect(got.metrics[0].distillTokens).toBeGreaterThan(0);
      });
    }
  }

  it('gradient checkpointing over one-sample passes, with TIS, at two ranks', async () => {
    const samples = batch('rl');
    const extra = { gradientCheckpointing: 'on', microBatchSize: 1, tis: { cap: 2 } } as const;
    const want = await train('wasm', samples, options('rl', extra));
    const got = await train('webgpu', samples, options('rl', { ...extra, bucketBytes: 16 * 1024 }), {
      ranks: 2,
    });
    expect(got.metrics[0]).toMatchObject({ gradientCheckpointing: true, passes: 2 });
    expect(got.metrics[0].tisWeight).toBeGreaterThan(0);
    expectClose(got, want);
  });

  it('one rank: gradients, norm and AdamW never leave the device; the same steps', async () => {
    const samples = batch('rl');
    const want = await train('wasm', samples, options('rl'), { lora: true, steps: 3 });
    const got = await train('webgpu', samples, options('rl'), { lora: true, steps: 3 });
    expect(got.metrics.map((m) => m.gradNorm)).toEqual(
      want.metrics.map((m) => expect.closeTo(m.gradNorm, 4)) as unknown as number[],
    );
    expectClose(got, want);
  });

  it('keeps earlier versions on the device for the mismatch of stale samples: the figures of wasm, no tensor left', async () => {
    // Drawn by version 0, trained at versions 0, 1 and 2 with a window of one version: fresh,
    // stale and scored under the kept weights, then too stale for the window.
    const samples = batch('rl').map((s) => ({ ...s, weightVersion: 0 }));
    const o = { ...options('rl'), lagWindow: 1 };
    const want = await train('wasm', samples, o, { lora: true, steps: 3 });
    const got = await train('webgpu', samples, o, { lora: true, steps: 3 });
    expect(got.updates[0]).toBe('device');
    const tokens = PolicyTrainer.countTokens(samples);
    expect(got.metrics.map((m) => [m.mismatchTokens, m.policyLagTokens, m.policyLagVersions])).toEqual([
      [tokens, 0, null],
      [tokens, tokens, 1],
      [0, tokens, 2],
    ]);
    got.metrics.forEach((m, s) => {
      for (const key of ['mismatch', 'policyLag'] as const) {
        const w = want.metrics[s][key];
        if (w === null) expect(m[key]).toBeNull();
        else expect(m[key]!).toBeCloseTo(w, 4);
      }
    });
    expectClose(got, want);
  });

  it('skips a step whose loss is not finite on one rank, on both, and trains on', async () => {
    expect(await selectBackend('webgpu')).toBe('webgpu');
    const samples = batch('rl');
    const ranks = [0, 1].map(() => new PolicyTrainer(decoder('webgpu', false), options('rl')));
    const globalTokens = PolicyTrainer.countTokens(samples);
    const before = await ranks[0].decoder.readTrainableAsync();
    const poisoned = [samples[2], { ...samples[3], advantages: Number.NaN }];
    let reducers = inMemoryAllReduce(2);
    const skipped = await Promise.all(
      ranks.map((t, r) =>
        t.step(r === 0 ? samples.slice(0, 2) : poisoned, { globalTokens, reduce: reducers[r] }),
      ),
    );
    expect(skipped.map((m) => [m.skipped, m.step])).toEqual([
      [true, 0],
      [true, 0],
    ]);
    expect(await ranks[1].decoder.readTrainableAsync()).toEqual(before);
    expect((await ranks[0].optimizerState()).m.size).toBe(0);
    reducers = inMemoryAllReduce(2);
    const next = await Promise.all(
      ranks.map((t, r) => t.step(samples.slice(r * 2, r * 2 + 2), { globalTokens, reduce: reducers[r] })),
    );
    expect(next.map((m) => [m.skipped, m.step])).toEqual([
      [false, 1],
      [false, 1],
    ]);
    for (const t of ranks) {
      t.dispose();
      t.decoder.dispose();
    }
  });

  it("resumes wasm's AdamW state on webgpu and back: the step after matches", async () => {
    const samples = batch('sft');
    const opts = options('sft');
    expect(await selectBackend('wasm')).toBe('wasm');
    const host = new PolicyTrainer(decoder('wasm', true), opts);
    await host.step(samples);
    const state = await host.optimizerState();
    const weights = await host.decoder.readTrainableAsync();
    const hostNext = await host.step(samples);
    const hostWeights = await host.decoder.readTrainableAsync();
    host.decoder.dispose();
    expect(await selectBackend('webgpu')).toBe('webgpu');
    const device = new PolicyTrainer(decoder('webgpu', true), opts);
    device.decoder.assignTrainable(weights);
    device.loadOptimizerState(state);
    const deviceNext = await device.step(samples);
    expect(deviceNext.step).toBe(2);
    expect(Math.abs(deviceNext.loss - hostNext.loss)).toBeLessThan(1e-4 * Math.abs(hostNext.loss));
    const got = await device.decoder.readTrainableAsync();
    for (const [name, w] of hostWeights) {
      const g = got.get(name)!;
      for (let i = 0; i < w.length; i++) expect(Math.abs(g[i] - w[i])).toBeLessThan(1e-5);
    }
    // And its moments read back as AdamW's state, for a checkpoint any backend resumes.
    const back = await device.optimizerState();
    expect(back.step).toBe(2);
    expect([...back.m.keys()].sort()).toEqual([...state.m.keys()].sort());
    device.dispose();
    device.decoder.dispose();
  });
});
