/**
 * `npm run bench -- rollout`: three figure sets, one JSON line each.
 * - `small`: the rollout engine on a random `small` model: aggregate tokens/s
 *   with 16 concurrent requests vs 1, KV-cache decode vs full recompute at 256 tokens, the
 *   graph's decode step at batch 1 and 16 (and at batch 16 over a 2,000-slot cache), time to
 *   first token, and the duration of a full weight swap.
 * - `sampling`: one draw from a 151 936-token row (Qwen3's vocabulary) at temperature 0.6,
 *   plain vs top_p / top_k / top_logprobs, and what the full sort they replaced cost.
 * - `qwen3-0.6b`: a Qwen3-0.6B-shaped checkpoint (random bf16 weights, written at bench time):
 *   load seconds, decode tokens/s at batch 1 and 16, the time to the first tokens of 1 and 16
 *   concurrent requests, and the memory-bandwidth ceiling (bytes of weights read per token ÷
 *   memcpy bandwidth measured in the same run). Minutes and ~8 GB.
 * `CLAWRAY_BENCH_ROLLOUT=small,sampling` picks sets (default all three; `small-standard` is the
 * `small` set on the standard graph). `CLAWRAY_BENCH_ATTENTION=slots|standard|gqa` picks the
 * graph of the `small` and `qwen3-0.6b` sets (default the engine's), `CLAWRAY_BENCH_PROVIDER=auto|cuda|webgpu|cpu`
 * their execution provider (default auto), `CLAWRAY_BENCH_THREADS` / `CLAWRAY_BENCH_SPIN=0` onnxruntime's
 * intra-op threads and spinning.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { EXECUTION_PROVIDERS, type ExecutionProvider } from '../actors/models/execution-provider.js';
import { dims, modelConfigSchema, PRESETS } from '../actors/models/model-config.js';
import { initRandomModel } from '../actors/models/model-init.js';
import { exportDecoderExternal } from '../actors/models/onnx-export.js';
import { DECODER_ATTENTIONS, type DecoderAttention } from '../actors/models/onnx-graph.js';
import { SAFETENSORS_FILE, writeSafetensors } from '../actors/models/safetensors.js';
import { weightSpecs } from '../actors/models/weight-names.js';
import { KvSlots } from '../actors/rollout/kv-batch.js';
import { OnnxDecoder } from '../actors/rollout/onnx-decoder.js';
import { RolloutModel } from '../actors/rollout/rollout-model.js';
import type { StepTimes } from '../actors/rollout/runner.js';
import {
  logSoftmax,
  RowBuffers,
  type SamplingParams,
  sample,
  sampleLogprobs,
  seededRandom,
  topLogprobs,
} from '../actors/rollout/sampler.js';
import { median } from './grpc-baseline.js';
import { memcpyBytesPerSecond } from './memcpy.js';

const round = (x: number, digits = 1) => Math.round(x * 10 ** digits) / 10 ** digits;
const log = (line: string) => process.stderr.write(`${line}\n`);

function prompt(i: number, length: number): number[] {
  return Array.from({ length }, (_, j) => 20 + ((i * 37 + j * 11) % 300));
}

/** Rounds of the 1-vs-16 throughput runs (one run is a third of a second: noisy alone). */
const THROUGHPUT_ROUNDS = 5;

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

/**
 * A decoder of the model's own weights and the engine's graph kind, for measuring the graph
 * without the engine.
 */
