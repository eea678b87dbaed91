/**
 * `clawray model inspect DIR`: what a model directory is and how clawray would run it,
 * before anything is loaded — architecture, parameters, dtype, bytes on disk, context, RoPE,
 * shards, tokenizer and chat template, generation defaults, which layouts are present, the
 * rollout engine's execution provider and the trainer's TF.js backend on this machine, and
 * memory estimates. Only safetensors headers are read (never the weights), so it answers in
 * well under a second on a multi-GB checkpoint. A config the family refuses is reported with
 * the reason rather than failing the command.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Command } from 'commander';
import { listSupportedBackends } from 'onnxruntime-node';
import { cudaProviderInstalled, holdsGpu, providerAttempts } from '../actors/models/execution-provider.js';
import { type SamplingDefaults, samplingDefaults } from '../actors/models/generation-config.js';
import { dims, type ModelConfig, parseModelConfig } from '../actors/models/model-config.js';
import { CONFIG_FILE, GENERATION_CONFIG_FILE, readGenerationConfig } from '../actors/models/model-dir.js';
import { countParameters } from '../actors/models/model-init.js';
import { gqaUnsupported } from '../actors/models/onnx-export-gqa.js';
import { describeRope } from '../actors/models/rope.js';
import {
  DTYPE_BYTES,
  SAFETENSORS_FILE,
  SAFETENSORS_INDEX_FILE,
  type SafetensorsDtype,
  SafetensorsReader,
} from '../actors/models/safetensors.js';
import { TOKENIZER_CONFIG_FILE, TOKENIZER_FILE } from '../actors/models/tokenizer.js';
import { ConfigError } from '../common/errors.js';

/** Bytes per parameter of a full fine-tune with Adam in float32: weights, gradients, two moments. */
const FULL_FINETUNE_BYTES_PER_PARAM = 16;
const F32_BYTES = 4;
const F16_BYTES = 2;
/** Sequences decoding together in the KV-cache estimate (the engine's default batch). */
const ESTIMATE_BATCH = 16;

export interface ModelInspection {
  dir: string;
  /** Null when config.json is missing or refused (see `problem`). */
  architecture: string | null;
  modelType: string | null;
  /** Why this directory cannot be loaded, if it cannot. */
  problem: string | null;
  /** From the safetensors headers when present, else from config.json. */
  parameterCount: number | null;
  /** config.json's torch_dtype / dtype. */
  configDtype: string | null;
  /** Bytes of tensor data per safetensors dtype. */
  weightDtypes: Record<string, number>;
  bytesOnDisk: number;
  weightBytes: number;
  contextLength: number | null;
  rope: string | null;
  tiedEmbeddings: boolean | null;
  shards: { file: string; bytes: number; tensors: number }[];
  tokenizer: boolean;
  chatTemplate: boolean;
  generationDefaults: SamplingDefaults | null;
  layouts: { safetensors: 'single' | 'sharded' | null; onnx: string[] };
  runtime: {
    rollout: { engine: 'onnxruntime-node'; providers: string[]; uses: string; note: string };
    trainer: { engine: 'tensorflow.js'; backendsInstalled: string[]; uses: string };
  };
  memory: {
    rolloutWeightsBytes: { float32: number; float16: number } | null;
    kvBytesPerToken: number | null;
    kvBytesFullContext: number | null;
    kvBytesFullContextBatch: number | null;
    trainerFullFinetuneBytes: number | null;
    trainerLoraBaseBytes: number | null;
  };
}

function dirBytes(dir: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += dirBytes(path);
    else if (entry.isFile()) total += statSync(path).size;
  }
  return total;
}

