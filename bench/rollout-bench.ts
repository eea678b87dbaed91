/**
 * `npm run bench -- rollout`: the rollout engine on a random `small` model (CPU provider):
 * aggregate tokens/s with 16 concurrent requests vs 1, KV-cache decode vs full recompute at
 * 256 tokens, time to first token, and the duration of a full weight swap.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { initRandomModel } from '../actors/models/model-init.js';
import { exportDecoderOnnx } from '../actors/models/onnx-export.js';
import { OnnxDecoder } from '../actors/rollout/onnx-decoder.js';
import { RolloutModel } from '../actors/rollout/rollout-model.js';

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const log = (line: string) => process.stderr.write(`${line}\n`);

function prompt(i: number, length: number): number[] {
  return Array.from({ length }, (_, j) => 20 + ((i * 37 + j * 11) % 300));
}

async function tokensPerSecond(model: RolloutModel, concurrency: number, maxTokens: number): Promise<number> {
  const started = performance.now();
  const results = await Promise.all(
    Array.from({ length: concurrency }, (_, i) =>
      model.generate({ promptTokenIds: prompt(i, 32), maxTokens, temperature: 1, seed: i, stopTokenIds: [] }),
    ),
  );
  const tokens = results.reduce((n, r) => n + r.tokenIds.length, 0);
  return tokens / ((performance.now() - started) / 1000);
}

/** A decoder of the model's own weights, for measuring the graph without the engine. */
async function withDecoder<T>(model: RolloutModel, fn: (decoder: OnnxDecoder) => Promise<T>): Promise<T> {
  const { config, weights, dims } = model.modelDir;
  const layout = { layers: dims.layers, kvHeads: dims.kvHeads, headDim: dims.headDim, vocab: dims.vocab };
  const decoder = await OnnxDecoder.load(exportDecoderOnnx(config, weights), layout, 'cpu');
  try {
    return await fn(decoder);
  } finally {
    await decoder.release();
  }
}

/** Mean time of `fn` over `reps` runs after one warm-up run. */
async function meanMs(fn: () => Promise<unknown>, reps: number): Promise<number> {
  await fn();
  const t = performance.now();
  for (let i = 0; i < reps; i++) await fn();
  return (performance.now() - t) / reps;
}

/**
 * One more token at `length`: a decode step over a cached past of `length` slots, against a
 * forward over all `length + 1` tokens (what generating without a cache costs per token).
 */
async function kvVersusRecompute(
  model: RolloutModel,
  length: number,
): Promise<{ cachedMs: number; recomputeMs: number }> {
  const layers = model.modelDir.dims.layers;
  return withDecoder(model, async (decoder) => {
    const tokens = prompt(7, length + 1);
    const full = (n: number) => ({
      batch: 1,
      seq: n,
      past: 0,
      inputIds: BigInt64Array.from(tokens.slice(0, n), BigInt),
      attentionMask: new BigInt64Array(n).fill(1n),
      positionIds: BigInt64Array.from({ length: n }, (_, i) => BigInt(i)),
      pastKv: Array.from({ length: layers * 2 }, () => new Float32Array(0)),
    });
    const prefill = await decoder.step(full(length));
    const cachedStep = () =>
      decoder.step({
        batch: 1,
        seq: 1,
        past: length,
        inputIds: BigInt64Array.of(BigInt(tokens[length])),
        attentionMask: new BigInt64Array(length + 1).fill(1n),
        positionIds: BigInt64Array.of(BigInt(length)),
        pastKv: prefill.presentKv,
      });
    return {
      cachedMs: await meanMs(cachedStep, 30),
      recomputeMs: await meanMs(() => decoder.step(full(length + 1)), 8),
    };
  });
}

/**
 * The ceiling batching can reach here: one decode step of 16 sequences against 16 steps of
 * one, at the same cache length (the graph's per-step cost, nothing of the engine's).
 */