async function withDecoder<T>(model: RolloutModel, fn: (decoder: OnnxDecoder) => Promise<T>): Promise<T> {
  const { config, dims } = model.modelDir;
  const weights = model.readWeights();
  const layout = { layers: dims.layers, kvHeads: dims.kvHeads, headDim: dims.headDim, vocab: dims.vocab };
  // The engine's own graph kind and weight storage (external data, as the engine loads it).
  const attention = model.engine.decoderKind as DecoderAttention;
  const decoder = await OnnxDecoder.load(
    exportDecoderExternal(config, weights, { attention }),
    layout,
    model.provider,
  );
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
    if (decoder.inPlace) {
      const { vocab } = decoder.layout;
      const run = (slots: KvSlots, ids: number[], seqlen: number) =>
        decoder.stepInPlace({
          batch: 1,
          seq: ids.length,
          inputIds: BigInt64Array.from(ids, BigInt),
          pastLens: Int32Array.of(seqlen - ids.length),
          newLens: Int32Array.of(ids.length),
          kv: slots.rows(0, 1),
          capacity: slots.capacity,
          logitsToKeep: ids.length === 1 ? 1 : 0,
          logits: new Float32Array(ids.length * vocab),
        });
      const cache = new KvSlots(decoder.layout, 1);
      cache.reserve(1, length + 1);
      cache.add();
      await run(cache, tokens.slice(0, length), length);
      const fresh = new KvSlots(decoder.layout, 1);
      fresh.reserve(1, length + 1);
      fresh.add();
      return {
        // Rewrites slot `length` each time: the same step, repeated.
        cachedMs: await meanMs(() => run(cache, [tokens[length]], length + 1), 30),
        recomputeMs: await meanMs(() => run(fresh, tokens, length + 1), 8),
      };
    }
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
 * Mean ms of one decode step of `batch` sequences over a cache of `past` slots on the engine's
 * graph kind (the graph's per-step cost, nothing of the engine's).
 */
async function decodeStepMs(model: RolloutModel, batch: number, past: number, reps: number): Promise<number> {
  const { layers, kvHeads, headDim } = model.modelDir.dims;
  return withDecoder(model, async (decoder) => {
    if (decoder.inPlace) {
      const slots = new KvSlots(decoder.layout, batch);
      slots.reserve(batch, past + 1);
      for (let b = 0; b < batch; b++) slots.add(past);
      for (const t of slots.kv) t.fill(0.01);
      const logits = new Float32Array(batch * decoder.layout.vocab);
      return meanMs(
        () =>
          decoder.stepInPlace({
            batch,
            seq: 1,
            inputIds: new BigInt64Array(batch).fill(5n),
            pastLens: new Int32Array(batch).fill(past),
            newLens: new Int32Array(batch).fill(1),
            kv: slots.rows(0, batch),
            capacity: slots.capacity,
            logitsToKeep: 1,
            logits,
          }),
        reps,
      );
    }
    const kv = Array.from({ length: layers * 2 }, () =>
      new Float32Array(batch * kvHeads * past * headDim).fill(0.01),
    );
    return meanMs(
      () =>
        decoder.step({
          batch,
          seq: 1,
          past,
          inputIds: new BigInt64Array(batch).fill(5n),
          attentionMask: new BigInt64Array(batch * (past + 1)).fill(1n),
          positionIds: new BigInt64Array(batch).fill(BigInt(past)),
          pastKv: kv,
        }),
      reps,
    );
  });
}

async function smallPreset(attention: DecoderAttention | undefined): Promise<Record<string, unknown>> {
  const root = mkdtempSync(join(tmpdir(), 'clawray-bench-rollout-'));
  const dir = join(root, 'small');
  initRandomModel({ preset: 'small', outDir: dir, seed: 1 });
  // No end-of-sequence ids: every request runs to maxTokens, so runs are comparable.
  const model = await RolloutModel.load({
    modelDir: dir,
    maxBatchSize: 16,
    attention,
    provider: benchProvider(),
    ...threadOptions(),
  });
  (model.modelDir.eosTokenIds as number[]).length = 0;
  try {
    log('warming up');
    await tokensPerSecond(model, 4, 16);

    log(`1 vs 16 concurrent requests, 128 tokens each (${THROUGHPUT_ROUNDS} alternating rounds)`);
    const timesBefore = { ...model.engine.stepTimes };
    const rounds: { single: number; sixteen: number }[] = [];
    for (let r = 0; r < THROUGHPUT_ROUNDS; r++)
      rounds.push({
        single: await tokensPerSecond(model, 1, 128),
        sixteen: await tokensPerSecond(model, 16, 128),
      });
    const single = median(rounds.map((r) => r.single));
    const sixteen = median(rounds.map((r) => r.sixteen));
    const split = stepSplit(timesBefore, model.engine.stepTimes);

    // The graph-only measurements run a host-cache decoder of the engine's graph: with the cache
    // on the device there is none, and the step split above says where a step's time goes.
    const device = model.kvCache === 'device';
    let cachedMs = Number.NaN;
    let recomputeMs = Number.NaN;
    const ceiling = { step1Ms: Number.NaN, step16Ms: Number.NaN };
    let longStepMs = Number.NaN;
    if (!device) {
      log('KV-cache decode vs full recompute at 256 tokens');
      ({ cachedMs, recomputeMs } = await kvVersusRecompute(model, 256));
      log('decode step cost, batch 1 vs 16 (the ceiling of batching here)');
      ceiling.step1Ms = await decodeStepMs(model, 1, 96, 30);
      ceiling.step16Ms = await decodeStepMs(model, 16, 96, 15);
      log('decode step cost at batch 16 over 2,000 cached slots');
      longStepMs = await decodeStepMs(model, 16, 2000, 5);
    }

    log('time to first token (64-token prompt, idle engine)');
    const ttft: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      await model.generate({ promptTokenIds: prompt(i, 64), maxTokens: 1 });
      ttft.push(performance.now() - t);
    }

    log('weight swap (all tensors)');
    const swapStart = performance.now();
    await model.updateWeights(1, model.readWeights());
    const swapMs = performance.now() - swapStart;

    // Each round's two runs see the same load on the machine: the median of their ratios.
    const batchSpeedup = median(rounds.map((r) => r.sixteen / r.single));
    const ceilingSpeedup = (16 * ceiling.step1Ms) / ceiling.step16Ms;
    const kvSpeedup = recomputeMs / cachedMs;
    return {
      bench: 'rollout',
      preset: 'small',
      provider: model.provider,
      attention: model.engine.decoderKind,
      kvCache: model.kvCache,
      ...threadOptions(),
      tokensPerSecond1: round(single),
      ...split,
      tokensPerSecond16: round(sixteen),
      concurrencySpeedup: round(batchSpeedup, 2),
      decodeStepMsBatch1: round(ceiling.step1Ms, 2),
      decodeStepMsBatch16: round(ceiling.step16Ms, 2),
      decodeStepMsBatch16At2000: round(longStepMs, 2),
      batchingCeiling: round(ceilingSpeedup, 2),
      engineShareOfCeiling: round(batchSpeedup / ceilingSpeedup, 2),
      kvDecodeMsPerToken: round(cachedMs, 2),
      recomputeMsPerToken: round(recomputeMs, 2),
      kvCacheSpeedup: round(kvSpeedup, 2),
      timeToFirstTokenMs: round(ttft.sort((a, b) => a - b)[2], 1),
      weightSwapMs: round(swapMs, 0),
      targets: {
        concurrencySpeedup: { min: 6, met: batchSpeedup >= 6 },
        kvCacheSpeedup: { min: 5, met: device ? null : kvSpeedup >= 5 },
      },
      method: {
        throughput: `128 sampled tokens per request after a 32-token prompt; aggregate generated tokens / wall time; median of ${THROUGHPUT_ROUNDS} rounds of one run each (the speedup: median of the rounds' ratios)`,
        kvCache:
          'one decode step over a 256-slot cache vs a full 257-token forward (what each token costs without a cache)',
        ttft: 'median of 5 one-token generations from 64-token prompts',
        batchingCeiling:
          '16 × (decode step, batch 1) / (decode step, batch 16) at a 96-slot cache: the most batching can give on this machine',
        longContext: 'one decode step of 16 sequences over 2,000 cached slots each (125 MiB of cache)',
        stepSplit:
          'device runner only: per prefill/decode call during the throughput rounds, ms inside onnxruntime runs (deviceMsPerStep: kernels and their dispatch) and the rest of the call as the engine saw it (hostMsPerStep: thread hop, feeds, logits read back); the graph-only figures (kvCache, ceiling, longContext) need a host cache and are null there',
      },
      machine: { cpus: cpus().length, node: process.version },
    };
  } finally {
    await model.close();
    rmSync(root, { recursive: true, force: true });
  }
}

