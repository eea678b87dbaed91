/**
 * Exports the decoder family (Qwen3 / Llama / Qwen2, see model-config.ts) to ONNX: builds the
 * graph of the attention kind asked for, fills its weight data, and writes the files. The
 * standard graph lives here, with a key/value cache, under Hugging Face optimum's input and
 * output names, so the rollout engine loads this export and decoders exported by optimum
 * through the same code:
 *
 *   inputs   input_ids        int64   [batch_size, sequence_length]
 *            attention_mask   int64   [batch_size, past_sequence_length + sequence_length]
 *            position_ids     int64   [batch_size, sequence_length]
 *            past_key_values.{i}.key|value  float32 [batch_size, kvHeads, past_sequence_length, headDim]
 *   outputs  logits           float32 [batch_size, sequence_length, vocab]
 *            present.{i}.key|value          float32 [batch_size, kvHeads, past_sequence_length + sequence_length, headDim]
 *
 * `present` is `past` with this call's keys/values appended along axis 2; a prefill passes
 * empty past tensors (past_sequence_length 0). Only default-domain operators of opset 17 are
 * used (no com.microsoft contrib ops), so every ONNX runtime loads the graph.
 *
 * The layers are onnx-graph.ts's, shared with the slots (onnx-export-slots.ts) and GQA
 * (onnx-export-gqa.ts) graphs; the standard graph's own part is its attention: scores of
 * the new queries against `present` plus an additive mask (causal over key slots, slot s
 * visible to new token t iff s ≤ past + t, and attention_mask padding) of
 * `ONNX_MASKED_SCORE`; softmax; the weighted `present` values.
 *
 * Weights live outside the graph: `buildDecoderGraph` needs only the config and returns the
 * graph with every weight as external data in `model.onnx_data` plus its `WeightLayout`
 * (onnx-graph.ts); the weights are one buffer that `writeWeights` fills or updates tensor by
 * tensor (converting to the stored dtype), and onnxruntime loads the pair (`externalData`).
 * `buildDecoderModel` puts them inline instead, for models under protobuf's 2 GiB.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../common/atomic-file.js';
import { ConfigError } from '../../common/errors.js';
import { type Dims, dims as dimsOf, type ModelConfig } from './model-config.js';
import { buildGqaDecoderGraph } from './onnx-export-gqa.js';
import { buildSlotsDecoderGraph } from './onnx-export-slots.js';
import {
  attentionOutput,
  attentionScores,
  type Ctx,
  DECODER_ATTENTIONS,
  type DecoderExportOptions,
  type DecoderGraph,
  DTYPE_BYTES,
  decoderModel,
  decoderStack,
  GraphBuilder,
  groupQuery,
  groupRows,
  MODEL_DATA_FILE,
  ONNX_MASKED_SCORE,
  qkvHeads,
  ropeInputs,
  WEIGHT_DTYPES,
  type WeightDtype,
  type WeightEntry,
  type WeightLayout,
} from './onnx-graph.js';
import { attr, DataType, encodeModel, type OnnxModel, type OnnxValueInfo, valueInfo } from './onnx-proto.js';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from './safetensors.js';
import { type WeightMap, weightSpecs } from './weight-names.js';

/** optimum's symbolic dimension names. */
export const DIM_NAMES = {
  batch: 'batch_size',
  seq: 'sequence_length',
  past: 'past_sequence_length',
  total: 'past_sequence_length + sequence_length',
} as const;

export const MODEL_FILE = 'model.onnx';
/** optimum's and onnx-community's folder for ONNX files inside a model directory. */
export const ONNX_DIR = 'onnx';

/**
 * The ONNX decoder of a model directory: `model.onnx` beside config.json, or the
 * optimum/onnx-community layout `onnx/model.onnx`; null when there is neither.
 */
export function findOnnxModel(dir: string): string | null {
  for (const file of [join(dir, MODEL_FILE), join(dir, ONNX_DIR, MODEL_FILE)])
    if (existsSync(file)) return file;
  return null;
}

/** A protobuf message may not exceed 2 GiB; larger exports keep weights in model.onnx_data. */
const INLINE_LIMIT_BYTES = 2 ** 31 - 64 * 2 ** 20;

