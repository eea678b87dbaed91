/**
 * Exports the decoder family (Qwen3 / Llama / Qwen2, see model-config.ts) to an ONNX graph
 * with a key/value cache, under Hugging Face optimum's input and output names, so the
 * rollout engine loads this export and decoders exported by optimum through the same code:
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
 * The math is Hugging Face transformers' eager path, the same as `TfjsDecoder`: RMSNorm
 * `x / sqrt(mean(x²) + eps) * w`; q/k/v projections (+ bias for qwen2); Qwen3's per-head q/k
 * RMSNorm before RoPE; non-interleaved (rotate_half) RoPE from float32 cos/sin tables gathered
 * by position_ids; grouped-query attention by repeating kv heads; scores `q·kᵀ / √headDim`
 * plus an additive mask (causal over key slots, slot s visible to new token t iff
 * s ≤ past + t, and attention_mask padding) of `MASKED_SCORE` (finite, so fully masked rows
 * of padding tokens stay finite); softmax; o_proj; SwiGLU MLP; final norm; lm_head.
 *
 * Initializers: norms and the embedding keep their Hugging Face names; every Linear weight
 * is stored transposed ([in, out], so MatMul needs no Transpose) as `<hf name>.T`; a tied
 * lm_head is `lm_head.weight.T`, the embedding's transpose. RoPE tables are
 * `rope.cos` / `rope.sin` [maxPositions, headDim].
 *
 * Weights live outside the graph: `buildDecoderGraph` needs only the config and returns the
 * graph with every weight as ONNX external data in `model.onnx_data` (offsets aligned to
 * 4 KiB) plus a `WeightLayout` that says where each Hugging Face tensor lands (which
 * initializers, transposed or not, at which offset). The graph protobuf is then a few hundred
 * KiB at any model size (protobuf's 2 GiB limit never applies), the weights are one buffer
 * that `writeWeights` fills or updates tensor by tensor, and onnxruntime loads the pair
 * (`externalData`). Weights may be stored as float16 or bfloat16: the initializer then has
 * that type and a Cast to float32 follows it (folded by onnxruntime at load), so the stored
 * buffer is half the size while the math stays float32.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../common/atomic-file.js';
import { ConfigError } from '../../common/errors.js';
import { type Dims, dims as dimsOf, type ModelConfig } from './model-config.js';
import { buildGqaDecoderGraph } from './onnx-export-gqa.js';
import { buildSlotsDecoderGraph } from './onnx-export-slots.js';
import {
  attr,
  DataType,
  encodeModel,
  floatTensor,
  int64Tensor,
  makeNode,
  type OnnxAttribute,
  type OnnxModel,
  type OnnxNode,
  type OnnxStringEntry,
  type OnnxTensor,
  type OnnxValueInfo,
  valueInfo,
} from './onnx-proto.js';
import { type RopeSpec, ropeFrequencies, writeRopeRow } from './rope.js';
import { bf16BitsToF32, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits } from './safetensors.js';
import { layerPrefix, type WeightMap, weightSpecs } from './weight-names.js';

export const ONNX_OPSET = 17;
/** IR version 8 is the one that goes with opset 17. */
export const ONNX_IR_VERSION = 8;

/** Added to the attention scores of key slots a token may not see (as `TfjsDecoder` does). */
export const ONNX_MASKED_SCORE = -1e9;

/** optimum's symbolic dimension names. */
export const DIM_NAMES = {
  batch: 'batch_size',
  seq: 'sequence_length',
  past: 'past_sequence_length',
  total: 'past_sequence_length + sequence_length',
} as const;

export const MODEL_FILE = 'model.onnx';
export const MODEL_DATA_FILE = 'model.onnx_data';
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
/** Offsets into the external data file are multiples of this (ONNX's advice, for mmap). */
export const EXTERNAL_ALIGN = 4096;

/** How weights are stored in the graph's data (the math is float32 either way). */
export type WeightDtype = 'float32' | 'float16' | 'bfloat16';
export const WEIGHT_DTYPES: readonly WeightDtype[] = ['float32', 'float16', 'bfloat16'];

