/**
 * The LoRA delta-sync path in one process, with the real pieces and no cluster: a TrainerShard
 * training LoRA publishes only its adapters (`readPublishable`), TrainerGroup hands them on as
 * a LoraPublish, the EnginePool and WeightPublisher carry them to a real RolloutEngine (staged
 * and committed with their scale), which merges them into its base and then computes what the
 * trainer's merged weights compute. A full-weight shard publishes every weight instead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeLora } from '../actors/models/lora-merge.js';
import { loadModelDir } from '../actors/models/model-dir.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { TfjsDecoder } from '../actors/models/tfjs-decoder.js';
import { RolloutEngine } from '../actors/rollout/rollout-engine-actor.js';
import { type LoraConfig, loraScale } from '../actors/trainer/lora.js';
import type { TrainSample } from '../actors/trainer/policy-trainer.js';
import { TrainerShard } from '../actors/trainer/trainer-shard.js';
import {
  describePublished,
  isLoraPublish,
  type PublishedWeights,
  WeightPublisher,
} from '../actors/trainer/weight-publisher.js';
import { EnginePool } from '../jobs/rl/engine-pool.js';
import { TrainerGroup, type TrainerShardRef } from '../jobs/rl/trainer-group.js';
import type { ActorHandle } from '../runtime/index.js';

/** An actor handle over an in-process object: `call(method, ...args)` runs the method. */
function inProcess<T extends object>(target: T): ActorHandle<T> {
  const call = (method: string, ...args: unknown[]) =>
    (target as Record<string, (...a: unknown[]) => Promise<unknown>>)[method](...args);
  return { call } as unknown as ActorHandle<T>;
}

