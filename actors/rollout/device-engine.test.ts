/**
 * A rollout model on WebGPU with its KV cache in device memory (DeviceRunner) against the same
 * model on the CPU with a host cache: the same tokens and logprobs (≤ 1e-4) for batched uneven
 * prompts, chunked prefill, aborts, both swap modes and LoRA and full weight updates. On Mesa's
 * lavapipe here and in CI; skipped, with a warning, where no WebGPU adapter answers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { initRandomModel } from '../models/model-init.js';
import type { WeightMap } from '../models/weight-names.js';
import { type GenerateRequest, type GenerateResult, GenerationAbortedError } from './rollout-engine.js';
import { RolloutModel, type RolloutModelOptions } from './rollout-model.js';
import { webgpuUnavailable } from './webgpu-probe.test-support.js';

const noAdapter = await webgpuUnavailable();
if (noAdapter) console.warn(`WebGPU cases skipped: ${noAdapter}`);

const PROMPTS = [
  [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  [20, 21],
  [30, 31, 32, 33],
];

function expectSame(a: GenerateResult[], b: GenerateResult[]): void {
  expect(a.map((r) => r.tokenIds)).toEqual(b.map((r) => r.tokenIds));
  expect(a.map((r) => r.weightVersion)).toEqual(b.map((r) => r.weightVersion));
  a.forEach((r, i) => {
    r.logprobs.forEach((lp, j) => {
      expect(Math.abs(lp - b[i].logprobs[j])).toBeLessThan(1e-4);
    });
  });
}

describe.skipIf(noAdapter !== null)('a rollout model with its KV cache on the device (WebGPU)', () => {
  const root = mkdtempSync(join(tmpdir(), 'clawray-device-engine-'));
  const dir = join(root, 'tiny');
  initRandomModel({ preset: 'tiny', outDir: dir, seed: 21 });
  const models: RolloutModel[] = [];
  afterAll(async () => {
    await Promise.all(models.map((m) => m.close()));
    rmSync(root, { recursive: true, force: true });
  });
  const pair = async (o: Partial<RolloutModelOptions> = {}) => {
    const registry = new Registry();
    const gpu = await RolloutModel.load({ modelDir: dir, provider: 'webgpu', registry, ...o });
    const cpu = await RolloutModel.load({ modelDir: dir, provider: 'cpu', ...o });
    models.push(gpu, cpu);
    return { gpu, cpu, registry };
  };
  const run = (m: RolloutModel, extra: Partial<GenerateRequest> = {}) =>
    Promise.all(
      PROMPTS.map((p, i) =>
        m.generate({
          promptTokenIds: p,
          maxTokens: 10,
          temperature: 0.8,
          seed: 7 + i,
          stopTokenIds: [],
          ...extra,
        }),
      ),
    );

  it('batches uneven prompts, prefills in chunks and says where its cache is', async () => {
    const { gpu, cpu, registry } = await pair({ prefillChunkTokens: 4 });
    expect(gpu.kvCache).toBe('device');
    expect(gpu.engine.decoderKind).toBe('gqa/device');
    expect(cpu.kvCache).toBe('host');
    expect(await registry.metrics()).toContain(
      'clawray_rollout_execution_provider{provider="webgpu",kv_cache="device"} 1',
    );
    expectSame(await run(gpu), await run(cpu));
    // Teacher scoring on the device runner, chunked too.
    const tokens = [...PROMPTS[0], 1, 2, 3];
    const [a, b] = await Promise.all([
      gpu.computeLogprobs(tokens, 3, 0.7),
      cpu.computeLogprobs(tokens, 3, 0.7),
    ]);
    a.forEach((lp, i) => {
      expect(Math.abs(lp - b[i])).toBeLessThan(1e-4);
    });
  });

  it('drops an aborted request from the batch and finishes the others as the CPU does', async () => {
    const { gpu, cpu } = await pair();
    const abortSecond = async (m: RolloutModel) => {
      const controller = new AbortController();
      let seen = 0;
      const results = await Promise.allSettled(
        PROMPTS.map((p, i) =>
          m.generate({
            promptTokenIds: p,
            maxTokens: 12,
            temperature: 0,
            stopTokenIds: [],
            ...(i === 1
              ? {
                  signal: controller.signal,
                  onToken: () => {
                    if (++seen === 3) controller.abort();
                  },
                }
              : {}),
          }),
        ),
      );
      expect(results[1].status).toBe('rejected');
      expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(GenerationAbortedError);
      return [results[0], results[2]].map((r) => (r as PromiseFulfilledResult<GenerateResult>).value);
    };
    expectSame(await abortSecond(gpu), await abortSecond(cpu));
    expect(gpu.engine.batchSize).toBe(0);
  });

  for (const swapMode of ['finish', 'requeue'] as const) {
    it(`swaps weights mid-generation (${swapMode}) and serves what the CPU serves on the same weights`, async () => {
      const { gpu, cpu } = await pair({ swapMode });
      const name = 'model.layers.0.mlp.down_proj.weight';
      const scaled = cpu
        .readWeights()
        .get(name)!
        .map((v) => v * 30);
      const update = () => new Map([[name, scaled]]);
      const midway = async (m: RolloutModel) => {
        let swap: Promise<void> | undefined;
        const results = await Promise.all(
          PROMPTS.map((p, i) =>
            m.generate({
              promptTokenIds: p,
              maxTokens: 10,
              temperature: 0,
              stopTokenIds: [],
              onToken: () => {
                if (i === 0) swap ??= m.updateWeights(1, update());
              },
            }),
          ),
        );
        await swap;
        return results;
      };
      const [a, b] = await Promise.all([midway(gpu), midway(cpu)]);
      // The first request is admitted alone (the loop starts as it arrives) and its first token
      // asks for the swap, which pauses admission. 'finish': it ends on the weights it started
      // with and the two queued behind it run on the new ones; 'requeue': all run on the new.
      expect(a.map((r) => r.weightVersion)).toEqual(swapMode === 'finish' ? [0, 1, 1] : [1, 1, 1]);
      expectSame(a, b);
      expectSame(await run(gpu), await run(cpu));
    });
  }

  it('takes LoRA adapters (merged on the host, opened on the device) as the CPU does', async () => {
    const { gpu, cpu } = await pair();
    const base = cpu.readWeights();
    const target = 'model.layers.1.self_attn.q_proj.weight';
    const [out, inp] = [cpu.modelDir.dims.heads * cpu.modelDir.dims.headDim, cpu.modelDir.dims.hidden];
    const rank = 2;
    const module = target.slice(0, -'.weight'.length);
    const adapters = (): WeightMap =>
      new Map([
        [`${module}.lora_A.weight`, Float32Array.from({ length: rank * inp }, (_, j) => Math.sin(j) * 0.3)],
        [`${module}.lora_B.weight`, Float32Array.from({ length: out * rank }, (_, j) => Math.cos(j) * 0.3)],
      ]);
    const before = await run(gpu);
    await Promise.all([
      gpu.updateWeights(3, adapters(), { loraScale: 8 }),
      cpu.updateWeights(3, adapters(), { loraScale: 8 }),
    ]);
    expect(base.get(target)).not.toEqual(gpu.readWeights().get(target));
    const after = await run(gpu);
    expectSame(after, await run(cpu));
    expect(after.map((r) => r.weightVersion)).toEqual([3, 3, 3]);
    expect(after.map((r) => r.logprobs)).not.toEqual(before.map((r) => r.logprobs));
  });
});