const DTYPE_CODES: Record<WeightDtype, number> = {
  float32: DataType.FLOAT,
  float16: DataType.FLOAT16,
  bfloat16: DataType.BFLOAT16,
};
const DTYPE_BYTES: Record<WeightDtype, number> = { float32: 4, float16: 2, bfloat16: 2 };

/** One weight initializer in the external data: where it is and which Hugging Face tensor fills it. */
export interface WeightEntry {
  /** The initializer's name in the graph (`<hf name>.T` when transposed). */
  name: string;
  /** The Hugging Face tensor it holds. */
  source: string;
  /** The initializer's shape ([in, out] when transposed). */
  dims: number[];
  /** Stored as the transpose of the Hugging Face [out, in] tensor. */
  transpose: boolean;
  /** Byte offset in the data buffer (a multiple of EXTERNAL_ALIGN). */
  offset: number;
  bytes: number;
}

/** A float32 table the graph computes from its config (RoPE cos/sin), stored with the weights. */
export interface ConstantTable {
  name: string;
  offset: number;
  data: Float32Array;
}

/** Where every weight of a decoder graph lives in its external data buffer. */
export interface WeightLayout {
  dtype: WeightDtype;
  entries: WeightEntry[];
  /** Written once by allocateWeightData; no update touches them. */
  tables: ConstantTable[];
  /** Size of the data buffer. */
  bytes: number;
}

/** A decoder graph whose weights are external (in `model.onnx_data`), and their layout. */
export interface DecoderGraph {
  model: OnnxModel;
  layout: WeightLayout;
}

export interface DecoderExportOptions {
  /** Rows of the RoPE tables, i.e. the largest position id + 1. Default max_position_embeddings. */
  maxPositions?: number;
  /** Goes into ModelProto.producer_version. */
  producerVersion?: string;
  /** Graph name (default: the config's model_type). */
  graphName?: string;
  /** Storage type of the weights (default float32). */
  dtype?: WeightDtype;
  /**
   * 'standard' (default): optimum's names and opset-17 operators only, the cache concatenated
   * per step. 'slots': the cache stays in the caller's buffer, read in place; a step returns
   * only its new keys/values (onnx-export-slots.ts). 'gqa': onnxruntime's contrib operators
   * with one fixed-capacity cache buffer updated in place (onnx-export-gqa.ts); needs
   * onnxruntime and head_dim a multiple of 16.
   */
  attention?: DecoderAttention;
}

export type DecoderAttention = 'standard' | 'slots' | 'gqa';
export const DECODER_ATTENTIONS: readonly DecoderAttention[] = ['standard', 'slots', 'gqa'];

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

// ---- graph builder ----------------------------------------------------------------------

/**
 * Collects nodes and initializers. Node names follow the PyTorch exporter's style
 * (`/model/layers.0/self_attn/q_proj/MatMul`, made unique with a suffix), node outputs are
 * `<node name>_output_<k>`, and small int64 constants are shared.
 */
export class GraphBuilder {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
  readonly entries: WeightEntry[] = [];
  readonly tables: ConstantTable[] = [];
  /** End of the external data written so far. */
  dataBytes = 0;
  private readonly names = new Set<string>();
  private readonly constants = new Map<string, string>();
  private readonly scopes: string[] = [];

  /** Runs `fn` with `scope` appended to the node-name path. */
  within<T>(scope: string, fn: () => T): T {
    this.scopes.push(scope);
    try {
      return fn();
    } finally {
      this.scopes.pop();
    }
  }

  private unique(base: string): string {
    let name = base;
    for (let k = 1; this.names.has(name); k++) name = `${base}_${k}`;
    this.names.add(name);
    return name;
  }