export interface DecoderWriteOptions extends DecoderExportOptions {
  /**
   * Keep the weights in `model.onnx_data` beside `model.onnx` (ONNX external data). Default:
   * only when the inline model would pass protobuf's 2 GiB limit.
   */
  externalData?: boolean;
}

/** The graph's input and output names in order, per optimum. */
export function decoderIoNames(layers: number): { inputs: string[]; outputs: string[] } {
  const inputs = ['input_ids', 'attention_mask', 'position_ids'];
  const outputs = ['logits'];
  for (let i = 0; i < layers; i++) {
    inputs.push(`past_key_values.${i}.key`, `past_key_values.${i}.value`);
    outputs.push(`present.${i}.key`, `present.${i}.value`);
  }
  return { inputs, outputs };
}

// ---- the standard graph -----------------------------------------------------------------

interface AttentionInputs {
  cos: string;
  sin: string;
  /** Additive mask [batch, 1, seq, past + seq]. */
  mask: string;
}

/** Self-attention of layer `l` on x [batch, seq, hidden]; writes present.{l}.key|value. */
function attention(ctx: Ctx, x: string, l: number, io: AttentionInputs): string {
  const { g } = ctx;
  const { query, key, value } = qkvHeads(ctx, x, l, io.cos, io.sin);
  const axis2 = [attr.int('axis', 2)];
  const presentKey = g.opTo(`present.${l}.key`, 'Concat', [`past_key_values.${l}.key`, key], axis2);
  const presentValue = g.opTo(`present.${l}.value`, 'Concat', [`past_key_values.${l}.value`, value], axis2);
  const scores = attentionScores(ctx, groupQuery(ctx, query), presentKey);
  const probs = g.op('Softmax', [g.op('Add', [scores, groupRows(ctx, io.mask, 4)])], [attr.int('axis', -1)]);
  return attentionOutput(ctx, g.op('MatMul', [probs, presentValue]), l);
}

/**
 * The additive attention mask [batch, 1, seq, past + seq]: 0 where key slot s is visible to
 * new token t (s ≤ past + t and attention_mask[b, s] ≠ 0), ONNX_MASKED_SCORE elsewhere.
 */
function attentionMask(ctx: Ctx): string {
  const { g } = ctx;
  return g.within('attention_mask', () => {
    const zero = g.ints([0], true);
    const one = g.ints([1], true);
    const axis0 = g.ints([0]);
    const past = g.op('Squeeze', [
      g.op('Shape', ['past_key_values.0.key'], [attr.int('start', 2), attr.int('end', 3)]),
      axis0,
    ]);
    const seq = g.op('Squeeze', [
      g.op('Shape', ['input_ids'], [attr.int('start', 1), attr.int('end', 2)]),
      axis0,
    ]);
    const total = g.op('Add', [past, seq]);
    const keySlots = g.op('Unsqueeze', [g.op('Range', [zero, total, one]), axis0]); // [1, total]
    const querySlots = g.op('Unsqueeze', [g.op('Range', [past, total, one]), g.ints([1])]); // [seq, 1]
    const causal = g.op('LessOrEqual', [keySlots, querySlots]); // [seq, total]
    const padding = g.op('Unsqueeze', [
      g.op('Cast', ['attention_mask'], [attr.int('to', DataType.BOOL)]),
      g.ints([1, 2]),
    ]); // [batch, 1, 1, total]
    const visible = g.op('And', [padding, causal]); // [batch, 1, seq, total]
    return g.op('Where', [visible, g.scalar(0), g.scalar(ONNX_MASKED_SCORE)]);
  });
}