/** The draw the sampler made before partial selection: a stable sort of the whole row. */
function fullSortTopP(logits: Float32Array, params: SamplingParams, random: () => number): number {
  const logp = logSoftmax(logits, params.temperature);
  const order = Array.from(logp.keys()).sort((a, b) => logp[b] - logp[a]);
  let mass = 0;
  let keep = 0;
  while (keep < order.length && (keep === 0 || mass < params.topP)) mass += Math.exp(logp[order[keep++]]);
  let r = random() * mass;
  for (let j = 0; j < keep; j++) {
    r -= Math.exp(logp[order[j]]);
    if (r <= 0) return order[j];
  }
  return order[keep - 1];
}

/** Rows of `vocab` logits: standard normal × `scale` (3: a peaked, LM-like row; 1: flat). */
function logitRows(vocab: number, scale: number, count: number, seed: number): Float32Array[] {
  const random = seededRandom(seed);
  return Array.from({ length: count }, () => {
    const row = new Float32Array(vocab);
    for (let i = 0; i < vocab; i++)
      row[i] = scale * Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
    return row;
  });
}

/**
 * Median ms per call of each variant over the rows and reps, the variants interleaved so that
 * load from other processes hits all alike (the median shrugs off the calls it lands on).
 */
function timeVariants(
  rows: Float32Array[],
  variants: Record<string, (row: Float32Array) => unknown>,
  reps: number,
): Record<string, number> {
  const times: Record<string, number[]> = {};
  for (const name of Object.keys(variants)) times[name] = [];
  for (const row of rows) for (const fn of Object.values(variants)) fn(row); // warm-up
  const entries = Object.entries(variants);
  for (let rep = 0; rep < reps; rep++) {
    for (const [r, row] of rows.entries()) {
      // Each variant goes first in turn: the one after a garbage collection pays for it.
      for (let v = 0; v < entries.length; v++) {
        const [name, fn] = entries[(v + r + rep) % entries.length];
        const t = performance.now();
        fn(row);
        times[name].push(performance.now() - t);
      }
    }
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, median(v)]));
}