  /** Adds a node and returns its outputs (named after the node unless `outputs` names them). */
  opN(
    opType: string,
    inputs: string[],
    outputs: number | string[],
    attributes: OnnxAttribute[] = [],
    /** Operator domain ('com.microsoft' for onnxruntime's contrib ops); default ONNX's. */
    domain?: string,
  ): string[] {
    const name = this.unique(`/${[...this.scopes, opType].join('/')}`);
    const outs =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, (_, k) => `${name}_output_${k}`)
        : outputs;
    const node = makeNode(opType, inputs, outs, name, attributes);
    if (domain) node.domain = domain;
    this.nodes.push(node);
    return outs;
  }

  op(opType: string, inputs: string[], attributes: OnnxAttribute[] = []): string {
    return this.opN(opType, inputs, 1, attributes)[0];
  }

  /** A node whose single output is the graph value `output` (a graph output's name). */
  opTo(output: string, opType: string, inputs: string[], attributes: OnnxAttribute[] = []): string {
    return this.opN(opType, inputs, [output], attributes)[0];
  }

  constructor(private readonly dtype: WeightDtype) {}

  /**
   * A weight initializer in the external data, filled from the Hugging Face tensor `source`
   * (transposed when `transpose`). Returns the float32 value to compute with: the initializer,
   * or a Cast of it when weights are stored as float16/bfloat16.
   */
  weight(name: string, dims: number[], source: string, transpose = false): string {
    if (this.names.has(name)) throw new Error(`duplicate initializer ${name}`);
    this.names.add(name);
    const offset = this.dataBytes + ((EXTERNAL_ALIGN - (this.dataBytes % EXTERNAL_ALIGN)) % EXTERNAL_ALIGN);
    const bytes = dims.reduce((a, b) => a * b, 1) * DTYPE_BYTES[this.dtype];
    this.entries.push({ name, source, dims, transpose, offset, bytes });
    this.dataBytes = offset + bytes;
    this.initializers.push({
      name,
      dims,
      data_type: DTYPE_CODES[this.dtype],
      data_location: 1,
      external_data: externalRef(offset, bytes),
    });
    if (this.dtype === 'float32') return name;
    return this.op('Cast', [name], [attr.int('to', DataType.FLOAT)]);
  }

  /**
   * A float32 table computed from the config (RoPE), not a weight: external like the weights
   * (so the graph stays small), always float32, and written by `allocateWeightData`.
   */
  table(name: string, dims: number[], data: Float32Array): string {
    if (this.names.has(name)) throw new Error(`duplicate initializer ${name}`);
    this.names.add(name);
    const offset = this.dataBytes + ((EXTERNAL_ALIGN - (this.dataBytes % EXTERNAL_ALIGN)) % EXTERNAL_ALIGN);
    this.tables.push({ name, offset, data });
    this.dataBytes = offset + data.byteLength;
    this.initializers.push({
      name,
      dims,
      data_type: DataType.FLOAT,
      data_location: 1,
      external_data: externalRef(offset, data.byteLength),
    });
    return name;
  }

  /** A shared int64 constant: a 1-D tensor, or a scalar when `scalar`. */
  ints(values: number[], scalar = false): string {
    const key = `i64:${scalar ? 's' : 'v'}:${values.join(',')}`;
    const known = this.constants.get(key);
    if (known) return known;
    const name = this.unique(`const_${scalar ? 'scalar' : 'ints'}_${values.join('_').replaceAll('-', 'm')}`);
    this.initializers.push(int64Tensor(name, scalar ? [] : [values.length], values));
    this.constants.set(key, name);
    return name;
  }

  /** A shared float32 scalar constant. */
  scalar(value: number): string {
    const key = `f32:${value}`;
    const known = this.constants.get(key);
    if (known) return known;
    const name = this.unique(`const_float_${String(value).replaceAll('-', 'm').replaceAll('.', 'p')}`);
    this.initializers.push(floatTensor(name, [], Float32Array.of(value)));
    this.constants.set(key, name);
    return name;
  }
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
 * RoPE tables [maxPositions, headDim] under the model's RoPE (rope.ts, the same rows the TF.js
 * decoder computes: HF's float32 inv_freq with its rope scaling, angle = fp32(pos · inv_freq),
 * cos/sin times yarn's attention factor), the half-table duplicated to the full head.
 */
