/**
 * `npm run bench -- train`: training tokens/s of one PolicyTrainer step (RL loss, AdamW) per
 * TensorFlow.js backend available here, on the `tiny` and `small` presets; then, on wasm, LoRA
 * steps at a real size, as a trainer shard runs them there (the frozen base in host memory):
 * Qwen3-0.6B's width and its 151,936-token tied LM head with one of its 28 layers, and the
 * whole model (its activations need gradient checkpointing), one agent-length sample each (500
 * tokens, 60 of them the response, temperature 0.6). `CLAWRAY_BENCH_TRAIN=0.6b` runs only
 * those two lines.
 *
 * Where a WebGPU adapter answers (Dawn over Vulkan; `webgpu` in every line's `backend`, its
 * adapter in `device`), the same on webgpu: tiny and small, then the Qwen3-0.6B width and
 * vocabulary (one layer) and the whole Qwen3-0.6B, LoRA and full fine-tune, each with its model
 * TFLOP/s (6 × parameters × tokens ÷ step time; the GPU target: ≥ 3 on one H200). On a
 * software adapter (lavapipe) those lines say what stops them (its 128 MiB buffer bindings) and
 * the figures measure correctness, not speed. `CLAWRAY_BENCH_TRAIN=webgpu` runs only the webgpu
 * lines.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { dims, PRESETS, type PresetName, parseModelConfig } from '../actors/models/model-config.js';
import { loadModelDir } from '../actors/models/model-dir.js';
import { initRandomModel, randomWeights } from '../actors/models/model-init.js';
import {
  releaseWebgpu,
  selectBackend,
  type TfjsBackendName,
  webgpuLimits,
  webgpuUnavailable,
} from '../actors/models/tfjs-backend.js';
import { TfjsDecoder } from '../actors/models/tfjs-decoder.js';
import { weightSpecs } from '../actors/models/weight-names.js';
import { initLoraAdapters, loraScale, loraTargets } from '../actors/trainer/lora.js';
import { PolicyTrainer, type TrainSample } from '../actors/trainer/policy-trainer.js';

const log = (line: string) => process.stderr.write(`${line}\n`);

function batch(count: number, length: number, response: number): TrainSample[] {
  return Array.from({ length: count }, (_, i) => ({
    tokenIds: Array.from({ length }, (_, j) => (i * 31 + j * 7) % 384),
    responseStart: length - response,
    oldLogprobs: new Array(response).fill(-5.9),
    advantages: i % 2 === 0 ? 1 : -1,
  }));
}

const SHAPES = [
  { samples: 8, tokens: 64 },
  { samples: 16, tokens: 256 },
];

export async function runTrainBench(): Promise<Record<string, unknown>> {
  const root = mkdtempSync(join(tmpdir(), 'clawray-bench-train-'));
  const results: Array<Record<string, unknown>> = [];
  try {
    const only = process.env.CLAWRAY_BENCH_TRAIN;
    const only06b = only === '0.6b';
    const noAdapter = await webgpuUnavailable();
    if (noAdapter) log(`no webgpu lines: ${noAdapter}`);
    const backends = (['wasm', 'cpu', 'webgpu'] as TfjsBackendName[]).filter(
      (b) => (b !== 'webgpu' || noAdapter === null) && (only !== 'webgpu' || b === 'webgpu'),
    );
    for (const preset of (only06b ? [] : ['tiny', 'small']) as PresetName[]) {
      initRandomModel({ preset, outDir: join(root, preset), seed: 1 });
      const model = loadModelDir(join(root, preset));
      for (const wanted of backends) {
        const backend = await selectBackend(wanted);
        if (backend !== wanted) continue;
        log(`${preset} on ${backend}`);
        const decoder = new TfjsDecoder(model.config, model.weights, {
          embedding: backend === 'wasm' ? 'onehot' : 'gather',
        });
        const trainer = new PolicyTrainer(decoder, { method: 'rl', optimizer: { lr: 1e-5 } });
        // The short batch, and on wasm an agent-shaped one (the gui/swe examples' prompts are
        // ~230 tokens, where attention's share of a step grows).
        const shapes = backend === 'cpu' ? SHAPES.slice(0, 1) : SHAPES;
        for (const { samples: count, tokens: length } of shapes) {
          const samples = batch(count, length, 48);
          await trainer.step(samples);
          const steps = preset === 'tiny' && length <= 64 ? 5 : 2;
          const started = performance.now();
          let tokens = 0;
          for (let i = 0; i < steps; i++) tokens += (await trainer.step(samples)).tokens;
          const seconds = (performance.now() - started) / 1000;
          const stepSeconds = seconds / steps;
          results.push({
            preset,
            backend,
            ...(backend === 'webgpu' ? { device: (await selectBackendDevice()) ?? undefined } : {}),
            samples: count,
            tokens: length,
            tokensPerSecond: Math.round((tokens / seconds) * 10) / 10,
            stepSeconds: Math.round(stepSeconds * 1000) / 1000,
            modelTFlops: tflops(decoder.parameterCount, count * length, stepSeconds),
          });
        }
        trainer.dispose();
        decoder.dispose();
      }
    }
    if (only !== 'webgpu' && (await selectBackend('wasm')) === 'wasm') {
      results.push(await realSizeLoraStep(1));
      results.push(await realSizeLoraStep(PRESETS['qwen3-0.6b'].num_hidden_layers));
    }
    if (noAdapter === null && !only06b) {
      for (const layers of [1, PRESETS['qwen3-0.6b'].num_hidden_layers]) {
        for (const lora of [true, false]) results.push(await webgpuRealSizeStep(layers, lora));
      }
    }
  } finally {
    await releaseWebgpu();
    rmSync(root, { recursive: true, force: true });
  }
  return {
    bench: 'train',
    results,
    method:
      'RL (PPO clip) steps with AdamW on `samples` samples of `tokens` tokens (48 response tokens each; the qwen3-0.6b lines: 60), after one warm-up step; modelTFlops: 6 × parameters × tokens ÷ step time; peakRssMiB: the bench process’s VmHWM after that line; webgpu lines on a software adapter (lavapipe) measure correctness, not speed',
    machine: { cpus: cpus().length, node: process.version },
  };
}

/** Model TFLOP/s of a step: 6 × parameters × tokens ÷ its time (the measure). */
function tflops(parameters: number, tokens: number, seconds: number): number {
  return Number(((6 * parameters * tokens) / seconds / 1e12).toPrecision(3));
}

