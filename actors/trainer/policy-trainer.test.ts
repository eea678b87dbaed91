import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelDir, type ModelDir } from '../models/model-dir.js';
import { initRandomModel } from '../models/model-init.js';
import { selectBackend } from '../models/tfjs-backend.js';
import { TfjsDecoder, tokenLogprobs } from '../models/tfjs-decoder.js';
import { weightSpecs } from '../models/weight-names.js';
import { RolloutModel } from '../rollout/rollout-model.js';
import { inMemoryAllReduce } from './in-memory-allreduce.test-support.js';
import { initLoraAdapters, type LoraConfig, loraScale, loraTargets, mergeLora } from './lora.js';
import { ppoClipLoss } from './losses.js';
import { passBytes } from './pass-memory.js';
import { PolicyTrainer, type PolicyTrainerOptions, type TrainSample } from './policy-trainer.js';

/** The largest |difference| between two trainers' weights. */
function maxWeightDiff(a: PolicyTrainer, b: PolicyTrainer): number {
  const wb = b.decoder.readWeights();
  let max = 0;
  for (const [name, w] of a.decoder.readWeights())
    for (let i = 0; i < w.length; i++) max = Math.max(max, Math.abs(w[i] - wb.get(name)![i]));
  return max;
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

  it("takes a step's own learning rate in place of the schedule's (a warm start's rate)", async () => {
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, { method: 'rl', optimizer: { lr: 1e-4, weightDecay: 0 } });
    const before = decoder.readTrainable().get('model.norm.weight')!.slice();
    const warm = await trainer.step(samples, { method: 'sft', lr: 5e-2 });
    expect(warm.lr).toBe(5e-2);
    // Adam's first step moves every weight with a gradient by about lr.
    const moved = decoder.readTrainable().get('model.norm.weight')!;
    expect(Math.max(...moved.map((v, i) => Math.abs(v - before[i])))).toBeGreaterThan(1e-2);
    expect((await trainer.step(samples)).lr).toBe(1e-4);
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

  it('skips a step whose loss is not finite on any rank: every rank keeps its weights and moments, then trains on', async () => {
    const shards = [0, 1].map(() => new PolicyTrainer(new TfjsDecoder(model.config, model.weights), options));
    const before = shards[0].decoder.readWeights();
    const globalTokens = PolicyTrainer.countTokens(samples);
    // Rank 1 alone holds a sample whose reward was NaN (a judge that returned NaN), or ±∞.
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, -1e308 * 10]) {
      const reducers = inMemoryAllReduce(2);
      const poisoned = [samples[2], { ...samples[3], advantages: bad }];
      const results = await Promise.all(
        shards.map((shard, r) =>
          shard.step(r === 0 ? samples.slice(0, 2) : poisoned, { globalTokens, reduce: reducers[r] }),
        ),
      );
      for (const m of results) {
        expect(m.skipped).toBe(true);
        expect(m.step).toBe(0);
        expect(Number.isFinite(m.gradNorm)).toBe(false);
      }
      // Rank 0's own loss was finite: it skipped because the sum told it to.
      expect(Number.isFinite(results[0].loss)).toBe(true);
    }
    for (const shard of shards) {
      expect(maxWeightDiff(shard, shards[0])).toBe(0);
      expect(shard.adam.state().m.size).toBe(0); // AdamW never saw the step
      for (const [name, w] of shard.decoder.readWeights()) expect(w).toEqual(before.get(name));
    }
    const reducers = inMemoryAllReduce(2);
    const next = await Promise.all(
      shards.map((shard, r) =>
        shard.step(samples.slice(r * 2, r * 2 + 2), { globalTokens, reduce: reducers[r] }),
      ),
    );
    expect(next.map((m) => [m.skipped, m.step])).toEqual([
      [false, 1],
      [false, 1],
    ]);
    expect(maxWeightDiff(shards[0], shards[1])).toBe(0);
    for (const t of shards) t.decoder.dispose();
  });

  it('a step that fails in its second pass leaves nothing behind: the next step is a fresh one', async () => {
    let calls = 0;
    const fresh = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), {
      ...options,
      microBatchSize: 2,
    });
    const failing = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), {
      ...options,
      microBatchSize: 2,
      customLoss: ({ logprobs, mask, tf }) => {
        if (++calls === 2) throw new RangeError('broken on purpose');
        return tf.sum(tf.mul(tf.neg(logprobs), mask)) as never;
      },
    });
    await expect(failing.step(samples)).rejects.toThrow('broken on purpose');
    const plain = { ...options, microBatchSize: 2 };
    const a = await fresh.step(samples);
    const b = await new PolicyTrainer(failing.decoder, plain).step(samples);
    expect(b.loss).toBeCloseTo(a.loss, 6);
    const again = await failing.step(samples);
    expect(again.passes).toBe(2);
    fresh.decoder.dispose();
    failing.decoder.dispose();
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
    expect(maxWeightDiff(whole, micro)).toBeLessThan(1e-6);
    whole.decoder.dispose();
    micro.decoder.dispose();
  });

  it('splits a batch that exceeds the pass memory budget into passes, with the same update', async () => {
    const whole = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), options);
    const parameters = [...whole.decoder.trainableVariables.values()].reduce((n, v) => n + v.size, 0);
    const width = Math.max(...samples.map((s) => s.tokenIds.length)) - 1;
    const split = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), {
      ...options,
      // Room for two of the longest samples per pass.
      passMemoryBytes: passBytes(model.dims, parameters, { samples: 2, width }),
    });
    const a = await whole.step(samples);
    const b = await split.step(samples);
    expect(a.passes).toBe(1);
    expect(b.passes).toBe(Math.ceil(samples.length / 2));
    expect(b.loss).toBeCloseTo(a.loss, 6);
    expect(maxWeightDiff(whole, split)).toBeLessThan(1e-6);
    whole.decoder.dispose();
    split.decoder.dispose();
  });

  it('trains only LoRA adapters with LoRA on, and publishes them merged', async () => {
    const config: LoraConfig = { rank: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj'] };
    const shapes = new Map(weightSpecs(model.dims).map((spec) => [spec.name, spec.shape]));
    const targets = loraTargets(shapes.keys(), config);
    const adapters = initLoraAdapters(targets, shapes, config, 1);
    const decoder = new TfjsDecoder(model.config, model.weights, {
      lora: {
        scale: loraScale(config),
        adapters: new Map([...adapters].map(([t, a]) => [t, { A: a.A, B: a.B, rank: a.rank }])),
      },
    });
    expect([...decoder.trainableVariables.keys()]).toHaveLength(targets.length * 2);
    // B starts at zero: the merged model is the base model.
    expect(decoder.readMergedWeights().get(targets[0])).toEqual(model.weights.get(targets[0]));
    const trainer = new PolicyTrainer(decoder, { ...options, optimizer: { lr: 1e-2, weightDecay: 0 } });
    await trainer.step(samples);
    await trainer.step(samples);
    const base = decoder.readWeights();
    for (const [name, w] of model.weights) expect(base.get(name)).toEqual(w);
    const trained = decoder.readTrainable();
    const merged = decoder.readMergedWeights();
    const target = targets[0];
    const [out, inFeatures] = shapes.get(target)!;
    const names = {
      A: target.replace(/weight$/, 'lora_A.weight'),
      B: target.replace(/weight$/, 'lora_B.weight'),
    };
    const expected = mergeLora(
      model.weights.get(target)!,
      trained.get(names.A)!,
      trained.get(names.B)!,
      loraScale(config),
      {
        out,
        in: inFeatures,
        rank: 4,
      },
    );
    let maxDiff = 0;
    for (let i = 0; i < expected.length; i++)
      maxDiff = Math.max(maxDiff, Math.abs(expected[i] - merged.get(target)![i]));
    expect(maxDiff).toBeLessThan(1e-6);
    expect(merged.get(target)).not.toEqual(model.weights.get(target));
    expect(merged.get('model.layers.0.mlp.up_proj.weight')).toEqual(
      model.weights.get('model.layers.0.mlp.up_proj.weight'),
    );
    decoder.dispose();
  });

  it('trains the same adapters with the frozen base kept in host memory, and the backend holds none of its matrices', async () => {
    const config: LoraConfig = {
      rank: 4,
      alpha: 8,
      dropout: 0,
      targetModules: ['q_proj', 'v_proj', 'down_proj'],
    };
    const shapes = new Map(weightSpecs(model.dims).map((spec) => [spec.name, spec.shape]));
    const adapters = initLoraAdapters(loraTargets(shapes.keys(), config), shapes, config, 1);
    const lora = {
      scale: loraScale(config),
      adapters: new Map([...adapters].map(([t, a]) => [t, { A: a.A, B: a.B, rank: a.rank }])),
    };
    const resident = new TfjsDecoder(model.config, model.weights, { lora });
    const bytesBefore = tf.memory().numBytes;
    const onHost = new TfjsDecoder(model.config, model.weights, { lora, frozenBaseOnHost: true });
    const matrices = weightSpecs(model.dims).filter((s) => s.shape.length === 2);
    const matrixBytes = matrices.reduce((n, s) => n + 4 * s.shape[0] * s.shape[1], 0);
    // Adapters and the 1-D norms only.
    expect(tf.memory().numBytes - bytesBefore).toBeLessThan(matrixBytes / 4);
    expect(onHost.baseOnHost).toBe(true);
    expect(onHost.parameterCount).toBe(resident.parameterCount);
    const opts = { ...options, optimizer: { lr: 1e-2, weightDecay: 0 } };
    const [a, b] = [new PolicyTrainer(resident, opts), new PolicyTrainer(onHost, opts)];
    for (let step = 0; step < 2; step++) {
      const [ma, mb] = [await a.step(samples), await b.step(samples)];
      expect(mb.loss).toBeCloseTo(ma.loss, 6);
    }
    const [ta, tb] = [resident.readTrainable(), onHost.readTrainable()];
    for (const [name, w] of ta) {
      let diff = 0;
      for (let i = 0; i < w.length; i++) diff = Math.max(diff, Math.abs(w[i] - tb.get(name)![i]));
      expect(diff, name).toBeLessThan(1e-6);
    }
    const [ra, rb] = [resident.readMergedWeights(), onHost.readMergedWeights()];
    for (const [name, w] of ra) expect(Array.from(rb.get(name)!), name).toEqual(Array.from(w));
    resident.dispose();
    onHost.dispose();
    expect(() => new TfjsDecoder(model.config, model.weights, { frozenBaseOnHost: true })).toThrow(
      /frozen base/,
    );
  });

  it('checkpoints gradients when a sample alone exceeds the pass budget (auto), with the same step', async () => {
    const run = async (gradientCheckpointing: 'auto' | 'on' | 'off', passMemoryBytes?: number) => {
      const trainer = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), {
        ...options,
        gradientCheckpointing,
        ...(passMemoryBytes ? { passMemoryBytes } : {}),
      });
      const metrics = await trainer.step(samples);
      return { trainer, metrics };
    };
    const plain = await run('auto');
    expect(plain.metrics.gradientCheckpointing).toBe(false);
    // 64 KiB: less than one of these samples needs without checkpointing.
    const tight = await run('auto', 64 * 1024);
    expect(tight.metrics.gradientCheckpointing).toBe(true);
    expect(tight.metrics.passes).toBe(samples.length);
    const off = await run('off', 64 * 1024);
    expect(off.metrics.gradientCheckpointing).toBe(false);
    const on = await run('on');
    expect(on.metrics.gradientCheckpointing).toBe(true);
    expect(on.metrics.loss).toBeCloseTo(plain.metrics.loss, 6);
    expect(maxWeightDiff(plain.trainer, on.trainer)).toBeLessThan(1e-6);
    for (const t of [plain, tight, off, on]) t.trainer.decoder.dispose();
  });

  it('draws LoRA dropout masks from the seed and step, so a rerun repeats exactly', async () => {
    const config: LoraConfig = { rank: 4, alpha: 8, dropout: 0.5, targetModules: ['q_proj'] };
    const shapes = new Map(weightSpecs(model.dims).map((spec) => [spec.name, spec.shape]));
    const run = async (seed: number) => {
      const adapters = initLoraAdapters(loraTargets(shapes.keys(), config), shapes, config, 1);
      const decoder = new TfjsDecoder(model.config, model.weights, {
        lora: {
          scale: loraScale(config),
          dropout: config.dropout,
          adapters: new Map([...adapters].map(([t, a]) => [t, { A: a.A, B: a.B, rank: a.rank }])),
        },
      });
      const trainer = new PolicyTrainer(decoder, {
        ...options,
        seed,
        optimizer: { lr: 1e-2, weightDecay: 0 },
      });
      await trainer.step(samples);
      await trainer.step(samples);
      const trained = decoder.readTrainable();
      decoder.dispose();
      return trained;
    };
    const [a, b, c] = [await run(5), await run(5), await run(6)];
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
  });

  /** The rollout engine's own samples at `temperature`, with its teacher scores of them. */
  async function engineSamples(temperature: number) {
    const rollout = await RolloutModel.load({ modelDir: join(root, 'tiny') });
    try {
      const out: Array<{ sample: TrainSample; teacher: number[] }> = [];
      for (let seed = 0; seed < 3; seed++) {
        const prompt = rollout.encodeChat([{ role: 'user', content: `score me ${seed}` }]);
        const r = await rollout.generate({ promptTokenIds: prompt, maxTokens: 16, temperature, seed });
        const tokenIds = [...prompt, ...r.tokenIds];
        out.push({
          sample: {
            tokenIds,
            responseStart: prompt.length,
            oldLogprobs: r.logprobs,
            advantages: 1,
            temperature,
          },
          teacher: await rollout.engine.computeLogprobs(tokenIds, prompt.length, temperature),
        });
      }
      return out;
    } finally {
      await rollout.close();
    }
  }

  const meanAbsDiff = (a: number[][], b: number[][]) => {
    const d = a.flatMap((row, i) => row.map((v, k) => Math.abs(v - b[i][k])));
    return d.reduce((x, y) => x + y, 0) / d.length;
  };

  it.each([1.0, 0.6])(
    'scores the rollout engine’s own samples at temperature %s: trainer and teacher within 1e-3',
    async (temperature) => {
      const drawn = await engineSamples(temperature);
      const rolloutLogprobs = drawn.map((d) => d.sample.oldLogprobs!);
      expect(
        meanAbsDiff(
          drawn.map((d) => d.teacher),
          rolloutLogprobs,
        ),
      ).toBeLessThan(1e-3);
      const decoder = new TfjsDecoder(model.config, model.weights);
      const trainer = new PolicyTrainer(decoder, options);
      const metrics = await trainer.step(drawn.map((d) => d.sample));
      expect(metrics.mismatch).toBeLessThan(1e-3);
      expect(metrics.policyLag).toBeNull();
      if (temperature !== 1) {
        // Scored at T = 1 instead (the bug this guards against), the numbers drift far apart.
        const flat = await trainer.step(drawn.map((d) => ({ ...d.sample, temperature: 1 })));
        expect(flat.mismatch).toBeGreaterThan(1e-2);
      }
      decoder.dispose();
    },
  );

  it('splits the drift: stale samples give the policy lag, and under their kept weights the mismatch', async () => {
    // Drawn by version 0; trained at version 0 (fresh), then again at version 1 (one stale).
    const drawn = (await engineSamples(0.6)).map((d) => ({ ...d.sample, weightVersion: 0 }));
    const run = async (lagWindow: number) => {
      const decoder = new TfjsDecoder(model.config, model.weights);
      const trainer = new PolicyTrainer(decoder, { ...options, lagWindow });
      const fresh = await trainer.step(drawn);
      const stale = await trainer.step(drawn);
      decoder.dispose();
      return { fresh, stale };
    };
    const kept = await run(1);
    const tokens = PolicyTrainer.countTokens(drawn);
    expect(kept.fresh).toMatchObject({ mismatchTokens: tokens, policyLag: null, policyLagTokens: 0 });
    expect(kept.fresh.mismatch).toBeLessThan(1e-3);
    // The policy moved by a step: the stale tokens' lag is far above the engine's numerics,
    // which the kept version-0 weights still reproduce.
    expect(kept.stale).toMatchObject({
      mismatchTokens: tokens,
      policyLagTokens: tokens,
      policyLagVersions: 1,
    });
    expect(kept.stale.mismatch).toBeLessThan(1e-3);
    expect(kept.stale.policyLag!).toBeGreaterThan(10 * kept.stale.mismatch!);
    // Without a window nothing scores the stale samples with their own weights: no mismatch.
    const none = await run(0);
    expect(none.stale).toMatchObject({ mismatch: null, mismatchTokens: 0, policyLagTokens: tokens });
    expect(none.stale.policyLag).toBeCloseTo(kept.stale.policyLag!, 6);
    // A sample the policy did not draw (a teacher's reply) is in neither figure.
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, options);
    const teacher = await trainer.step(drawn.map((s) => ({ ...s, weightVersion: null })));
    expect(teacher).toMatchObject({ mismatch: null, mismatchTokens: 0, policyLag: null, policyLagTokens: 0 });
    await expect(trainer.step([{ ...drawn[0], weightVersion: 1.5 }])).rejects.toThrow(
      'sample 0: weightVersion must be a whole number ≥ 0 or null, got 1.5',
    );
    expect(() => new PolicyTrainer(decoder, { ...options, lagWindow: -1 })).toThrow(
      'lagWindow must be a whole number ≥ 0, got -1',
    );
    decoder.dispose();
  });

  it('refuses a greedy (temperature 0) sample', async () => {
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, options);
    await expect(trainer.step([{ ...samples[0], temperature: 0 }])).rejects.toThrow(
      'sample 0: temperature must be > 0 (the temperature its response was sampled with), got 0',
    );
    decoder.dispose();
  });

  it('TIS with cap ∞ on fresh samples takes the plain PPO step', async () => {
    const drawn = (await engineSamples(0.6)).map((d) => d.sample);
    const plain = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), options);
    const tis = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), {
      ...options,
      tis: { cap: Number.POSITIVE_INFINITY },
    });
    const a = await plain.step(drawn);
    const b = await tis.step(drawn);
    expect(a.tisWeight).toBeUndefined();
    expect(b.tisWeight).toBeCloseTo(1, 5);
    expect(b.tisTruncated).toBe(0);
    expect(b.loss).toBeCloseTo(a.loss, 5);
    expect(b.gradNorm).toBeCloseTo(a.gradNorm, 4);
    expect(maxWeightDiff(plain, tis)).toBeLessThan(1e-6);
    plain.decoder.dispose();
    tis.decoder.dispose();
  });

  it('TIS truncates the weight of off-policy samples at the cap and trains against the proximal policy', async () => {
    // The rollout policy gave every token e^-1 of the probability the current one does:
    // weight exp(proximal − rollout) = e ≈ 2.72, truncated at 2. PPO against the proximal
    // policy has ratio 1 on the first pass, so each token's loss is −A·w = −2 (A = 1).
    const drawn = (await engineSamples(0.6)).map((d) => d.sample);
    const decoder = new TfjsDecoder(model.config, model.weights);
    const stale = drawn.map((s) => ({ ...s, oldLogprobs: s.oldLogprobs!.map((l) => l - 1) }));
    const trainer = new PolicyTrainer(decoder, { ...options, tis: { cap: 2 } });
    const m = await trainer.step(stale);
    expect(m.tisWeight).toBeCloseTo(2, 5);
    expect(m.tisTruncated).toBe(1);
    expect(m.pgLoss).toBeCloseTo(-2, 4);
    expect(m.clipFraction).toBe(0);
    expect(m.mismatch).toBeCloseTo(1, 3);
    expect(() => new PolicyTrainer(decoder, { ...options, tis: { cap: 1 } })).toThrow(
      'tis.cap must be a number > 1, got 1',
    );
    decoder.dispose();
  });

  /** The student's own samples at `temperature`, with a teacher model's top-K of them at that temperature. */
  async function distillSamples(temperature: number, k: number, teacherDir: string) {
    const student = await RolloutModel.load({ modelDir: join(root, 'tiny') });
    const teacher = await RolloutModel.load({ modelDir: teacherDir });
    try {
      const out: TrainSample[] = [];
      for (let seed = 0; seed < 3; seed++) {
        const prompt = student.encodeChat([{ role: 'user', content: `distill me ${seed}` }]);
        const r = await student.generate({ promptTokenIds: prompt, maxTokens: 12, temperature, seed });
        const tokenIds = [...prompt, ...r.tokenIds];
        const scored = await teacher.engine.computeTopLogprobs(tokenIds, prompt.length, temperature, k);
        out.push({
          tokenIds,
          responseStart: prompt.length,
          oldLogprobs: r.logprobs,
          // opd: the top-K KL is the whole objective, the PPO term has nothing to add.
          advantages: 0,
          temperature,
          teacherTopK: scored.top,
        });
      }
      return out;
    } finally {
      await student.close();
      await teacher.close();
    }
  }

  /** Reverse KL over the teacher's top-K + tail, in float64, from the trainer's own logits at T. */
  function directDistill(decoder: TfjsDecoder, batch: TrainSample[]): number {
    let sum = 0;
    let tokens = 0;
    for (const s of batch) {
      const logits = tf.tidy(() => decoder.forward({ inputIds: [s.tokenIds] }).logits.arraySync()[0]);
      const { k, ids, logprobs } = s.teacherTopK!;
      for (let p = 0; p < s.tokenIds.length - s.responseStart; p++) {
        const row = logits[s.responseStart - 1 + p].map((l) => l / s.temperature!);
        const max = Math.max(...row);
        const z = row.reduce((a, l) => a + Math.exp(l - max), 0);
        const st = ids.slice(p * k, (p + 1) * k).map((id) => Math.exp(row[id] - max) / z);
        const tt = logprobs.slice(p * k, (p + 1) * k).map(Math.exp);
        const sTail = Math.max(1 - st.reduce((a, b) => a + b, 0), 1e-8);
        const tTail = Math.max(1 - tt.reduce((a, b) => a + b, 0), 1e-8);
        sum +=
          st.reduce((a, v, j) => a + v * (Math.log(v) - Math.log(tt[j])), 0) +
          sTail * (Math.log(sTail) - Math.log(tTail));
        tokens++;
      }
    }
    return sum / tokens;
  }

  it('distills a teacher’s top-K at T = 0.6: the reported KL is the direct one, and it falls', async () => {
    initRandomModel({ preset: 'tiny', outDir: join(root, 'teacher'), seed: 9 });
    const batch = await distillSamples(0.6, 8, join(root, 'teacher'));
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, { ...options, optimizer: { lr: 1e-3, weightDecay: 0 } });
    const expected = directDistill(decoder, batch);
    const first = await trainer.step(batch);
    expect(first.distillTokens).toBe(PolicyTrainer.countTokens(batch));
    expect(first.distillLoss).toBeGreaterThan(3e-3);
    expect(Math.abs(first.distillLoss! - expected)).toBeLessThan(1e-4);
    // Advantages 0: the loss is the distillation term alone (token mean).
    expect(first.pgLoss).toBe(0);
    expect(first.loss).toBeCloseTo(first.distillLoss!, 5);
    let last = first;
    for (let i = 0; i < 3; i++) last = await trainer.step(batch);
    // Gradient steps on the KL move the student to the teacher.
    expect(last.distillLoss!).toBeLessThan(first.distillLoss! * 0.5);
    decoder.dispose();
  });

  it('is ≈ 0 against the student’s own top-K at its temperature, and weight 0 turns it off', async () => {
    const own = await distillSamples(0.6, 4, join(root, 'tiny'));
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, options);
    const self = await trainer.step(own);
    expect(self.distillLoss!).toBeLessThan(1e-5);
    expect(self.mismatch).toBeLessThan(1e-3);
    const plain = await trainer.step(own.map(({ teacherTopK: _, ...s }) => s));
    expect(plain.distillLoss).toBeUndefined();
    decoder.dispose();
    // distillWeight 0 and advantage 0: no gradient at all, the weights stay as they were.
    initRandomModel({ preset: 'tiny', outDir: join(root, 'teacher2'), seed: 11 });
    const other = await distillSamples(1, 4, join(root, 'teacher2'));
    const frozen = new TfjsDecoder(model.config, model.weights);
    const before = frozen.readWeights();
    const off = await new PolicyTrainer(frozen, options).step(other.map((s) => ({ ...s, distillWeight: 0 })));
    expect(off.distillLoss!).toBeGreaterThan(3e-4);
    expect(off.loss).toBe(0);
    for (const [name, w] of frozen.readWeights()) expect(w).toEqual(before.get(name));
    frozen.dispose();
  });

  it('refuses top-K rows that do not fit the response or the batch’s K', async () => {
    const decoder = new TfjsDecoder(model.config, model.weights);
    const trainer = new PolicyTrainer(decoder, options);
    const s = { ...samples[0], teacherTopK: { k: 2, ids: [1, 2], logprobs: [-1, -2] } };
    await expect(trainer.step([s])).rejects.toThrow(
      'sample 0: teacherTopK needs 2 ids and logprobs per response token (6), got 2 ids and 2 logprobs',
    );
    const good = (k: number) => ({
      ...samples[0],
      teacherTopK: { k, ids: new Array(3 * k).fill(1), logprobs: new Array(3 * k).fill(-3) },
    });
    await expect(trainer.step([good(2), good(3)])).rejects.toThrow(
      "sample 1: teacherTopK.k is 3, but the batch's teachers gave 2 tokens per position",
    );
    decoder.dispose();
  });

  it('KL penalty: scores samples without refLogprobs under the loaded weights, as given ones would be', async () => {
    const at = (sample: TrainSample) => ({ ...sample, temperature: 0.7 });
    const kl = { ...options, klCoef: 0.5 };
    // A: the trainer scores the reference itself. B: the same reference logprobs, given.
    const a = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), kl);
    const b = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), kl);
    const reference = new TfjsDecoder(model.config, model.weights);
    const given = samples.map((sample) => {
      const lp = tf.tidy(() => {
        const { logits } = reference.forward({ inputIds: [sample.tokenIds.slice(0, -1)], training: false });
        return tokenLogprobs(tf.div(logits, 0.7) as tf.Tensor3D, [sample.tokenIds.slice(1)]);
      });
      const row = (lp.arraySync() as number[][])[0].slice(sample.responseStart - 1);
      lp.dispose();
      return { ...at(sample), refLogprobs: row };
    });
    const first = await a.step(samples.map(at));
    expect(first.kl).toBeCloseTo(0, 6); // the policy is the reference before its first update
    await b.step(given);
    for (let i = 0; i < 2; i++) {
      const ma = await a.step(samples.map(at));
      const mb = await b.step(given);
      expect(ma.kl).toBeGreaterThan(0);
      expect(ma.kl).toBeCloseTo(mb.kl, 6);
      expect(ma.loss).toBeCloseTo(mb.loss, 6);
    }
    // Scoring the reference swaps the loaded weights in and back: the trained ones are intact.
    expect(maxWeightDiff(a, b)).toBeLessThan(1e-6);
    await expect(a.step([{ ...samples[0], refLogprobs: [-1] }])).rejects.toThrow(
      'sample 0: refLogprobs needs one value per response token (3)',
    );
    for (const t of [a, b]) t.decoder.dispose();
    reference.dispose();
  });

  it('runs the LM head on the response tokens alone: the step of the whole grid, to float precision', async () => {
    // A custom loss sees the whole grid (the head on every position); this one is the default
    // objective's PPO term, so both trainers must take the same step.
    const whole = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), {
      ...options,
      customLoss: ({ logprobs, oldLogprobs, advantages, mask, tf }) => {
        expect(logprobs.shape[0]).toBe(samples.length);
        const ppo = ppoClipLoss({ logprobs, oldLogprobs, advantages, mask, clipLow: 0.2, clipHigh: 0.28 });
        return tf.sum(tf.mul(ppo.tokenLoss, mask)) as tf.Scalar;
      },
    });
    const responses = new PolicyTrainer(new TfjsDecoder(model.config, model.weights), options);
    const warm = samples.map((s, i) => ({ ...s, temperature: i % 2 ? 0.6 : 1.3 }));
    for (let step = 0; step < 2; step++) {
      const a = await whole.step(warm);
      const b = await responses.step(warm);
      expect(b.loss).toBeCloseTo(a.loss, 6);
      expect(b.entropy).toBeCloseTo(a.entropy, 5);
      expect(b.mismatch!).toBeCloseTo(a.mismatch!, 6);
    }
    expect(maxWeightDiff(whole, responses)).toBeLessThan(1e-6);
    whole.decoder.dispose();
    responses.decoder.dispose();
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
    // Tempered logits, the TIS pass and the reference scoring leave nothing behind either.
    await new PolicyTrainer(decoder, { ...options, klCoef: 0.1 }).step(samples);
    const tis = new PolicyTrainer(decoder, { ...options, tis: { cap: 2 } });
    await tis.step(samples.map((s) => ({ ...s, temperature: 0.6 })));
    // Nor does top-K distillation (its grid, the KL and the weights).
    await trainer.step(
      samples.map((s) => {
        const n = 2 * (s.tokenIds.length - s.responseStart);
        return { ...s, teacherTopK: { k: 2, ids: new Array(n).fill(5), logprobs: new Array(n).fill(-2) } };
      }),
    );
    decoder.dispose();
    expect(tf.memory().numTensors).toBe(before);
  });
});