export function ropeTableData(
  headDim: number,
  rope: RopeSpec,
  maxPositions: number,
): { cos: Float32Array; sin: Float32Array } {
  const freqs = ropeFrequencies(rope, headDim);
  if (maxPositions > freqs.positionLimit) {
    throw new ConfigError(
      `ONNX export: maxPositions ${maxPositions} is past the ${freqs.positionLimit} positions a '${rope.type}' RoPE is served for (rope.ts)`,
      { fields: { maxPositions } },
    );
  }
  const cos = new Float32Array(maxPositions * headDim);
  const sin = new Float32Array(maxPositions * headDim);
  for (let p = 0; p < maxPositions; p++) writeRopeRow(freqs, p, cos, sin, p * headDim, true);
  return { cos, sin };
}

// ---- blocks -----------------------------------------------------------------------------

export interface Ctx {
  g: GraphBuilder;
  d: Dims;
}

/** x · Wᵀ (+ b) for the Linear named `prefix` (weight [out, in] stored as `<prefix>.weight.T`). */
export function linear(
  ctx: Ctx,
  x: string,
  prefix: string,
  inFeatures: number,
  outFeatures: number,
  bias: boolean,
): string {
  const { g } = ctx;
  const name = prefix.split('.').pop()!;
  return g.within(name, () => {
    const w = g.weight(`${prefix}.weight.T`, [inFeatures, outFeatures], `${prefix}.weight`, true);
    const y = g.op('MatMul', [x, w]);
    if (!bias) return y;
    return g.op('Add', [y, g.weight(`${prefix}.bias`, [outFeatures], `${prefix}.bias`)]);
  });
}

/** RMSNorm over the last axis: x / sqrt(mean(x²) + eps) * w. */
export function rmsNorm(ctx: Ctx, x: string, weightName: string, size: number, scope: string): string {
  const { g, d } = ctx;
  return g.within(scope, () => {
    const sq = g.op('Pow', [x, g.scalar(2)]);
    const mean = g.op('ReduceMean', [sq], [attr.ints('axes', [-1]), attr.int('keepdims', 1)]);
    const root = g.op('Sqrt', [g.op('Add', [mean, g.scalar(d.eps)])]);
    const normed = g.op('Div', [x, root]);
    return g.op('Mul', [normed, g.weight(weightName, [size], weightName)]);
  });
}

/** x·cos + rotate_half(x)·sin on x [batch, heads, seq, headDim]; cos/sin [batch, 1, seq, headDim]. */
export function rope(ctx: Ctx, x: string, cos: string, sin: string, scope: string): string {
  const { g, d } = ctx;
  const half = d.headDim / 2;
  return g.within(scope, () => {
    const lastAxis = g.ints([-1]);
    const x1 = g.op('Slice', [x, g.ints([0]), g.ints([half]), lastAxis]);
    const x2 = g.op('Slice', [x, g.ints([half]), g.ints([d.headDim]), lastAxis]);
    const rotated = g.op('Concat', [g.op('Neg', [x2]), x1], [attr.int('axis', -1)]);
    return g.op('Add', [g.op('Mul', [x, cos]), g.op('Mul', [rotated, sin])]);
  });
}

interface AttentionInputs {
  cos: string;
  sin: string;
  /** Additive mask [batch, 1, seq, past + seq]. */
  mask: string;
}

/**
 * Layer `l`'s query, key and value heads of x [batch, seq, hidden], each [batch, n, seq,
 * headDim]: projected, q/k normed per head (Qwen3), q and k rotated (RoPE).
 */
export function qkvHeads(
  ctx: Ctx,
  x: string,
  l: number,
  cos: string,
  sin: string,
): { query: string; key: string; value: string } {
  const { g, d } = ctx;
  const p = `${layerPrefix(l)}.self_attn`;
  // [batch, seq, n, headDim] → (q/k norm) → [batch, n, seq, headDim] → RoPE
  const heads = (name: 'q' | 'k' | 'v', n: number): string => {
    let t = linear(ctx, x, `${p}.${name}_proj`, d.hidden, n * d.headDim, d.attentionBias);
    t = g.op('Reshape', [t, g.ints([0, 0, n, d.headDim])]);
    if (d.qkNorm && name !== 'v') t = rmsNorm(ctx, t, `${p}.${name}_norm.weight`, d.headDim, `${name}_norm`);
    t = g.op('Transpose', [t], [attr.ints('perm', [0, 2, 1, 3])]);
    return name === 'v' ? t : rope(ctx, t, cos, sin, `${name}_rope`);
  };
  return { query: heads('q', d.heads), key: heads('k', d.kvHeads), value: heads('v', d.kvHeads) };
}