let webgpuDevice: string | undefined;
/** The WebGPU adapter the webgpu lines ran on (from the trainer's own choice). */
async function selectBackendDevice(): Promise<string | undefined> {
  if (webgpuDevice === undefined) {
    const { chooseBackend } = await import('../actors/models/tfjs-backend.js');
    webgpuDevice = (await chooseBackend('webgpu', { holdsGpu: true })).device;
  }
  return webgpuDevice;
}

/**
 * One step of a 500-token sample (60 response tokens, T 0.6) through Qwen3-0.6B's width and
 * vocabulary with `layers` of its layers on webgpu, LoRA or full fine-tune, everything resident
 * on the device (AdamW too). Refused up front, with the reason, where the adapter cannot bind
 * the 151,936 × 1024 embedding (lavapipe: 128 MiB per binding).
 */
async function webgpuRealSizeStep(layers: number, lora: boolean): Promise<Record<string, unknown>> {
  const total = PRESETS['qwen3-0.6b'].num_hidden_layers;
  const line: Record<string, unknown> = {
    preset: layers === total ? 'qwen3-0.6b' : `qwen3-0.6b (${layers} of ${total} layers)`,
    backend: 'webgpu',
    device: await selectBackendDevice(),
    mode: lora ? 'LoRA rank 8: q_proj, v_proj, o_proj, down_proj' : 'full fine-tune',
    samples: 1,
    tokens: 500,
    responseTokens: 60,
  };
  await selectBackend('webgpu');
  const config = parseModelConfig(
    { ...PRESETS['qwen3-0.6b'], num_hidden_layers: layers, bos_token_id: 0, eos_token_id: 1 },
    'config.json',
  );
  const d = dims(config);
  const binding = webgpuLimits()?.maxStorageBufferBindingSize ?? 0;
  const largest = d.vocab * d.hidden * 4;
  if (largest > binding) {
    return {
      ...line,
      skipped: `the ${d.vocab} × ${d.hidden} embedding is ${Math.ceil(largest / 2 ** 20)} MiB, more than one buffer binding of this adapter (${Math.floor(binding / 2 ** 20)} MiB)`,
    };
  }
  log(`${line.preset} on webgpu, ${line.mode}`);
  const loraConfig = {
    rank: 8,
    alpha: 16,
    dropout: 0,
    targetModules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'],
  };
  const shapes = new Map(weightSpecs(d).map((spec) => [spec.name, spec.shape]));
  const decoder = new TfjsDecoder(config, randomWeights(d, 0), {
    ...(lora
      ? {
          lora: {
            scale: loraScale(loraConfig),
            adapters: new Map(
              [...initLoraAdapters(loraTargets(shapes.keys(), loraConfig), shapes, loraConfig, 0)].map(
                ([t, a]) => [t, { A: a.A, B: a.B, rank: a.rank }],
              ),
            ),
          },
        }
      : {}),
  });
  const trainer = new PolicyTrainer(decoder, {
    method: 'rl',
    optimizer: { lr: 1e-5 },
    // A GPU's memory, not wasm's 4 GiB heap: one pass for the sample.
    passMemoryBytes: 64 * 2 ** 30,
  });
  const [length, response] = [500, 60];
  const sample = realSizeSample(d.vocab, length, response);
  try {
    const first = performance.now();
    await trainer.step([sample]);
    const firstSeconds = (performance.now() - first) / 1000;
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      await trainer.step([sample]);
      times.push((performance.now() - started) / 1000);
    }
    const seconds = times.sort((a, b) => a - b)[1];
    return {
      ...line,
      parameters: decoder.parameterCount,
      tokensPerSecond: Math.round((length / seconds) * 10) / 10,
      stepSeconds: Math.round(seconds * 1000) / 1000,
      firstStepSeconds: Math.round(firstSeconds * 10) / 10,
      modelTFlops: tflops(decoder.parameterCount, length, seconds),
    };
  } catch (err) {
    return { ...line, error: (err as Error).message.split('\n')[0] };
  } finally {
    trainer.dispose();
    decoder.dispose();
  }
}