async function samplingCost(): Promise<Record<string, unknown>> {
  const vocab = 151_936;
  const temperature = 0.6;
  const random = seededRandom(1);
  const buffers = new RowBuffers();
  // What the engine runs: one row's buffers reused (a plain draw walks their weights).
  const engineSample = (row: Float32Array, topP: number) =>
    sampleLogprobs(logSoftmax(row, temperature, buffers), { temperature, topP, topK: 0 }, random, buffers);
  const result: Record<string, unknown> = { bench: 'rollout', set: 'sampling', vocab, temperature };
  let worstRatio = 0;
  for (const [kind, scale] of [
    ['peaked', 3],
    ['flat', 1],
  ] as const) {
    log(`sampling on ${kind} rows`);
    const rows = logitRows(vocab, scale, 6, scale * 17);
    const nucleus = (row: Float32Array) => {
      const logp = logSoftmax(row, temperature);
      const sorted = Float64Array.from(logp).sort().reverse();
      let mass = 0;
      let n = 0;
      while (mass < 0.95) mass += Math.exp(sorted[n++]);
      return n;
    };
    const ms = timeVariants(
      rows,
      {
        plain: (row) => sample(row, { temperature, topP: 1, topK: 0 }, random),
        plainRowBuffers: (row) => engineSample(row, 1),
        topP: (row) => sample(row, { temperature, topP: 0.95, topK: 0 }, random),
        topPRowBuffers: (row) => engineSample(row, 0.95),
        topKTopP: (row) => sample(row, { temperature, topP: 0.95, topK: 20 }, random),
        topLogprobs5: (row) => topLogprobs(row, 5, temperature),
      },
      8,
    );
    const sortMs = timeVariants(
      rows.slice(0, 2),
      {
        fullSort: (row) => fullSortTopP(row, { temperature, topP: 0.95, topK: 0 }, random),
      },
      1,
    ).fullSort;
    const ratio = ms.topP / ms.plain;
    worstRatio = Math.max(worstRatio, kind === 'peaked' ? ratio : 0);
    result[kind] = {
      logitStd: scale,
      nucleusTokensAtTopP095: rows.map(nucleus),
      plainMs: round(ms.plain, 3),
      plainRowBuffersMs: round(ms.plainRowBuffers, 3),
      topP095Ms: round(ms.topP, 3),
      topP095RowBuffersMs: round(ms.topPRowBuffers, 3),
      topK20TopP095Ms: round(ms.topKTopP, 3),
      topLogprobs5Ms: round(ms.topLogprobs5, 3),
      fullSortTopPMs: round(sortMs, 2),
      topPOverPlain: round(ratio, 2),
      topPOverPlainRowBuffers: round(ms.topPRowBuffers / ms.plainRowBuffers, 2),
      speedupOverFullSort: round(sortMs / ms.topP, 1),
    };
  }
  result.targets = { topPOverPlain: { max: 1.2, on: 'peaked', met: worstRatio <= 1.2 } };
  result.method =
    'median time of one sample() call (log-softmax included) over 6 rows × 8 reps, variants interleaved in rotating order; peaked rows: N(0, 3²) logits (a nucleus of a few tokens at T 0.6, as a real LM row), flat rows: N(0, 1) (tens of thousands of tokens: the worst case, where the nucleus itself must be ordered); fullSort: the previous implementation (a stable sort of the whole row)';
  return result;
}