/**
 * Grouped-query attention without copying keys and values per query head: the `groups` query
 * heads that share a kv head are stacked along the sequence axis ([batch, heads, seq, hd] →
 * [batch, kvHeads, groups·seq, hd] is a free reshape), which made batched decode steps several
 * times cheaper than repeating the cache with Expand. Rows are (group, token) pairs,
 * group-major, so a [.., seq, keys] mask repeats per group (`groupRows`).
 */
export function groupQuery(ctx: Ctx, query: string): string {
  const { g, d } = ctx;
  return g.op('Reshape', [query, g.ints([0, d.kvHeads, -1, d.headDim])]);
}

/** A mask [.., seq, keys] for grouped rows [.., groups·seq, keys]. */
export function groupRows(ctx: Ctx, mask: string, rank: number): string {
  const { g, d } = ctx;
  if (d.groups === 1) return mask;
  return g.op('Tile', [mask, g.ints([...Array(rank - 2).fill(1), d.groups, 1])]);
}

/** Scaled scores of grouped queries against keys [batch, kvHeads, keys, hd]. */
export function attentionScores(ctx: Ctx, grouped: string, keys: string): string {
  const { g, d } = ctx;
  const keysT = g.op('Transpose', [keys], [attr.ints('perm', [0, 1, 3, 2])]);
  return g.op('Mul', [g.op('MatMul', [grouped, keysT]), g.scalar(1 / Math.sqrt(d.headDim))]);
}

