import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { distEntry } from '../../common/package-root.js';
import { initRandomModel } from '../models/model-init.js';
import { exportDecoderOnnx } from '../models/onnx-export.js';
import { decodeModel, encodeModel } from '../models/onnx-proto.js';
import { RolloutModel } from './rollout-model.js';

const root = mkdtempSync(join(tmpdir(), 'clawray-onnx-layout-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function clawray(args: string[]) {
  const result = spawnSync(process.execPath, [distEntry('cli/main'), ...args], {
    encoding: 'utf8',
    env: { ...process.env, CLAWRAY_DEBUG: '' },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const PROMPT = [4, 8, 15, 16, 23, 42];

describe('onnx/model.onnx layout and `clawray model export-onnx`', () => {
  const src = join(root, 'src');
  initRandomModel({ preset: 'tiny', outDir: src, seed: 11, dtype: 'bf16' });

  it('exports onnx/model.onnx + model.onnx_data that load, serve the same tokens and take weight updates', async () => {
    const out = join(root, 'exported');
    cpSync(src, out, { recursive: true });
    const { code, stdout, stderr } = clawray(['model', 'export-onnx', out, '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { model: string; data: string; dtype: string };
    expect(result.model).toBe(join(out, 'onnx', 'model.onnx'));
    expect(result.data).toBe(join(out, 'onnx', 'model.onnx_data'));
    // The safetensors go: the engine must run onnx/model.onnx with its external data alone.
    rmSync(join(out, 'model.safetensors'));

    const direct = await RolloutModel.load({ modelDir: src });
    const viaOnnx = await RolloutModel.load({ modelDir: out });
    try {
      const a = await direct.generate({ promptTokenIds: PROMPT, maxTokens: 8, temperature: 0 });
      const b = await viaOnnx.generate({ promptTokenIds: PROMPT, maxTokens: 8, temperature: 0 });
      expect(b.tokenIds).toEqual(a.tokenIds);
      expect(b.logprobs).toEqual(a.logprobs);
      // The same update on both gives the same outputs.
      const name = 'model.layers.1.mlp.down_proj.weight';
      const next = direct
        .readWeights()
        .get(name)!
        .map((v) => v * 40);
      await direct.updateWeights(1, new Map([[name, next]]));
      await viaOnnx.updateWeights(1, new Map([[name, next]]));
      const a2 = await direct.generate({ promptTokenIds: PROMPT, maxTokens: 8, temperature: 0 });
      const b2 = await viaOnnx.generate({ promptTokenIds: PROMPT, maxTokens: 8, temperature: 0 });
      expect(b2.logprobs).toEqual(a2.logprobs);
      expect(b2.logprobs).not.toEqual(b.logprobs);
    } finally {
      await direct.close();
      await viaOnnx.close();
    }
    // The export holds float32 weights: asking for another storage type is refused, not ignored.
    const refused = await RolloutModel.load({ modelDir: out, weightDtype: 'bfloat16' }).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).fields).toMatchObject({ option: 'weightDtype' });
    expect((refused as Error).message).toContain('stores its weights as float32');
  });

  it('refuses --dtype it does not know with status 2', () => {
    const { code, stderr } = clawray([
      'model',
      'export-onnx',
      src,
      '--out',
      join(root, 'x'),
      '--dtype',
      'int4',
    ]);
    expect(code).toBe(2);
    expect(stderr).toContain('--dtype expects one of float32, float16, bfloat16');
    expect(existsSync(join(root, 'x'))).toBe(false);
  });

  it('serves a foreign onnx/model.onnx as it is and refuses weight updates with the reason, then keeps serving', async () => {
    const dir = join(root, 'foreign');
    cpSync(src, dir, { recursive: true });
    const model = await RolloutModel.load({ modelDir: src });
    const weights = model.readWeights();
    const config = model.modelDir.config;
    await model.close();
    // Another exporter's file: same graph, no clawray metadata.
    const foreign = decodeModel(exportDecoderOnnx(config, weights));
    foreign.metadata_props = [];
    foreign.producer_name = 'pytorch';
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dir, 'onnx'));
    writeFileSync(join(dir, 'onnx', 'model.onnx'), encodeModel(foreign));
    // Served as it is: a storage type or graph kind asked for cannot apply, so it is refused.
    for (const asked of [{ weightDtype: 'float16' as const }, { attention: 'gqa' as const }]) {
      const err = await RolloutModel.load({ modelDir: dir, ...asked }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).fields).toMatchObject({ option: Object.keys(asked)[0] });
      expect((err as Error).message).toContain('cannot apply to it');
    }
    const served = await RolloutModel.load({ modelDir: dir });
    try {
      const before = await served.generate({ promptTokenIds: PROMPT, maxTokens: 4, temperature: 0 });
      const err = await served
        .updateWeights(1, new Map([['model.norm.weight', new Float32Array(64)]]))
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain('was not exported by clawray');
      expect((err as Error).message).toContain('clawray model export-onnx');
      const after = await served.generate({ promptTokenIds: PROMPT, maxTokens: 4, temperature: 0 });
      expect(after.tokenIds).toEqual(before.tokenIds);
      expect(served.weightVersion).toBe(0);
    } finally {
      await served.close();
    }
    expect(readFileSync(join(dir, 'onnx', 'model.onnx')).byteLength).toBeGreaterThan(0);
  });
});

describe('RolloutModel LoRA delta sync', () => {
  it('adapters with their scale give the outputs of the merged full weights', async () => {
    const dir = join(root, 'lora');
    initRandomModel({ preset: 'tiny', outDir: dir, seed: 12 });
    const a = await RolloutModel.load({ modelDir: dir });
    const b = await RolloutModel.load({ modelDir: dir });
    try {
      const { mergeLora } = await import('../models/lora-merge.js');
      const target = 'model.layers.0.self_attn.v_proj.weight';
      const W = a.readWeights().get(target)!;
      const rank = 2;
      const inF = 64;
      const out = W.length / inF;
      const A = Float32Array.from({ length: rank * inF }, (_, i) => Math.sin(i) * 0.3);
      const B = Float32Array.from({ length: out * rank }, (_, i) => Math.cos(i) * 0.3);
      await a.updateWeights(
        1,
        new Map([
          ['model.layers.0.self_attn.v_proj.lora_A.weight', A],
          ['model.layers.0.self_attn.v_proj.lora_B.weight', B],
        ]),
        { loraScale: 4 },
      );
      await b.updateWeights(1, new Map([[target, mergeLora(W, A, B, 4)]]));
      const ra = await a.generate({ promptTokenIds: PROMPT, maxTokens: 6, temperature: 0 });
      const rb = await b.generate({ promptTokenIds: PROMPT, maxTokens: 6, temperature: 0 });
      expect(ra.logprobs).toEqual(rb.logprobs);
      expect(ra.weightVersion).toBe(1);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