/** The Qwen3-0.6B config (the real values; weights random). */
function qwen3Config(): Record<string, unknown> {
  const preset = (PRESETS as Record<string, unknown>)['qwen3-0.6b'];
  if (preset) return preset as Record<string, unknown>;
  return {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    vocab_size: 151_936,
    hidden_size: 1024,
    intermediate_size: 3072,
    num_hidden_layers: 28,
    num_attention_heads: 16,
    num_key_value_heads: 8,
    head_dim: 128,
    rms_norm_eps: 1e-6,
    rope_theta: 1_000_000,
    max_position_embeddings: 40_960,
    tie_word_embeddings: true,
    torch_dtype: 'bfloat16',
  };
}

/**
 * A Hub-layout directory of the 0.6B shape: the tokenizer files of a random `tiny` model (ids
 * all below the vocabulary) with the 0.6B config.json and random bf16 weights in place of its
 * own. Uniform values of the init's scale: fast to draw, and the figures do not depend on them.
 */
function writeQwen3Dir(dir: string): { parameters: number; embedding: number } {
  initRandomModel({ preset: 'tiny', outDir: dir, seed: 1 });
  const tinyConfig = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const raw = {
    ...qwen3Config(),
    bos_token_id: tinyConfig.bos_token_id,
    eos_token_id: tinyConfig.eos_token_id,
  };
  writeFileSync(join(dir, 'config.json'), `${JSON.stringify(raw, null, 2)}\n`);
  const d = dims(modelConfigSchema.parse(raw));
  let state = 0x9e3779b9;
  const tensors = new Map<string, { shape: number[]; data: Float32Array }>();
  let parameters = 0;
  for (const spec of weightSpecs(d)) {
    const n = spec.shape.reduce((a, b) => a * b, 1);
    parameters += n;
    const data = new Float32Array(n);
    if (spec.init === 'ones') data.fill(1);
    else if (spec.init === 'normal') {
      for (let i = 0; i < n; i++) {
        state ^= state << 13;
        state ^= state >>> 17;
        state ^= state << 5;
        data[i] = ((state >>> 0) / 2 ** 32 - 0.5) * 0.069; // std 0.02
      }
    }
    tensors.set(spec.name, { shape: spec.shape, data });
  }
  writeSafetensors(join(dir, SAFETENSORS_FILE), tensors, { dtype: 'BF16', metadata: { format: 'pt' } });
  return { parameters, embedding: d.vocab * d.hidden };
}