/** The grouped context [batch, kvHeads, groups·seq, hd] through o_proj: [batch, seq, hidden]. */
export function attentionOutput(ctx: Ctx, context: string, l: number): string {
  const { g, d } = ctx;
  const q = d.heads * d.headDim;
  // [batch, kvHeads, groups·seq, hd] → [batch, heads, seq, hd] → [batch, seq, heads·hd]
  const heads = g.op('Reshape', [context, g.ints([0, d.heads, -1, d.headDim])]);
  const merged = g.op('Reshape', [
    g.op('Transpose', [heads], [attr.ints('perm', [0, 2, 1, 3])]),
    g.ints([0, 0, q]),
  ]);
  return linear(ctx, merged, `${layerPrefix(l)}.self_attn.o_proj`, q, d.hidden, false);
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

/** SwiGLU: down(silu(gate(x)) · up(x)), silu(z) = z · sigmoid(z). */
export function mlp(ctx: Ctx, x: string, l: number): string {
  const { g, d } = ctx;
  const p = `${layerPrefix(l)}.mlp`;
  return g.within('mlp', () => {
    const gate = linear(ctx, x, `${p}.gate_proj`, d.hidden, d.intermediate, false);
    const up = linear(ctx, x, `${p}.up_proj`, d.hidden, d.intermediate, false);
    const silu = g.within('act_fn', () => g.op('Mul', [gate, g.op('Sigmoid', [gate])]));
    return linear(ctx, g.op('Mul', [silu, up]), `${p}.down_proj`, d.intermediate, d.hidden, false);
  });
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

/** cos/sin rows for `positions` ([batch, seq] int64), as [batch, 1, seq, headDim]. */
export function ropeInputs(
  ctx: Ctx,
  maxPositions: number,
  positions = 'position_ids',
): { cos: string; sin: string } {
  const { g, d } = ctx;
  return g.within('rotary_emb', () => {
    const tables = ropeTableData(d.headDim, d.rope, maxPositions);
    const gathered = (name: 'cos' | 'sin') => {
      const table = g.table(`rope.${name}`, [maxPositions, d.headDim], tables[name]);
      return g.op('Unsqueeze', [g.op('Gather', [table, positions], [attr.int('axis', 0)]), g.ints([1])]);
    };
    return { cos: gathered('cos'), sin: gathered('sin') };
  });
}

// ---- the model --------------------------------------------------------------------------

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

/**
 * Embedding, the decoder layers with attention as `attend` builds it (on the layer's normed
 * input x [batch, seq, hidden]), the final norm, `beforeHead` (what reaches lm_head: all
 * positions by default) and lm_head into `logits`: the body the standard and slots graphs share.
 */
export function decoderStack(
  ctx: Ctx,
  attend: (x: string, l: number) => string,
  beforeHead: (final: string) => string = (x) => x,
): void {
  const { g, d } = ctx;
  const embed = g.weight('model.embed_tokens.weight', [d.vocab, d.hidden], 'model.embed_tokens.weight');
  let h = g.within('embed_tokens', () => g.op('Gather', [embed, 'input_ids'], [attr.int('axis', 0)]));
  for (let l = 0; l < d.layers; l++) {
    const p = layerPrefix(l);
    h = g.within(`layers.${l}`, () => {
      const normed = rmsNorm(ctx, h, `${p}.input_layernorm.weight`, d.hidden, 'input_layernorm');
      const attended = g.op('Add', [h, g.within('self_attn', () => attend(normed, l))]);
      const normed2 = rmsNorm(
        ctx,
        attended,
        `${p}.post_attention_layernorm.weight`,
        d.hidden,
        'post_attention_layernorm',
      );
      return g.op('Add', [attended, mlp(ctx, normed2, l)]);
    });
  }
  const final = beforeHead(rmsNorm(ctx, h, 'model.norm.weight', d.hidden, 'norm'));
  // A tied lm_head is the embedding's transpose, kept as its own initializer so MatMul needs
  // no Transpose (and transformers.js-style consumers see a plain MatMul).
  const head = g.weight(
    'lm_head.weight.T',
    [d.hidden, d.vocab],
    d.tied ? 'model.embed_tokens.weight' : 'lm_head.weight',
    true,
  );
  g.within('lm_head', () => g.opTo('logits', 'MatMul', [final, head]));
}

/**
 * The model around a built decoder graph, with the metadata that tells clawray's loader what it
 * holds (kind, weight dtype, attention graph, shape); both attention graphs share it.
 */
export function decoderModel(
  g: GraphBuilder,
  io: { inputs: OnnxValueInfo[]; outputs: OnnxValueInfo[] },
  o: {
    config: ModelConfig;
    maxPositions: number;
    dtype: WeightDtype;
    opts: DecoderExportOptions;
    attention: DecoderAttention;
    doc: string;
    /** Operator sets besides the default one (contrib ops' com.microsoft). */
    opsets?: { domain: string; version: number }[];
  },
): DecoderGraph {
  const d = dimsOf(o.config);
  const model: OnnxModel = {
    ir_version: ONNX_IR_VERSION,
    opset_import: [{ domain: '', version: ONNX_OPSET }, ...(o.opsets ?? [])],
    producer_name: 'clawray',
    producer_version: o.opts.producerVersion ?? '0.1.0',
    doc_string: `${o.config.model_type} ${o.doc}`,
    graph: {
      name: o.opts.graphName ?? o.config.model_type,
      node: g.nodes,
      initializer: g.initializers,
      input: io.inputs,
      output: io.outputs,
    },
    metadata_props: [
      { key: 'clawray.kind', value: 'decoder-kv' },
      { key: 'clawray.weight_dtype', value: o.dtype },
      { key: 'clawray.attention', value: o.attention },
      { key: 'model_type', value: o.config.model_type },
      { key: 'num_hidden_layers', value: String(d.layers) },
      { key: 'num_key_value_heads', value: String(d.kvHeads) },
      { key: 'head_dim', value: String(d.headDim) },
      { key: 'max_positions', value: String(o.maxPositions) },
    ],
  };
  return { model, layout: { dtype: o.dtype, entries: g.entries, tables: g.tables, bytes: g.dataBytes } };
}

function externalRef(offset: number, bytes: number): OnnxStringEntry[] {
  return [
    { key: 'location', value: MODEL_DATA_FILE },
    { key: 'offset', value: String(offset) },
    { key: 'length', value: String(bytes) },
  ];
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