/** Shard files in index order (or the single file), read header-only. */
function readShards(dir: string): {
  layout: 'single' | 'sharded' | null;
  shards: ModelInspection['shards'];
  dtypes: Record<string, number>;
  params: number;
} {
  const indexFile = join(dir, SAFETENSORS_INDEX_FILE);
  let files: string[] = [];
  let layout: 'single' | 'sharded' | null = null;
  if (existsSync(indexFile)) {
    const map = (JSON.parse(readFileSync(indexFile, 'utf8')) as { weight_map?: Record<string, string> })
      .weight_map;
    if (!map || typeof map !== 'object') {
      throw new ConfigError(`${indexFile}: weight_map is missing or not an object`, {
        fields: { file: indexFile },
      });
    }
    files = [...new Set(Object.values(map))].sort();
    layout = 'sharded';
  } else if (existsSync(join(dir, SAFETENSORS_FILE))) {
    files = [SAFETENSORS_FILE];
    layout = 'single';
  }
  const shards: ModelInspection['shards'] = [];
  const dtypes: Record<string, number> = {};
  let params = 0;
  for (const file of files) {
    const reader = SafetensorsReader.open(join(dir, file));
    try {
      for (const name of reader.names) {
        const info = reader.info(name)!;
        const n = info.shape.reduce((a, b) => a * b, 1);
        params += n;
        dtypes[info.dtype] = (dtypes[info.dtype] ?? 0) + n * DTYPE_BYTES[info.dtype as SafetensorsDtype];
      }
      shards.push({ file, bytes: statSync(join(dir, file)).size, tensors: reader.names.length });
    } finally {
      reader.close();
    }
  }
  return { layout, shards, dtypes, params };
}

function onnxLayouts(dir: string): string[] {
  return ['model.onnx', join('onnx', 'model.onnx')].filter((f) => existsSync(join(dir, f)));
}

function hasChatTemplate(dir: string): boolean {
  if (existsSync(join(dir, 'chat_template.jinja')) || existsSync(join(dir, 'chat_template.json')))
    return true;
  const file = join(dir, TOKENIZER_CONFIG_FILE);
  if (!existsSync(file)) return false;
  try {
    const raw = JSON.parse(readFileSync(file, 'utf8')) as { chat_template?: unknown };
    return raw.chat_template !== undefined && raw.chat_template !== null && raw.chat_template !== '';
  } catch {
    return false;
  }
}

/**
 * What the rollout engine would run on here: the providers this install can start, what 'auto'
 * tries in order (WebGPU with where its KV cache would live: on the GPU when the model takes
 * the GQA graph), and why.
 */
function rolloutRuntime(config: ModelConfig | null): ModelInspection['runtime']['rollout'] {
  // The providers the engine asks for (execution-provider.ts) that this install can start.
  const providers = listSupportedBackends()
    .filter(
      (b) =>
        b.name === 'cpu' ||
        (b.name === 'webgpu' && b.bundled) ||
        (b.name === 'cuda' && (b.bundled || cudaProviderInstalled())),
    )
    .map((b) => b.name);
  const cuda = providers.includes('cuda');
  const gpu = holdsGpu();
  // What 'auto' tries here, in order, among the providers this install has.
  const attempts = providerAttempts('auto').filter((p) => providers.includes(p));
  // The device runner (runner-choice.ts): WebGPU with the GQA graph keeps the cache on the GPU.
  const deviceCache = config !== null && gqaUnsupported(config) === null;
  const named = (p: string) =>
    p === 'webgpu'
      ? `webgpu (KV cache ${deviceCache ? 'in GPU memory, gqa graph' : 'in host memory: this model cannot take the gqa graph'})`
      : p;
  const uses =
    attempts.length > 1
      ? `${named(attempts[0])} (then ${attempts.slice(1).map(named).join(', then ')} if a session fails to start)`
      : 'cpu';
  const note = cuda
    ? gpu
      ? 'CUDA provider installed and a GPU is visible'
      : 'CUDA provider installed, but no GPU is visible to this process'
    : `the CUDA provider library is not installed${gpu ? (attempts.includes('webgpu') ? '; WebGPU (Vulkan) computes on the GPU instead' : ' although a GPU is visible') : ''}`;
  return { engine: 'onnxruntime-node', providers, uses, note };
}