/** The process's peak resident memory so far (VmHWM), in MiB. */
function peakRssMiB(): number {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return line ? Math.round(Number(line.split(/\s+/)[1]) / 1024) : Number.NaN;
}

/**
 * One LoRA step of a 500-token sample through Qwen3-0.6B's width and vocabulary with `layers`
 * of its layers, the frozen base in host memory (what a trainer shard does on wasm).
 */
async function realSizeLoraStep(layers: number): Promise<Record<string, unknown>> {
  const total = PRESETS['qwen3-0.6b'].num_hidden_layers;
  log(`qwen3-0.6b width and vocabulary, ${layers} of ${total} layers, LoRA on wasm`);
  const config = parseModelConfig(
    { ...PRESETS['qwen3-0.6b'], num_hidden_layers: layers, bos_token_id: 0, eos_token_id: 1 },
    'config.json',
  );
  const d = dims(config);
  const lora = { rank: 8, alpha: 16, dropout: 0, targetModules: ['q_proj', 'v_proj', 'o_proj', 'down_proj'] };
  const shapes = new Map(weightSpecs(d).map((spec) => [spec.name, spec.shape]));
  const adapters = initLoraAdapters(loraTargets(shapes.keys(), lora), shapes, lora, 0);
  const decoder = new TfjsDecoder(config, randomWeights(d, 0), {
    lora: {
      scale: loraScale(lora),
      adapters: new Map([...adapters].map(([target, a]) => [target, { A: a.A, B: a.B, rank: a.rank }])),
    },
    frozenBaseOnHost: true,
  });
  const trainer = new PolicyTrainer(decoder, { method: 'rl', optimizer: { lr: 1e-4 } });
  const [length, response] = [500, 60];
  const sample = realSizeSample(d.vocab, length, response);
  try {
    const first = performance.now();
    await trainer.step([sample]);
    const firstSeconds = (performance.now() - first) / 1000;
    const started = performance.now();
    const metrics = await trainer.step([sample]);
    const seconds = (performance.now() - started) / 1000;
    return {
      preset: layers === total ? 'qwen3-0.6b' : `qwen3-0.6b (${layers} of ${total} layers)`,
      backend: 'wasm',
      parameters: decoder.parameterCount,
      baseOnHost: decoder.baseOnHost,
      gradientCheckpointing: metrics.gradientCheckpointing,
      vocab: d.vocab,
      lora: `rank ${lora.rank}: ${lora.targetModules.join(', ')}`,
      samples: 1,
      tokens: length,
      responseTokens: response,
      tokensPerSecond: Math.round((response / seconds) * 10) / 10,
      stepSeconds: Math.round(seconds * 1000) / 1000,
      firstStepSeconds: Math.round(firstSeconds * 10) / 10,
      modelTFlops: tflops(decoder.parameterCount, length, seconds),
      peakRssMiB: peakRssMiB(),
    };
  } finally {
    decoder.dispose();
  }
}

/** One sample of `length` tokens (the last `response` of them trained) over `vocab`. */
function realSizeSample(vocab: number, length: number, response: number): TrainSample {
  return {
    tokenIds: Array.from({ length }, (_, t) => (t * 7919) % vocab),
    responseStart: length - response,
    oldLogprobs: new Array(response).fill(-11),
    advantages: 1,
    temperature: 0.6,
  };
}