function graphIo(d: Dims): { inputs: OnnxValueInfo[]; outputs: OnnxValueInfo[] } {
  const { batch, seq, past, total } = DIM_NAMES;
  const inputs = [
    valueInfo('input_ids', DataType.INT64, [batch, seq]),
    valueInfo('attention_mask', DataType.INT64, [batch, total]),
    valueInfo('position_ids', DataType.INT64, [batch, seq]),
  ];
  const outputs = [valueInfo('logits', DataType.FLOAT, [batch, seq, d.vocab])];
  for (let i = 0; i < d.layers; i++) {
    for (const part of ['key', 'value']) {
      inputs.push(
        valueInfo(`past_key_values.${i}.${part}`, DataType.FLOAT, [batch, d.kvHeads, past, d.headDim]),
      );
      outputs.push(valueInfo(`present.${i}.${part}`, DataType.FLOAT, [batch, d.kvHeads, total, d.headDim]));
    }
  }
  return { inputs, outputs };
}

/**
 * Builds the decoder graph for `config` with every weight external (in `model.onnx_data`, laid
 * out as `layout` says); no weight is read. Fill a buffer of `layout.bytes` with `writeWeights`.
 */
export function buildDecoderGraph(config: ModelConfig, opts: DecoderExportOptions = {}): DecoderGraph {
  const attentionKind = opts.attention ?? 'standard';
  if (!DECODER_ATTENTIONS.includes(attentionKind)) {
    throw new ConfigError(
      `ONNX export: attention must be one of ${DECODER_ATTENTIONS.join(', ')}, got ${String(attentionKind)}`,
      { fields: { option: 'attention' } },
    );
  }
  const d = dimsOf(config);
  if (d.headDim % 2 !== 0)
    throw new ConfigError(`ONNX export: head_dim must be even for RoPE, got ${d.headDim}`);
  const maxPositions = opts.maxPositions ?? config.max_position_embeddings;
  if (!Number.isInteger(maxPositions) || maxPositions < 1) {
    throw new ConfigError(`ONNX export: maxPositions must be a positive integer, got ${maxPositions}`);
  }
  const dtype = opts.dtype ?? 'float32';
  if (!WEIGHT_DTYPES.includes(dtype)) {
    throw new ConfigError(
      `ONNX export: dtype must be one of ${WEIGHT_DTYPES.join(', ')}, got ${String(dtype)}`,
      {
        fields: { option: 'dtype' },
      },
    );
  }
  if (attentionKind === 'gqa') return buildGqaDecoderGraph(config, { ...opts, dtype, maxPositions });
  if (attentionKind === 'slots') return buildSlotsDecoderGraph(config, { ...opts, dtype, maxPositions });
  const g = new GraphBuilder(dtype);
  const ctx: Ctx = { g, d };
  g.within('model', () => {
    const mask = attentionMask(ctx);
    const { cos, sin } = ropeInputs(ctx, maxPositions);
    decoderStack(ctx, (x, l) => attention(ctx, x, l, { cos, sin, mask }));
  });

  return decoderModel(g, graphIo(d), {
    config,
    maxPositions,
    dtype,
    opts,
    attention: 'standard',
    doc: 'decoder with key/value cache (optimum input/output names)',
  });
}

// ---- weights ----------------------------------------------------------------------------

export function checkWeights(d: Dims, weights: WeightMap): void {
  for (const spec of weightSpecs(d)) {
    const data = weights.get(spec.name);
    const size = spec.shape.reduce((a, b) => a * b, 1);
    if (data === undefined)
      throw new ConfigError(`ONNX export: weights lack ${spec.name}`, { fields: { tensor: spec.name } });
    if (data.length !== size) {
      throw new ConfigError(
        `ONNX export: ${spec.name} has ${data.length} values, expected ${size} ([${spec.shape.join(', ')}])`,
        { fields: { tensor: spec.name } },
      );
    }
  }
}

/** [rows, cols] row-major → [cols, rows]. */
function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(data.length);
  for (let r = 0; r < rows; r++) {
    const base = r * cols;
    for (let c = 0; c < cols; c++) out[c * rows + r] = data[base + c];
  }
  return out;
}

/**
 * A buffer for a layout's data (its own ArrayBuffer, so typed views of it are aligned), with
 * the constant tables written and every weight zero until `writeWeights` fills it.
 */
export function allocateWeightData(layout: WeightLayout): Uint8Array {
  // Shared memory: a device runner's thread (actors/rollout/device-runner.ts) opens its session
  // on these very bytes, with no copy of a model's weights between threads.
  const data = new Uint8Array(new SharedArrayBuffer(layout.bytes));
  for (const t of layout.tables)
    data.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength), t.offset);
  return data;
}