async function batchingCeiling(
  model: RolloutModel,
  past: number,
): Promise<{ step1Ms: number; step16Ms: number }> {
  const { layers, kvHeads, headDim } = model.modelDir.dims;
  return withDecoder(model, async (decoder) => {
    const step = (batch: number) => {
      const kv = Array.from({ length: layers * 2 }, () =>
        new Float32Array(batch * kvHeads * past * headDim).fill(0.01),
      );
      return () =>
        decoder.step({
          batch,
          seq: 1,
          past,
          inputIds: new BigInt64Array(batch).fill(5n),
          attentionMask: new BigInt64Array(batch * (past + 1)).fill(1n),
          positionIds: new BigInt64Array(batch).fill(BigInt(past)),
          pastKv: kv,
        });
    };
    return { step1Ms: await meanMs(step(1), 30), step16Ms: await meanMs(step(16), 15) };
  });
}

export async function runRolloutBench(): Promise<Record<string, unknown>> {
  const root = mkdtempSync(join(tmpdir(), 'clawray-bench-rollout-'));
  const dir = join(root, 'small');
  initRandomModel({ preset: 'small', outDir: dir, seed: 1 });
  // No end-of-sequence ids: every request runs to maxTokens, so runs are comparable.
  const model = await RolloutModel.load({ modelDir: dir, maxBatchSize: 16 });
  (model.modelDir.eosTokenIds as number[]).length = 0;
  try {
    log('warming up');
    await tokensPerSecond(model, 4, 16);

    log('1 vs 16 concurrent requests, 128 tokens each');
    const single = await tokensPerSecond(model, 1, 128);
    const sixteen = await tokensPerSecond(model, 16, 128);

    log('KV-cache decode vs full recompute at 256 tokens');
    const { cachedMs, recomputeMs } = await kvVersusRecompute(model, 256);

    log('decode step cost, batch 1 vs 16 (the ceiling of batching here)');
    const ceiling = await batchingCeiling(model, 96);

    log('time to first token (64-token prompt, idle engine)');
    const ttft: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      await model.generate({ promptTokenIds: prompt(i, 64), maxTokens: 1 });
      ttft.push(performance.now() - t);
    }

    log('weight swap (all tensors)');
    const swapStart = performance.now();
    await model.updateWeights(1, model.modelDir.weights);
    const swapMs = performance.now() - swapStart;

    const batchSpeedup = sixteen / single;
    const kvSpeedup = recomputeMs / cachedMs;
    return {
      bench: 'rollout',
      preset: 'small',
      provider: model.provider,
      tokensPerSecond1: round(single),
      tokensPerSecond16: round(sixteen),
      concurrencySpeedup: round(batchSpeedup, 2),
      decodeStepMsBatch1: round(ceiling.step1Ms, 2),
      decodeStepMsBatch16: round(ceiling.step16Ms, 2),
      batchingCeiling: round((16 * ceiling.step1Ms) / ceiling.step16Ms, 2),
      kvDecodeMsPerToken: round(cachedMs, 2),
      recomputeMsPerToken: round(recomputeMs, 2),
      kvCacheSpeedup: round(kvSpeedup, 2),
      timeToFirstTokenMs: round(ttft.sort((a, b) => a - b)[2], 1),
      weightSwapMs: round(swapMs, 0),
      targets: {
        concurrencySpeedup: { min: 6, met: batchSpeedup >= 6 },
        kvCacheSpeedup: { min: 5, met: kvSpeedup >= 5 },
      },
      method: {
        throughput:
          '128 sampled tokens per request after a 32-token prompt; aggregate generated tokens / wall time',
        kvCache:
          'one decode step over a 256-slot cache vs a full 257-token forward (what each token costs without a cache)',
        ttft: 'median of 5 one-token generations from 64-token prompts',
        batchingCeiling:
          '16 × (decode step, batch 1) / (decode step, batch 16) at a 96-slot cache: the most batching can give on this machine',
      },
      machine: { cpus: cpus().length, node: process.version },
    };
  } finally {
    await model.close();
    rmSync(root, { recursive: true, force: true });
  }
}
