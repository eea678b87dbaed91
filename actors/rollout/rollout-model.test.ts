import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { initRandomModel } from '../models/model-init.js';
import { exportDecoderOnnx } from '../models/onnx-export.js';
import { RolloutModel } from './rollout-model.js';

describe('RolloutModel on a `clawray model init` directory', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-rollout-'));
  const dir = join(root, 'tiny');
  const registry = new Registry();
  let model: RolloutModel;

  beforeAll(async () => {
    initRandomModel({ preset: 'tiny', outDir: dir, seed: 3 });
    model = await RolloutModel.load({ modelDir: dir, registry });
  });
  afterAll(async () => {
    await model.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('chats through the template and returns exact ids, logprobs and the text they decode to', async () => {
    const prompt = model.encodeChat([{ role: 'user', content: 'hello there' }]);
    expect(model.decode(prompt)).toContain('hello there');
    const out = await model.generate({ promptTokenIds: prompt, maxTokens: 16, temperature: 1, seed: 1 });
    expect(out.tokenIds.length).toBeGreaterThan(0);
    expect(out.logprobs).toHaveLength(out.tokenIds.length);
    expect(out.text).toBe(model.decode(out.tokenIds));
    expect(model.provider).toBe('cpu');
    const metrics = await registry.metrics();
    expect(metrics).toContain('clawray_rollout_tokens_total');
    expect(metrics).toContain('clawray_rollout_execution_provider{provider="cpu",kv_cache="host"} 1');
    // The batch's cache buffer, kept for the next batch now that this one has finished.
    expect(model.engine.kvCacheBytes).toBeGreaterThan(0);
    expect(metrics).toContain(`clawray_rollout_kv_cache_bytes ${model.engine.kvCacheBytes}`);
  });

  it('swaps to new weights by name, and rejects unknown tensors', async () => {
    const name = 'model.layers.0.mlp.down_proj.weight';
    const current = model.readWeights().get(name)!;
    const prompt = [5, 6, 7, 8];
    const before = await model.generate({ promptTokenIds: prompt, maxTokens: 8, temperature: 0 });
    await model.updateWeights(3, new Map([[name, current.map((v) => v * 50)]]));
    expect(model.weightVersion).toBe(3);
    const after = await model.generate({ promptTokenIds: prompt, maxTokens: 8, temperature: 0 });
    expect(after.weightVersion).toBe(3);
    expect(after.logprobs).not.toEqual(before.logprobs);
    await expect(model.updateWeights(4, new Map([['nope', new Float32Array(1)]]))).rejects.toThrow(
      ConfigError,
    );
  });

  it('serves a model.onnx exported elsewhere by the same code path, after checking its inputs', async () => {
    const foreign = join(root, 'foreign');
    initRandomModel({ preset: 'tiny', outDir: foreign, seed: 3 });
    const own = await RolloutModel.load({ modelDir: foreign });
    const direct = await own.generate({ promptTokenIds: [1, 2, 3], maxTokens: 6, temperature: 0 });
    await own.close();
    // Drop the safetensors: the engine must run the ONNX file alone.
    const onnxOnly = join(root, 'onnx-only');
    initRandomModel({ preset: 'tiny', outDir: onnxOnly, seed: 3 });
    const viaFile = await RolloutModel.load({ modelDir: onnxOnly });
    const { config } = viaFile.modelDir;
    const weights = viaFile.readWeights();
    await viaFile.close();
    writeFileSync(join(onnxOnly, 'model.onnx'), exportDecoderOnnx(config, weights));
    rmSync(join(onnxOnly, 'model.safetensors'));
    const fromOnnx = await RolloutModel.load({ modelDir: onnxOnly });
    const out = await fromOnnx.generate({ promptTokenIds: [1, 2, 3], maxTokens: 6, temperature: 0 });
    expect(out.tokenIds).toEqual(direct.tokenIds);
    // clawray's own (inline) export: its initializers are taken by name, so updates work.
    await fromOnnx.updateWeights(1, new Map([['model.norm.weight', new Float32Array(64).fill(2)]]));
    expect(fromOnnx.weightVersion).toBe(1);
    await fromOnnx.close();
  });

  it('names the file and the problem for an ONNX file with unexpected inputs', async () => {
    const bad = join(root, 'bad');
    initRandomModel({ preset: 'tiny', outDir: bad, seed: 1 });
    const small = join(root, 'small');
    initRandomModel({ preset: 'small', outDir: small, seed: 1 });
    const other = await RolloutModel.load({ modelDir: small });
    const { config } = other.modelDir;
    const weights = other.readWeights();
    await other.close();
    writeFileSync(join(bad, 'model.onnx'), exportDecoderOnnx(config, weights));
    const err = await RolloutModel.load({ modelDir: bad }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toContain('model.onnx');
  });
});