function trainerRuntime(): ModelInspection['runtime']['trainer'] {
  const require = createRequire(import.meta.url);
  const installed = [
    '@tensorflow/tfjs-node-gpu',
    // TensorFlow.js on WebGPU through Dawn (the optional `webgpu` package): shards holding a GPU.
    'webgpu',
    '@tensorflow/tfjs-node',
    '@tensorflow/tfjs-backend-wasm',
  ].filter((pkg) => {
    try {
      require.resolve(pkg);
      return true;
    } catch {
      return false;
    }
  });
  const names: string[] = installed.map((p) =>
    p.endsWith('-gpu')
      ? 'tensorflow (GPU)'
      : p === 'webgpu'
        ? 'webgpu (Dawn, on a shard that holds a GPU)'
        : p.endsWith('tfjs-node')
          ? 'tensorflow (CPU)'
          : 'wasm',
  );
  names.push('cpu');
  // This process holds no GPU: auto takes WebGPU only on a shard that does.
  return {
    engine: 'tensorflow.js',
    backendsInstalled: names,
    uses: names.find((n) => !n.startsWith('webgpu'))!,
  };
}

export function inspectModelDir(dirArg: string): ModelInspection {
  const dir = dirArg;
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    throw new ConfigError(`${dir}: not a model directory (it does not exist or is not a folder)`, {
      fields: { file: dir },
    });
  }
  let problem: string | null = null;
  let config: ModelConfig | null = null;
  let rawConfig: Record<string, unknown> | null = null;
  const configFile = join(dir, CONFIG_FILE);
  if (existsSync(configFile)) {
    try {
      rawConfig = JSON.parse(readFileSync(configFile, 'utf8')) as Record<string, unknown>;
      config = parseModelConfig(rawConfig, configFile);
    } catch (err) {
      problem = (err as Error).message;
    }
  } else {
    problem = `${configFile}: missing`;
  }
  let generationDefaults: SamplingDefaults | null = null;
  try {
    generationDefaults = samplingDefaults(readGenerationConfig(dir), join(dir, GENERATION_CONFIG_FILE));
  } catch (err) {
    problem ??= (err as Error).message;
  }
  const weights = readShards(dir);
  const d = config ? dims(config) : null;
  const params = weights.params > 0 ? weights.params : d ? countParameters(d) : null;
  const kvPerToken = d ? 2 * d.layers * d.kvHeads * d.headDim * F32_BYTES : null;
  const context = config?.max_position_embeddings ?? null;
  const architectures = rawConfig?.architectures;
  return {
    dir,
    architecture: Array.isArray(architectures) ? String(architectures[0]) : null,
    modelType: typeof rawConfig?.model_type === 'string' ? rawConfig.model_type : null,
    problem,
    parameterCount: params,
    configDtype: config?.torch_dtype ?? null,
    weightDtypes: weights.dtypes,
    bytesOnDisk: dirBytes(dir),
    weightBytes: weights.shards.reduce((s, x) => s + x.bytes, 0),
    contextLength: context,
    rope: d ? describeRope(d.rope) : null,
    tiedEmbeddings: d ? d.tied : null,
    shards: weights.shards,
    tokenizer: existsSync(join(dir, TOKENIZER_FILE)),
    chatTemplate: hasChatTemplate(dir),
    generationDefaults,
    layouts: { safetensors: weights.layout, onnx: onnxLayouts(dir) },
    runtime: { rollout: rolloutRuntime(config), trainer: trainerRuntime() },
    memory: {
      rolloutWeightsBytes:
        params === null ? null : { float32: params * F32_BYTES, float16: params * F16_BYTES },
      kvBytesPerToken: kvPerToken,
      kvBytesFullContext: kvPerToken !== null && context !== null ? kvPerToken * context : null,
      kvBytesFullContextBatch:
        kvPerToken !== null && context !== null ? kvPerToken * context * ESTIMATE_BATCH : null,
      trainerFullFinetuneBytes: params === null ? null : params * FULL_FINETUNE_BYTES_PER_PARAM,
      trainerLoraBaseBytes: params === null ? null : params * F32_BYTES,
    },
  };
}

function gib(bytes: number | null): string {
  if (bytes === null) return '?';
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}

