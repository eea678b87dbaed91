import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModelDir } from '../../actors/models/model-dir.js';
import { initRandomModel, Prng } from '../../actors/models/model-init.js';
import { selectBackend } from '../../actors/models/tfjs-backend.js';
import { TfjsDecoder } from '../../actors/models/tfjs-decoder.js';
import { weightSpecs } from '../../actors/models/weight-names.js';
import { CheckpointManager } from '../../actors/trainer/checkpoint.js';
import { initLoraAdapters, type LoraConfig, loraScale, loraTargets } from '../../actors/trainer/lora.js';
import { ConfigError } from '../../common/errors.js';
import { checkpointWeights } from './checkpoint-weights.js';

const lora: LoraConfig = { rank: 2, alpha: 8, dropout: 0, targetModules: ['q_proj', 'v_proj'] };

describe('checkpointWeights: what a trainer checkpoint serves', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-ckpt-weights-'));
  const modelDir = join(root, 'tiny');
  beforeAll(async () => {
    // The backend a TrainerShard picks ('auto'): what checkpointWeights merges on too.
    await selectBackend();
    initRandomModel({ preset: 'tiny', outDir: modelDir, seed: 3 });
  });
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('serves a full checkpoint’s weights as saved, bit for bit', async () => {
    const model = loadModelDir(modelDir);
    const trained = new Map([...model.weights].map(([n, w]) => [n, w.map((x) => x * 1.5 + 1e-3)]));
    const dir = new CheckpointManager({ dir: join(root, 'full') }).save({ step: 7, weights: trained });
    const { weights, loraAdapters } = await checkpointWeights(dir, modelDir, undefined);
    expect(loraAdapters).toBe(0);
    expect([...weights.keys()].sort()).toEqual([...model.weights.keys()].sort());
    for (const [name, w] of trained) expect(weights.get(name)).toEqual(w);
  });

  it('refuses a checkpoint of another model, naming the tensor and the base model', async () => {
    const dir = new CheckpointManager({ dir: join(root, 'other') }).save({
      step: 1,
      weights: new Map([['model.embed_tokens.weight', new Float32Array(3)]]),
    });
    const attempt = checkpointWeights(dir, modelDir, undefined);
    await expect(attempt).rejects.toThrow(ConfigError);
    await expect(checkpointWeights(dir, modelDir, undefined)).rejects.toThrow(
      /tensor 'model.embed_tokens.weight' \(3 values\) is not a weight of the base model/,
    );
  });

  it('merges LoRA adapters into exactly the weights the trainer published', async () => {
    const model = loadModelDir(modelDir);
    const shapes = new Map(weightSpecs(model.dims).map((s) => [s.name, s.shape]));
    const adapters = initLoraAdapters(loraTargets(shapes.keys(), lora), shapes, lora, 5);
    // Trained adapters: B is no longer zero.
    const rng = new Prng(9);
    for (const a of adapters.values()) for (let i = 0; i < a.B.length; i++) a.B[i] = rng.next() - 0.5;
    const trainer = new TfjsDecoder(model.config, model.weights, {
      lora: { scale: loraScale(lora), adapters },
    });
    const published = trainer.readMergedWeights();
    const dir = new CheckpointManager({ dir: join(root, 'lora') }).save({
      step: 4,
      weights: trainer.readTrainable(),
      shapes: new Map([...trainer.trainableVariables].map(([n, v]) => [n, v.shape])),
    });
    trainer.dispose();

    const { weights, loraAdapters } = await checkpointWeights(dir, modelDir, lora);
    expect(loraAdapters).toBe(adapters.size);
    expect([...weights.keys()].sort()).toEqual([...adapters.keys()].sort());
    for (const [name, w] of weights) {
      const p = published.get(name)!;
      const bytes = (a: Float32Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
      expect(bytes(w).equals(bytes(p))).toBe(true);
      expect(w).not.toEqual(model.weights.get(name));
    }
    await expect(checkpointWeights(dir, modelDir, undefined)).rejects.toThrow(
      /holds LoRA adapters: merging them needs the job's spec.train.lora \(alpha\): pass --manifest/,
    );
    await expect(checkpointWeights(dir, modelDir, { ...lora, rank: 4 })).rejects.toThrow(
      /has rank 2 but the manifest's spec.train.lora.rank is 4/,
    );
  });
});