/**
 * Decode tokens/s at `batch`: (time for 1 + n tokens) − (time for 1 token), so prefill is left
 * out; and that time for 1 token: until every one of the `batch` requests has its first.
 */
async function decodeTokensPerSecond(
  model: RolloutModel,
  batch: number,
  n: number,
): Promise<{ tokensPerSecond: number; firstTokenSeconds: number }> {
  const run = async (maxTokens: number) => {
    const t = performance.now();
    await Promise.all(
      Array.from({ length: batch }, (_, i) =>
        model.generate({
          promptTokenIds: prompt(i, 16),
          maxTokens,
          temperature: 0.6,
          topP: 0.95,
          topK: 20,
          seed: i,
          stopTokenIds: [],
        }),
      ),
    );
    return (performance.now() - t) / 1000;
  };
  // The session's first run at a shape pays onnxruntime's allocations: not a decode cost.
  await run(1);
  const first = await run(1);
  const more = await run(1 + n);
  // A difference not above zero says the runs' noise exceeded the decode itself: no figure.
  const tokensPerSecond = more > first ? (batch * n) / (more - first) : Number.NaN;
  return { tokensPerSecond, firstTokenSeconds: first };
}

async function qwen3Shape(): Promise<Record<string, unknown>> {
  const result: Record<string, unknown> = { bench: 'rollout', set: 'qwen3-0.6b' };
  log('memcpy bandwidth (1 GiB Buffer.copy)');
  const copyRate = memcpyBytesPerSecond();
  const root = mkdtempSync(join(tmpdir(), 'clawray-bench-qwen3-'));
  let model: RolloutModel | undefined;
  try {
    log('writing a Qwen3-0.6B-shaped checkpoint (random bf16 weights)');
    const written = performance.now();
    const { parameters, embedding } = writeQwen3Dir(root);
    const writeSeconds = (performance.now() - written) / 1000;
    log('loading it');
    const loadStart = performance.now();
    model = await RolloutModel.load({
      modelDir: root,
      maxBatchSize: 16,
      attention: benchAttention(),
      provider: benchProvider(),
    });
    const loadSeconds = (performance.now() - loadStart) / 1000;
    (model.modelDir.eosTokenIds as number[]).length = 0;
    // A decode step reads every weight once (float32 in the engine), the tied embedding as the LM
    // head; the input embedding is one row per token, left out.
    const bytesPerToken = 4 * parameters;
    const bound1 = copyRate / bytesPerToken;
    const timesBefore = { ...model.engine.stepTimes };
    log('decode at batch 1');
    const one = await decodeTokensPerSecond(model, 1, 6);
    const tps1 = one.tokensPerSecond;
    log('decode at batch 16');
    const sixteen = await decodeTokensPerSecond(model, 16, 8);
    const tps16 = sixteen.tokensPerSecond;
    Object.assign(result, {
      provider: model.provider,
      attention: model.engine.decoderKind,
      kvCache: model.kvCache,
      ...stepSplit(timesBefore, model.engine.stepTimes),
      parameters,
      embeddingParameters: embedding,
      checkpointWriteSeconds: round(writeSeconds, 1),
      loadSeconds: round(loadSeconds, 1),
      tokensPerSecond1: round(tps1, 2),
      tokensPerSecond16: round(tps16, 2),
      firstTokenSeconds1: round(one.firstTokenSeconds, 2),
      firstTokenSeconds16: round(sixteen.firstTokenSeconds, 2),
      weightBytesPerToken: bytesPerToken,
      memcpyGiBPerSecond: round(copyRate / 2 ** 30, 2),
      bandwidthBoundTokensPerSecond1: round(bound1, 2),
      shareOfBound1: round(tps1 / bound1, 2),
      method:
        'decode tokens/s = tokens of (1 + n)-token generations − 1-token ones (16-token prompts; T 0.6, top_p 0.95, top_k 20) over the time difference; firstTokenSeconds16 = the 1-token generation of 16 concurrent requests (the first prefilled alone, the other 15 in one grouped step); bound = memcpy bytes/s (1 GiB Buffer.copy, best of 3) ÷ float32 weight bytes read per token (batch 1; a batch of 16 reads them once per step)',
    });
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
  } finally {
    await model?.close();
    rmSync(root, { recursive: true, force: true });
  }
  result.machine = { cpus: cpus().length, memoryGiB: round(totalmem() / 2 ** 30, 1), node: process.version };
  return result;
}