export function formatInspection(m: ModelInspection): string {
  const lines: string[] = [m.dir];
  const row = (k: string, v: string) => lines.push(`  ${k.padEnd(20)}${v}`);
  if (m.problem) row('cannot load', m.problem);
  row('architecture', `${m.architecture ?? '?'} (${m.modelType ?? '?'})`);
  row('parameters', m.parameterCount === null ? '?' : m.parameterCount.toLocaleString('en-US'));
  const dtypes = Object.entries(m.weightDtypes)
    .map(([k, v]) => `${k} ${gib(v)}`)
    .join(', ');
  row('dtype', `${m.configDtype ?? '?'} (config)${dtypes ? `; on disk ${dtypes}` : ''}`);
  row('bytes on disk', `${gib(m.bytesOnDisk)} (weights ${gib(m.weightBytes)})`);
  row('context', m.contextLength === null ? '?' : `${m.contextLength.toLocaleString('en-US')} tokens`);
  row('rope', m.rope ?? '?');
  row('tied embeddings', m.tiedEmbeddings === null ? '?' : m.tiedEmbeddings ? 'yes' : 'no');
  row(
    'shards',
    m.shards.length === 0
      ? 'none'
      : `${m.shards.length}: ${m.shards.map((s) => `${s.file} (${gib(s.bytes)}, ${s.tensors} tensor${s.tensors === 1 ? '' : 's'})`).join(', ')}`,
  );
  row('tokenizer', m.tokenizer ? TOKENIZER_FILE : 'missing');
  row('chat template', m.chatTemplate ? 'yes' : 'no (a base model)');
  const g = m.generationDefaults;
  if (g) {
    const set = [
      g.temperature !== undefined ? `temperature ${g.temperature}` : '',
      g.topP !== undefined ? `top_p ${g.topP}` : '',
      g.topK !== undefined ? `top_k ${g.topK}` : '',
      g.maxTokens !== undefined ? `max_tokens ${g.maxTokens}` : '',
    ].filter(Boolean);
    row('generation defaults', set.length > 0 ? set.join(', ') : 'none (engine defaults)');
    for (const i of g.ignored) row('  ignored', `${i.field}: ${i.reason}`);
  }
  const layouts = [
    m.layouts.safetensors ? `safetensors (${m.layouts.safetensors})` : '',
    ...m.layouts.onnx,
  ].filter(Boolean);
  row('layouts', layouts.length > 0 ? layouts.join(', ') : 'none');
  const r = m.runtime;
  row(
    'rollout engine',
    `onnxruntime-node, ${r.rollout.uses} [providers: ${r.rollout.providers.join(', ')}; ${r.rollout.note}]`,
  );
  row('trainer', `tensorflow.js, ${r.trainer.uses} [installed: ${r.trainer.backendsInstalled.join(', ')}]`);
  const mem = m.memory;
  if (mem.rolloutWeightsBytes) {
    row(
      'memory: weights',
      `${gib(mem.rolloutWeightsBytes.float32)} float32, ${gib(mem.rolloutWeightsBytes.float16)} float16`,
    );
  }
  if (mem.kvBytesPerToken !== null) {
    row(
      'memory: KV cache',
      `${gib(mem.kvBytesPerToken)}/token, ${gib(mem.kvBytesFullContext)} per full-context sequence, ${gib(mem.kvBytesFullContextBatch)} for ${ESTIMATE_BATCH}`,
    );
  }
  if (mem.trainerFullFinetuneBytes !== null) {
    row(
      'memory: trainer',
      `${gib(mem.trainerFullFinetuneBytes)} full fine-tune (float32 Adam), ${gib(mem.trainerLoraBaseBytes)} frozen float32 base for LoRA (host memory on wasm and cpu; + one pass's activations, bounded by train.passMemoryMiB and gradient checkpointing)`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export function registerModelInspect(model: Command): void {
  model
    .command('inspect')
    .description('what a model directory holds and how it would run here (reads headers only)')
    .argument('<dir>', 'model directory')
    .option('--json', 'print JSON')
    .action((dir: string, opts: { json?: boolean }) => {
      const result = inspectModelDir(dir);
      if (opts.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else process.stdout.write(formatInspection(result));
      if (result.problem) process.exitCode = 2;
    });
}