const lora: LoraConfig = { rank: 4, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj', 'down_proj'] };
const samples: TrainSample[] = [0, 1, 2, 3].map((i) => {
  const tokenIds = Array.from({ length: 10 }, (_, j) => (i * 37 + j * 11) % 384);
  return { tokenIds, responseStart: 6, oldLogprobs: new Array(4).fill(-5.9), advantages: i % 2 ? 1 : -1 };
});
const prompt = Array.from({ length: 12 }, (_, j) => (j * 29 + 3) % 384);

describe('LoRA delta sync: trainer shard → trainer group → engine pool → rollout engine', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-lora-publish-'));
  const modelDir = join(root, 'tiny');
  const shards: TrainerShard[] = [];
  const engines: RolloutEngine[] = [];
  beforeAll(() => {
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 4 });
  });
  afterAll(async () => {
    for (const s of shards) await s[Symbol.asyncDispose]();
    for (const e of engines) await e[Symbol.asyncDispose]();
    rmSync(root, { recursive: true, force: true });
  });

  const shard = (withLora: boolean) => {
    const s = new TrainerShard({
      modelDir,
      method: 'rl',
      optimizer: { lr: 5e-2 },
      backend: 'cpu',
      ...(withLora ? { lora } : {}),
    });
    shards.push(s);
    return s;
  };

  it('readPublishable gives the adapters by PEFT name and their scale; merged, they are the served weights', async () => {
    const s = shard(true);
    const fresh = await s.readPublishable();
    if (!('lora' in fresh)) throw new Error('a LoRA shard published full weights');
    expect(fresh.lora.scale).toBe(loraScale(lora));
    const names = Object.keys(fresh.lora.adapters).sort();
    // tiny has 2 layers: 3 modules × 2 layers × (A, B).
    expect(names).toHaveLength(12);
    for (const n of names)
      expect(n).toMatch(/^model\.layers\.\d\.(self_attn\.(q|v)_proj|mlp\.down_proj)\.lora_[AB]\.weight$/);
    // PEFT's initialisation: B = 0, so the first publication changes nothing.
    for (const n of names.filter((x) => x.includes('lora_B')))
      expect(fresh.lora.adapters[n].every((v) => v === 0)).toBe(true);

    await s.trainStep(samples);
    const trained = await s.readPublishable();
    if (!('lora' in trained)) throw new Error('a LoRA shard published full weights');
    const merged = await s.readWeights();
    const base = loadModelDir(modelDir).weights;
    let moved = 0;
    for (const [name, w] of Object.entries(merged)) {
      const match = /^(.*)\.weight$/.exec(name)!;
      const A = trained.lora.adapters[`${match[1]}.lora_A.weight`];
      const B = trained.lora.adapters[`${match[1]}.lora_B.weight`];
      const b = base.get(name)!;
      if (!A) {
        // Not adapted: the frozen base, bit for bit.
        expect(w).toEqual(b);
        continue;
      }
      const [out, inF] = [B.length / lora.rank, A.length / lora.rank];
      const ours = mergeLora(b, A, B, trained.lora.scale, { out, in: inF, rank: lora.rank });
      let worst = 0;
      for (let i = 0; i < w.length; i++) {
        worst = Math.max(worst, Math.abs(ours[i] - w[i]));
        moved = Math.max(moved, Math.abs(w[i] - b[i]));
      }
      expect(worst).toBeLessThan(1e-6);
    }
    expect(moved).toBeGreaterThan(1e-4);
  });

  it('a full-weight shard publishes every weight', async () => {
    const s = shard(false);
    const out = await s.readPublishable();
    if (!('weights' in out)) throw new Error('a full-weight shard published adapters');
    expect(Object.keys(out.weights).sort()).toEqual(Object.keys(await s.readWeights()).sort());
  });

  it('the group, pool and publisher carry adapters only, and the engine then computes the trainer’s merged model', async () => {
    const s = shard(true);
    const group = new TrainerGroup([inProcess(s) as TrainerShardRef], {
      rebuildRing: async () => {},
      lastCheckpointStep: () => null,
    });
    const engine = new RolloutEngine({ modelDir, provider: 'cpu', maxBatchSize: 1 });
    engines.push(engine);
    const handle = inProcess(engine);
    const registry = new Registry();
    const publisher = new WeightPublisher([handle], { registry });
    const sent: { version: number; weights: PublishedWeights; kind: string; bytes: number }[] = [];
    const pool = new EnginePool([handle], {
      publish: async (members, version, weights) => {
        const r = await publisher.publish(version, weights, members);
        sent.push({ version, weights, kind: r.kind, bytes: r.bytes });
      },
    });
    const before = await engine.computeLogprobs(prompt, 1);

    await group.step(samples, { method: 'rl' });
    expect(group.version).toBe(1);
    const weights = await group.readWeights();
    expect(isLoraPublish(weights)).toBe(true);
    expect(describePublished(weights)).toMatch(/^LoRA adapters only \(12 tensors, 0\.\d\d MiB\)$/);
    await pool.publish(group.version, weights);
    pool.close();

    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ version: 1, kind: 'lora' });
    // Adapters, not the model: a fraction of the full weights' bytes.
    const full = Object.values(await s.readWeights()).reduce((n, w) => n + w.byteLength, 0);
    expect(sent[0].bytes).toBeLessThan(full / 4);
    expect(pool.servedVersion(0)).toBe(1);
    const counted = (await registry.getSingleMetric('clawray_trainer_weight_publish_bytes_total')!.get())
      .values;
    expect(counted).toEqual([{ labels: { kind: 'lora' }, value: sent[0].bytes }]);
    expect((await engine.ready()).weightVersion).toBe(1);

    // The engine merged base + scale·B·A itself: it scores as the trainer's merged weights do.
    const after = await engine.computeLogprobs(prompt, 1);
    const merged = await s.readWeights();
    const reference = new TfjsDecoder(loadModelDir(modelDir).config, new Map(Object.entries(merged)));
    const expected = reference.logprobsOf(prompt, 1);
    reference.dispose();
    let drift = 0;
    let moved = 0;
    for (let i = 0; i < expected.length; i++) {
      drift = Math.max(drift, Math.abs(after[i] - expected[i]));
      moved = Math.max(moved, Math.abs(after[i] - before[i]));
    }
    expect(drift).toBeLessThan(1e-4);
    expect(moved).toBeGreaterThan(10 * drift);

    // Adapters are cumulative from the frozen base: the same adapters again (as version 2)
    // leave the weights as they are, never compounded.
    await publisher.publish(2, weights);
    const again = await engine.computeLogprobs(prompt, 1);
    for (let i = 0; i < after.length; i++) expect(Math.abs(again[i] - after[i])).toBeLessThan(1e-6);
  }, 60_000);
});