/** The entries each Hugging Face tensor fills (a tied embedding fills two). */
export function entriesBySource(layout: WeightLayout): Map<string, WeightEntry[]> {
  const out = new Map<string, WeightEntry[]>();
  for (const e of layout.entries) {
    const list = out.get(e.source) ?? [];
    list.push(e);
    out.set(e.source, list);
  }
  return out;
}

/** The Hugging Face [out, in] (or 1-D) shape of an entry's source. */
export function sourceShape(e: WeightEntry): number[] {
  return e.transpose ? [e.dims[1], e.dims[0]] : e.dims;
}

function checkData(layout: WeightLayout, data: Uint8Array): void {
  if (data.byteLength < layout.bytes) {
    throw new ConfigError(
      `weight data holds ${data.byteLength} bytes; the graph's layout needs ${layout.bytes}`,
    );
  }
  if (data.byteOffset % 4 !== 0) throw new Error('weight data must be 4-byte aligned');
}

/** Writes one Hugging Face tensor's values into one entry (transposing, converting). */
export function writeEntry(dtype: WeightDtype, data: Uint8Array, e: WeightEntry, values: Float32Array): void {
  const n = e.bytes / DTYPE_BYTES[dtype];
  if (values.length !== n) {
    throw new ConfigError(
      `${e.source} has ${values.length} values, expected ${n} ([${sourceShape(e).join(', ')}])`,
      { fields: { tensor: e.source } },
    );
  }
  const src = e.transpose ? transpose(values, e.dims[1], e.dims[0]) : values;
  if (dtype === 'float32') {
    new Float32Array(data.buffer, data.byteOffset + e.offset, n).set(src);
    return;
  }
  const bits = new Uint16Array(data.buffer, data.byteOffset + e.offset, n);
  const encode = dtype === 'bfloat16' ? f32ToBf16Bits : f32ToF16Bits;
  for (let i = 0; i < n; i++) bits[i] = encode(src[i]);
}

/**
 * Writes the Hugging Face tensors in `tensors` into `data` (laid out by `layout`); tensors the
 * layout does not name are refused, and only the bytes of the named ones are touched. Returns
 * the initializer names written.
 */
export function writeWeights(
  layout: WeightLayout,
  data: Uint8Array,
  tensors: ReadonlyMap<string, Float32Array>,
  bySource: Map<string, WeightEntry[]> = entriesBySource(layout),
): string[] {
  checkData(layout, data);
  for (const name of tensors.keys()) {
    if (!bySource.has(name))
      throw new ConfigError(`unknown tensor ${name}: the model has no such weight`, {
        fields: { tensor: name },
      });
  }
  const written: string[] = [];
  for (const [name, values] of tensors) {
    for (const e of bySource.get(name)!) {
      writeEntry(layout.dtype, data, e, values);
      written.push(e.name);
    }
  }
  return written;
}

/** One Hugging Face tensor back from the data, as float32 in its [out, in] layout. */
export function readWeight(
  layout: WeightLayout,
  data: Uint8Array,
  name: string,
  bySource: Map<string, WeightEntry[]> = entriesBySource(layout),
): Float32Array {
  const entries = bySource.get(name);
  if (!entries) throw new ConfigError(`unknown tensor ${name}: the model has no such weight`);
  const e = entries.find((x) => !x.transpose) ?? entries[0];
  const n = e.bytes / DTYPE_BYTES[layout.dtype];
  let values: Float32Array;
  if (layout.dtype === 'float32') {
    values = new Float32Array(data.buffer, data.byteOffset + e.offset, n).slice();
  } else {
    const bits = new Uint16Array(data.buffer, data.byteOffset + e.offset, n);
    const decode = layout.dtype === 'bfloat16' ? bf16BitsToF32 : f16BitsToF32;
    values = new Float32Array(n);
    for (let i = 0; i < n; i++) values[i] = decode(bits[i]);
  }
  return e.transpose ? transpose(values, e.dims[0], e.dims[1]) : values;
}