/**
 * Mean ms per step inside the provider's runs and around them, between two readings of a
 * runner's step times; nothing where the runner cannot tell (a host cache).
 */
function stepSplit(
  before: Partial<StepTimes>,
  after: StepTimes | undefined,
): { deviceMsPerStep?: number; hostMsPerStep?: number } {
  if (!after) return {};
  const steps = after.steps - (before.steps ?? 0);
  if (steps <= 0) return {};
  return {
    deviceMsPerStep: round((after.deviceMs - (before.deviceMs ?? 0)) / steps, 2),
    hostMsPerStep: round((after.hostMs - (before.hostMs ?? 0)) / steps, 2),
  };
}

/** CLAWRAY_BENCH_ATTENTION picks the graph of the `small` and `qwen3-0.6b` sets (default: the engine's default). */
function benchAttention(): DecoderAttention | undefined {
  const v = process.env.CLAWRAY_BENCH_ATTENTION;
  if (v === undefined || v === '') return undefined;
  if (!DECODER_ATTENTIONS.includes(v as DecoderAttention))
    throw new Error(`CLAWRAY_BENCH_ATTENTION: one of ${DECODER_ATTENTIONS.join(', ')}, got '${v}'`);
  return v as DecoderAttention;
}

/** CLAWRAY_BENCH_PROVIDER picks the engines' execution provider (default auto, the engine's). */
function benchProvider(): ExecutionProvider | 'auto' {
  const v = process.env.CLAWRAY_BENCH_PROVIDER;
  if (v === undefined || v === '') return 'auto';
  const known = ['auto', ...EXECUTION_PROVIDERS];
  if (!known.includes(v)) throw new Error(`CLAWRAY_BENCH_PROVIDER: one of ${known.join(', ')}, got '${v}'`);
  return v as ExecutionProvider | 'auto';
}

/** CLAWRAY_BENCH_THREADS / CLAWRAY_BENCH_SPIN set onnxruntime's intra-op threads and spinning. */
function threadOptions(): { intraOpNumThreads?: number; allowSpinning?: boolean } {
  const threads = process.env.CLAWRAY_BENCH_THREADS;
  const spin = process.env.CLAWRAY_BENCH_SPIN;
  return {
    ...(threads ? { intraOpNumThreads: Number(threads) } : {}),
    ...(spin ? { allowSpinning: spin !== '0' } : {}),
  };
}

export async function runRolloutBench(): Promise<Record<string, unknown>[]> {
  const sets = (process.env.CLAWRAY_BENCH_ROLLOUT ?? 'small,sampling,qwen3-0.6b').split(',');
  const known: Record<string, () => Promise<Record<string, unknown>>> = {
    small: async () => ({ set: 'small', ...(await smallPreset(benchAttention())) }),
    'small-standard': async () => ({ set: 'small-standard', ...(await smallPreset('standard')) }),
    sampling: samplingCost,
    'qwen3-0.6b': qwen3Shape,
  };
  const out: Record<string, unknown>[] = [];
  for (const name of sets) {
    const run = known[name.trim()];
    if (!run)
      throw new Error(
        `CLAWRAY_BENCH_ROLLOUT: unknown set '${name}' (one of: ${Object.keys(known).join(', ')})`,
      );
    out.push(await run());
  }
  return out;
}
