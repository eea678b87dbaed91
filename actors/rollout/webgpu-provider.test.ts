/**
 * The rollout engine on onnxruntime's WebGPU execution provider, built into onnxruntime-node for
 * Linux x64 (Dawn over Vulkan). Without a GPU, CI runs it on Mesa's lavapipe, a software Vulkan
 * driver (.ci/run installs it): the same provider code, kernels and host↔device copies as on a
 * GPU, only slower. Where no Vulkan adapter answers at all, the WebGPU cases are skipped and say
 * so; asking for a provider that cannot start is always checked.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listSupportedBackends } from 'onnxruntime-node';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../common/errors.js';
import { dims } from '../models/model-config.js';
import { initRandomModel, randomWeights } from '../models/model-init.js';
import { exportDecoderExternal } from '../models/onnx-export.js';
import { DECODER_ATTENTIONS } from '../models/onnx-graph.js';
import { KvSlots } from './kv-batch.js';
import { OnnxDecoder } from './onnx-decoder.js';
import { RolloutModel } from './rollout-model.js';
import { presetConfig } from './test-model.js';
import { webgpuUnavailable } from './webgpu-probe.test-support.js';

const config = presetConfig('small');
const d = dims(config);
const layout = { layers: d.layers, kvHeads: d.kvHeads, headDim: d.headDim, vocab: d.vocab };
const weights = randomWeights(d, 11);

const noAdapter = await webgpuUnavailable();
if (noAdapter) console.warn(`WebGPU cases skipped: ${noAdapter}`);

/** Logits of two rows of uneven prompts, then one decode step each, on `provider`. */
async function twoSteps(attention: (typeof DECODER_ATTENTIONS)[number], provider: 'cpu' | 'webgpu') {
  const decoder = await OnnxDecoder.load(
    exportDecoderExternal(config, weights, { attention }),
    layout,
    provider,
  );
  try {
    const prompts = [
      [5, 9, 11, 3, 7, 2, 40, 41],
      [12, 13, 14],
    ];
    if (decoder.inPlace) {
      const slots = new KvSlots(layout, 2);
      slots.reserve(2, 16);
      slots.add();
      slots.add();
      const seq = 8;
      const ids = new BigInt64Array(2 * seq);
      prompts.forEach((p, b) => {
        ids.set(BigInt64Array.from(p, BigInt), b * seq);
      });
      const prefill = new Float32Array(2 * seq * d.vocab);
      await decoder.stepInPlace({
        batch: 2,
        seq,
        inputIds: ids,
        pastLens: Int32Array.of(0, 0),
        newLens: Int32Array.of(8, 3),
        kv: slots.rows(0, 2),
        capacity: slots.capacity,
        logitsToKeep: 0,
        logits: prefill,
      });
      const next = new Float32Array(2 * d.vocab);
      await decoder.stepInPlace({
        batch: 2,
        seq: 1,
        inputIds: BigInt64Array.of(4n, 6n),
        pastLens: Int32Array.of(8, 3),
        newLens: Int32Array.of(1, 1),
        kv: slots.rows(0, 2),
        capacity: slots.capacity,
        logitsToKeep: 1,
        logits: next,
      });
      // Padding positions of the short row are garbage by design: compare its real ones.
      return [prefill.subarray(0, (8 + 3) * d.vocab), next];
    }
    const outs: Float32Array[] = [];
    for (const p of prompts) {
      const first = await decoder.step({
        batch: 1,
        seq: p.length,
        past: 0,
        inputIds: BigInt64Array.from(p, BigInt),
        attentionMask: new BigInt64Array(p.length).fill(1n),
        positionIds: BigInt64Array.from(p, (_, i) => BigInt(i)),
        pastKv: Array.from({ length: 2 * d.layers }, () => new Float32Array(0)),
      });
      const second = await decoder.step({
        batch: 1,
        seq: 1,
        past: p.length,
        inputIds: BigInt64Array.of(4n),
        attentionMask: new BigInt64Array(p.length + 1).fill(1n),
        positionIds: BigInt64Array.of(BigInt(p.length)),
        pastKv: first.presentKv,
      });
      outs.push(first.logits, second.logits);
    }
    return outs;
  } finally {
    await decoder.release();
  }
}

function maxAbsDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  a.forEach((x, k) => {
    for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - b[k][i]));
  });
  return m;
}

describe('execution providers of the decoder', () => {
  it.skipIf(listSupportedBackends().some((b) => b.name === 'cuda' && b.bundled))(
    'a provider asked for by name that cannot start here is a ConfigError naming it, not a CPU session',
    async () => {
      const err = await OnnxDecoder.load(exportDecoderExternal(config, weights), layout, 'cuda').catch(
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      // onnxruntime's reason (…: Failed to load shared library), without a source location.
      const { message } = err as ConfigError;
      expect(message).toMatch(/^execution provider 'cuda' could not start a session here: .*Failed to load/);
      expect(message).not.toMatch(/\.cc:\d+/);
      expect((err as ConfigError).fields).toEqual({ provider: 'cuda' });
    },
  );
});

describe.skipIf(noAdapter !== null)('the decoder on WebGPU', () => {
  for (const attention of DECODER_ATTENTIONS) {
    it(`${attention} graph: batched uneven prefill and a decode step match the CPU provider`, async () => {
      const cpu = await twoSteps(attention, 'cpu');
      const gpu = await twoSteps(attention, 'webgpu');
      expect(maxAbsDiff(cpu, gpu)).toBeLessThan(1e-4);
    });
  }
});

describe.skipIf(noAdapter !== null)('a rollout engine on WebGPU', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-webgpu-'));
  const dir = join(root, 'small');
  initRandomModel({ preset: 'small', outDir: dir, seed: 5 });
  const models: RolloutModel[] = [];
  afterAll(async () => {
    await Promise.all(models.map((m) => m.close()));
    rmSync(root, { recursive: true, force: true });
  });

  it('generates what the CPU engine does, says which provider it uses, and takes weight updates', async () => {
    const registry = new Registry();
    const gpu = await RolloutModel.load({ modelDir: dir, provider: 'webgpu', registry });
    const cpu = await RolloutModel.load({ modelDir: dir, provider: 'cpu' });
    models.push(gpu, cpu);
    expect(gpu.provider).toBe('webgpu');
    expect(await registry.metrics()).toContain(
      'clawray_rollout_execution_provider{provider="webgpu",kv_cache="device"} 1',
    );

    const prompts = [
      [5, 6, 7, 8, 9, 10],
      [20, 21],
      [30, 31, 32, 33],
    ];
    const run = (m: RolloutModel) =>
      Promise.all(
        prompts.map((p) =>
          m.generate({ promptTokenIds: p, maxTokens: 12, temperature: 0, stopTokenIds: [] }),
        ),
      );
    const [a, b] = await Promise.all([run(gpu), run(cpu)]);
    expect(a.map((r) => r.tokenIds)).toEqual(b.map((r) => r.tokenIds));
    a.forEach((r, i) => {
      r.logprobs.forEach((lp, j) => {
        expect(Math.abs(lp - b[i].logprobs[j])).toBeLessThan(1e-3);
      });
    });

    const name = 'model.layers.0.mlp.down_proj.weight';
    const scaled = cpu
      .readWeights()
      .get(name)!
      .map((v) => v * 40);
    await gpu.updateWeights(2, new Map([[name, scaled]]));
    await cpu.updateWeights(2, new Map([[name, scaled]]));
    expect(gpu.provider).toBe('webgpu');
    const [c, e] = await Promise.all([run(gpu), run(cpu)]);
    expect(c.map((r) => r.tokenIds)).toEqual(e.map((r) => r.tokenIds));
    expect(c.map((r) => r.weightVersion)).toEqual([2, 2, 2]);
    expect(c.map((r) => r.logprobs)).not.toEqual(a.map((r) => r.logprobs));
  });
});
