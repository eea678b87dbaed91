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
 */
import { closeSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigError } from '../../common/errors.js';
import { type Dims, dims as dimsOf, type ModelConfig } from './model-config.js';
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
  type OnnxTensor,
  type OnnxValueInfo,
  valueInfo,
} from './onnx-proto.js';
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

/** A protobuf message may not exceed 2 GiB; larger exports keep weights in model.onnx_data. */
const INLINE_LIMIT_BYTES = 2 ** 31 - 64 * 2 ** 20;
/** Initializers at least this large go to the external data file when there is one. */
const EXTERNAL_MIN_BYTES = 1024;
/** Offsets into the external data file are multiples of this (ONNX's advice, for mmap). */
const EXTERNAL_ALIGN = 4096;

export interface DecoderExportOptions {
  /** Rows of the RoPE tables, i.e. the largest position id + 1. Default max_position_embeddings. */
  maxPositions?: number;
  /** Goes into ModelProto.producer_version. */
  producerVersion?: string;
  /** Graph name (default: the config's model_type). */
  graphName?: string;
}

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
class GraphBuilder {
  readonly nodes: OnnxNode[] = [];
  readonly initializers: OnnxTensor[] = [];
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
  ): string[] {
    const name = this.unique(`/${[...this.scopes, opType].join('/')}`);
    const outs =
      typeof outputs === 'number'
        ? Array.from({ length: outputs }, (_, k) => `${name}_output_${k}`)
        : outputs;
    this.nodes.push(makeNode(opType, inputs, outs, name, attributes));
    return outs;
  }

  op(opType: string, inputs: string[], attributes: OnnxAttribute[] = []): string {
    return this.opN(opType, inputs, 1, attributes)[0];
  }

  /** A node whose single output is the graph value `output` (a graph output's name). */
  opTo(output: string, opType: string, inputs: string[], attributes: OnnxAttribute[] = []): string {
    return this.opN(opType, inputs, [output], attributes)[0];
  }

  /** A float32 initializer. */
  weight(name: string, dims: number[], data: Float32Array): string {
    if (this.names.has(name)) throw new Error(`duplicate initializer ${name}`);
    this.names.add(name);
    this.initializers.push(floatTensor(name, dims, data));
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

function checkWeights(d: Dims, weights: WeightMap): void {
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
 * RoPE tables [maxPositions, headDim] as Hugging Face computes them in float32:
 * inv_freq[j] = 1 / theta^(2j / headDim); angle = fp32(pos · inv_freq[j]); the half-table
 * is duplicated to the full head dimension.
 */
export function ropeTableData(
  headDim: number,
  theta: number,
  maxPositions: number,
): { cos: Float32Array; sin: Float32Array } {
  const half = headDim / 2;
  const invFreq = new Float32Array(half);
  for (let j = 0; j < half; j++)
    invFreq[j] = Math.fround(1 / Math.fround(theta ** Math.fround((2 * j) / headDim)));
  const cos = new Float32Array(maxPositions * headDim);
  const sin = new Float32Array(maxPositions * headDim);
  for (let p = 0; p < maxPositions; p++) {
    const base = p * headDim;
    for (let j = 0; j < half; j++) {
      const angle = Math.fround(p * invFreq[j]);
      cos[base + j] = cos[base + half + j] = Math.cos(angle);
      sin[base + j] = sin[base + half + j] = Math.sin(angle);
    }
  }
  return { cos, sin };
}

// ---- blocks -----------------------------------------------------------------------------

interface Ctx {
  g: GraphBuilder;
  d: Dims;
  weights: WeightMap;
}

/** x · Wᵀ (+ b) for the Linear named `prefix` (weight [out, in] stored as `<prefix>.weight.T`). */
function linear(
  ctx: Ctx,
  x: string,
  prefix: string,
  inFeatures: number,
  outFeatures: number,
  bias: boolean,
): string {
  const { g, weights } = ctx;
  const name = prefix.split('.').pop()!;
  return g.within(name, () => {
    const w = g.weight(
      `${prefix}.weight.T`,
      [inFeatures, outFeatures],
      transpose(weights.get(`${prefix}.weight`)!, outFeatures, inFeatures),
    );
    const y = g.op('MatMul', [x, w]);
    if (!bias) return y;
    return g.op('Add', [y, g.weight(`${prefix}.bias`, [outFeatures], weights.get(`${prefix}.bias`)!)]);
  });
}

/** RMSNorm over the last axis: x / sqrt(mean(x²) + eps) * w. */
function rmsNorm(ctx: Ctx, x: string, weightName: string, size: number, scope: string): string {
  const { g, d, weights } = ctx;
  return g.within(scope, () => {
    const sq = g.op('Pow', [x, g.scalar(2)]);
    const mean = g.op('ReduceMean', [sq], [attr.ints('axes', [-1]), attr.int('keepdims', 1)]);
    const root = g.op('Sqrt', [g.op('Add', [mean, g.scalar(d.eps)])]);
    const normed = g.op('Div', [x, root]);
    const w = weights.get(weightName)!;
    return g.op('Mul', [normed, g.weight(weightName, [size], w)]);
  });
}

/** x·cos + rotate_half(x)·sin on x [batch, heads, seq, headDim]; cos/sin [batch, 1, seq, headDim]. */
function rope(ctx: Ctx, x: string, cos: string, sin: string, scope: string): string {
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

/** Self-attention of layer `l` on x [batch, seq, hidden]; writes present.{l}.key|value. */
function attention(ctx: Ctx, x: string, l: number, io: AttentionInputs): string {
  const { g, d } = ctx;
  const p = `${layerPrefix(l)}.self_attn`;
  const q = d.heads * d.headDim;
  const kv = d.kvHeads * d.headDim;
  return g.within('self_attn', () => {
    // [batch, seq, n, headDim] → (q/k norm) → [batch, n, seq, headDim] → RoPE
    const heads = (name: 'q' | 'k' | 'v', n: number, width: number): string => {
      let t = linear(ctx, x, `${p}.${name}_proj`, d.hidden, width, d.attentionBias);
      t = g.op('Reshape', [t, g.ints([0, 0, n, d.headDim])]);
      if (d.qkNorm && name !== 'v')
        t = rmsNorm(ctx, t, `${p}.${name}_norm.weight`, d.headDim, `${name}_norm`);
      t = g.op('Transpose', [t], [attr.ints('perm', [0, 2, 1, 3])]);
      return name === 'v' ? t : rope(ctx, t, io.cos, io.sin, `${name}_rope`);
    };
    const query = heads('q', d.heads, q);
    const key = heads('k', d.kvHeads, kv);
    const value = heads('v', d.kvHeads, kv);

    const axis2 = [attr.int('axis', 2)];
    const presentKey = g.opTo(`present.${l}.key`, 'Concat', [`past_key_values.${l}.key`, key], axis2);
    const presentValue = g.opTo(`present.${l}.value`, 'Concat', [`past_key_values.${l}.value`, value], axis2);
    // Grouped-query attention without copying keys and values per query head: the `groups`
    // query heads that share a kv head are stacked along the sequence axis ([batch, heads,
    // seq, hd] → [batch, kvHeads, groups·seq, hd] is a free reshape), which made batched
    // decode steps several times cheaper than repeating the cache with Expand.
    const grouped = g.op('Reshape', [query, g.ints([0, d.kvHeads, -1, d.headDim])]);
    const keysT = g.op('Transpose', [presentKey], [attr.ints('perm', [0, 1, 3, 2])]);
    const scores = g.op('Mul', [g.op('MatMul', [grouped, keysT]), g.scalar(1 / Math.sqrt(d.headDim))]);
    // Rows are (group, token) pairs, group-major: the [batch, 1, seq, total] mask repeats per group.
    const mask = d.groups === 1 ? io.mask : g.op('Tile', [io.mask, g.ints([1, 1, d.groups, 1])]);
    const probs = g.op('Softmax', [g.op('Add', [scores, mask])], [attr.int('axis', -1)]);
    // [batch, kvHeads, groups·seq, hd] → [batch, heads, seq, hd]
    const context = g.op('Reshape', [
      g.op('MatMul', [probs, presentValue]),
      g.ints([0, d.heads, -1, d.headDim]),
    ]);
    const merged = g.op('Reshape', [
      g.op('Transpose', [context], [attr.ints('perm', [0, 2, 1, 3])]),
      g.ints([0, 0, q]),
    ]);
    return linear(ctx, merged, `${p}.o_proj`, q, d.hidden, false);
  });
}

/** SwiGLU: down(silu(gate(x)) · up(x)), silu(z) = z · sigmoid(z). */
function mlp(ctx: Ctx, x: string, l: number): string {
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

/** cos/sin rows for position_ids, as [batch, 1, seq, headDim]. */
function ropeInputs(ctx: Ctx, maxPositions: number): { cos: string; sin: string } {
  const { g, d } = ctx;
  return g.within('rotary_emb', () => {
    const tables = ropeTableData(d.headDim, d.ropeTheta, maxPositions);
    const gathered = (name: 'cos' | 'sin') => {
      const table = g.weight(`rope.${name}`, [maxPositions, d.headDim], tables[name]);
      return g.op('Unsqueeze', [g.op('Gather', [table, 'position_ids'], [attr.int('axis', 0)]), g.ints([1])]);
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

/** Builds the ONNX model (initializers still reference their Float32Arrays; nothing is serialized). */
export function buildDecoderModel(
  config: ModelConfig,
  weights: WeightMap,
  opts: DecoderExportOptions = {},
): OnnxModel {
  const d = dimsOf(config);
  if (d.headDim % 2 !== 0)
    throw new ConfigError(`ONNX export: head_dim must be even for RoPE, got ${d.headDim}`);
  checkWeights(d, weights);
  const maxPositions = opts.maxPositions ?? config.max_position_embeddings;
  if (!Number.isInteger(maxPositions) || maxPositions < 1) {
    throw new ConfigError(`ONNX export: maxPositions must be a positive integer, got ${maxPositions}`);
  }
  const g = new GraphBuilder();
  const ctx: Ctx = { g, d, weights };

  g.within('model', () => {
    const embed = g.weight(
      'model.embed_tokens.weight',
      [d.vocab, d.hidden],
      weights.get('model.embed_tokens.weight')!,
    );
    let h = g.within('embed_tokens', () => g.op('Gather', [embed, 'input_ids'], [attr.int('axis', 0)]));
    const mask = attentionMask(ctx);
    const { cos, sin } = ropeInputs(ctx, maxPositions);
    for (let l = 0; l < d.layers; l++) {
      const p = layerPrefix(l);
      h = g.within(`layers.${l}`, () => {
        const normed = rmsNorm(ctx, h, `${p}.input_layernorm.weight`, d.hidden, 'input_layernorm');
        const attended = g.op('Add', [h, attention(ctx, normed, l, { cos, sin, mask })]);
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
    const final = rmsNorm(ctx, h, 'model.norm.weight', d.hidden, 'norm');
    const head = d.tied
      ? g.weight(
          'lm_head.weight.T',
          [d.hidden, d.vocab],
          transpose(weights.get('model.embed_tokens.weight')!, d.vocab, d.hidden),
        )
      : g.weight(
          'lm_head.weight.T',
          [d.hidden, d.vocab],
          transpose(weights.get('lm_head.weight')!, d.vocab, d.hidden),
        );
    g.within('lm_head', () => g.opTo('logits', 'MatMul', [final, head]));
  });

  const { inputs, outputs } = graphIo(d);
  return {
    ir_version: ONNX_IR_VERSION,
    opset_import: [{ domain: '', version: ONNX_OPSET }],
    producer_name: 'clawray',
    producer_version: opts.producerVersion ?? '0.1.0',
    doc_string: `${config.model_type} decoder with key/value cache (optimum input/output names)`,
    graph: {
      name: opts.graphName ?? config.model_type,
      node: g.nodes,
      initializer: g.initializers,
      input: inputs,
      output: outputs,
    },
    metadata_props: [
      { key: 'clawray.kind', value: 'decoder-kv' },
      { key: 'model_type', value: config.model_type },
      { key: 'num_hidden_layers', value: String(d.layers) },
      { key: 'num_key_value_heads', value: String(d.kvHeads) },
      { key: 'head_dim', value: String(d.headDim) },
      { key: 'max_positions', value: String(maxPositions) },
    ],
  };
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
        'use writeDecoderOnnx, which keeps them in model.onnx_data',
    );
  }
  return encodeModel(model);
}

function tempName(path: string): string {
  return `${path}.tmp-${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
}

/** Writes `bytes` to `path` through a temporary file and a rename. */
function writeAtomic(path: string, chunks: Iterable<Uint8Array>): void {
  const tmp = tempName(path);
  const fd = openSync(tmp, 'w');
  try {
    for (const chunk of chunks) {
      let off = 0;
      while (off < chunk.byteLength) off += writeSync(fd, chunk, off, chunk.byteLength - off);
    }
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
}

/**
 * Moves the initializers' bytes to `model.onnx_data` (offsets aligned to 4 KiB) and yields
 * the chunks to write there, in order; the model's tensors then point at the file.
 */
function* externalize(model: OnnxModel): Generator<Uint8Array> {
  let offset = 0;
  for (const t of model.graph.initializer) {
    const raw = t.raw_data;
    if (raw === undefined || raw.byteLength < EXTERNAL_MIN_BYTES) continue;
    const pad = (EXTERNAL_ALIGN - (offset % EXTERNAL_ALIGN)) % EXTERNAL_ALIGN;
    if (pad > 0) yield new Uint8Array(pad);
    offset += pad;
    t.external_data = [
      { key: 'location', value: MODEL_DATA_FILE },
      { key: 'offset', value: String(offset) },
      { key: 'length', value: String(raw.byteLength) },
    ];
    t.data_location = 1;
    delete t.raw_data;
    yield raw;
    offset += raw.byteLength;
  }
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
  const model = buildDecoderModel(config, weights, opts);
  const external = opts.externalData ?? initializerBytes(model) > INLINE_LIMIT_BYTES;
  mkdirSync(dir, { recursive: true });
  const modelPath = join(dir, MODEL_FILE);
  const dataPath = join(dir, MODEL_DATA_FILE);
  if (external) {
    // The data file first: a reader that sees the new model.onnx finds its data.
    writeAtomic(dataPath, externalize(model));
    writeAtomic(modelPath, [encodeModel(model)]);
    return { model: modelPath, data: dataPath };
  }
  writeAtomic(modelPath, [encodeModel(model)]);
  rmSync(dataPath, { force: true });
  return { model: modelPath };
}