/** Builds the ONNX model with every weight inline (views of one buffer; nothing is serialized). */
export function buildDecoderModel(
  config: ModelConfig,
  weights: WeightMap,
  opts: DecoderExportOptions = {},
): OnnxModel {
  checkWeights(dimsOf(config), weights);
  const { model, layout } = buildDecoderGraph(config, opts);
  const data = allocateWeightData(layout);
  writeWeights(layout, data, weights);
  const byName = new Map<string, { offset: number; bytes: number }>(layout.entries.map((e) => [e.name, e]));
  for (const t of layout.tables) byName.set(t.name, { offset: t.offset, bytes: t.data.byteLength });
  for (const t of model.graph.initializer) {
    const e = byName.get(t.name ?? '');
    if (!e) continue;
    t.raw_data = data.subarray(e.offset, e.offset + e.bytes);
    delete t.external_data;
    delete t.data_location;
  }
  return model;
}

/**
 * The decoder as graph bytes (weights external, referencing `model.onnx_data`) and the data
 * buffer: what `OnnxDecoder.load` takes as `{ graph, data }` and `writeDecoderOnnx` writes.
 */
export function exportDecoderExternal(
  config: ModelConfig,
  weights: WeightMap,
  opts: DecoderExportOptions = {},
): { graph: Uint8Array; data: Uint8Array; layout: WeightLayout } {
  checkWeights(dimsOf(config), weights);
  const { model, layout } = buildDecoderGraph(config, opts);
  const data = allocateWeightData(layout);
  writeWeights(layout, data, weights);
  return { graph: encodeModel(model), data, layout };
}

function initializerBytes(model: OnnxModel): number {
  let total = 0;
  for (const t of model.graph.initializer) total += t.raw_data?.byteLength ?? 0;
  return total;
}

/** The decoder as ONNX bytes with every weight inline (up to protobuf's 2 GiB). */
export function exportDecoderOnnx(
  config: ModelConfig,
  weights: WeightMap,
  opts: DecoderExportOptions = {},
): Uint8Array {
  const model = buildDecoderModel(config, weights, opts);
  const size = initializerBytes(model);
  if (size > INLINE_LIMIT_BYTES) {
    throw new ConfigError(
      `ONNX export: ${(size / 2 ** 30).toFixed(2)} GiB of weights do not fit in one protobuf message (2 GiB); ` +
        'use exportDecoderExternal or writeDecoderOnnx, which keep them in model.onnx_data',
    );
  }
  return encodeModel(model);
}

/** Writes `<dir>/model.onnx` + `<dir>/model.onnx_data` (graph bytes with external weights). */
export function writeExternalOnnx(
  dir: string,
  graph: Uint8Array,
  data: Uint8Array,
): { model: string; data: string } {
  mkdirSync(dir, { recursive: true });
  const modelPath = join(dir, MODEL_FILE);
  const dataPath = join(dir, MODEL_DATA_FILE);
  // The data file first: a reader that sees the new model.onnx finds its data.
  writeFileAtomic(dataPath, data);
  writeFileAtomic(modelPath, graph);
  return { model: modelPath, data: dataPath };
}

/**
 * Writes `<dir>/model.onnx` (and `<dir>/model.onnx_data` when the weights are kept outside
 * the model), each atomically. Returns the files written.
 */
export function writeDecoderOnnx(
  dir: string,
  config: ModelConfig,
  weights: WeightMap,
  opts: DecoderWriteOptions = {},
): { model: string; data?: string } {
  checkWeights(dimsOf(config), weights);
  const { model, layout } = buildDecoderGraph(config, opts);
  const external = opts.externalData ?? layout.bytes > INLINE_LIMIT_BYTES;
  if (external) {
    const data = allocateWeightData(layout);
    writeWeights(layout, data, weights);
    return writeExternalOnnx(dir, encodeModel(model), data);
  }
  mkdirSync(dir, { recursive: true });
  const modelPath = join(dir, MODEL_FILE);
  writeFileAtomic(modelPath, exportDecoderOnnx(config, weights, opts));
  rmSync(join(dir, MODEL_DATA_FILE), { force: true });
  return { model: modelPath };
}
