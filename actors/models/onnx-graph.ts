/**
 * The parts every decoder graph (onnx-export.ts's standard one, onnx-export-slots.ts,
 * onnx-export-gqa.ts) is built from: the graph builder, the weight layout it fills, and the
 * layers. Kept apart from the export so each graph kind imports them without importing the
 * dispatch over the kinds.
 *
 * The math is Hugging Face transformers' eager path, the same as `TfjsDecoder`: RMSNorm
 * `x / sqrt(mean(x²) + eps) * w`; q/k/v projections (+ bias for qwen2); Qwen3's per-head q/k
 * RMSNorm before RoPE; non-interleaved (rotate_half) RoPE from float32 cos/sin tables gathered
 * by position; grouped-query attention scores `q·kᵀ / √headDim` with the query heads that share
 * a kv head stacked (`groupQuery`, no copy of keys and values); o_proj; SwiGLU MLP; final norm;
 * lm_head.
 *
 * Initializers: norms and the embedding keep their Hugging Face names; every Linear weight
 * is stored transposed ([in, out], so MatMul needs no Transpose) as `<hf name>.T`; a tied
 * lm_head is `lm_head.weight.T`, the embedding's transpose. RoPE tables are
 * `rope.cos` / `rope.sin` [maxPositions, headDim].
 *
 * Weights live outside the graph: a graph needs only the config, and `GraphBuilder` puts every
 * weight in ONNX external data in `model.onnx_data` (offsets aligned to 4 KiB) and records a
 * `WeightLayout` that says where each Hugging Face tensor lands (which initializers,
 * transposed or not, at which offset). The graph protobuf is then a few hundred KiB at any
 * model size (protobuf's 2 GiB limit never applies) and the weights are one buffer
 * (onnx-export.ts writes it). Weights may be stored as float16 or bfloat16: the initializer
 * then has that type and a Cast to float32 follows it (folded by onnxruntime at load), so the
 * stored buffer is half the size while the math stays float32.
 */
import { ConfigError } from '../../common/errors.js';
import { type Dims, dims as dimsOf, type ModelConfig } from './model-config.js';
import {
  attr,
  DataType,
  floatTensor,
  int64Tensor,
  makeNode,
  type OnnxAttribute,
  type OnnxModel,
  type OnnxNode,
  type OnnxStringEntry,
  type OnnxTensor,
  type OnnxValueInfo,
} from './onnx-proto.js';
import { type RopeSpec, ropeFrequencies, writeRopeRow } from './rope.js';
import { layerPrefix } from './weight-names.js';

export const ONNX_OPSET = 17;
/** IR version 8 is the one that goes with opset 17. */
export const ONNX_IR_VERSION = 8;

/**
 * Added to the attention scores of key slots a token may not see (as `TfjsDecoder` does);
 * finite, so fully masked rows (padding tokens) stay finite.
 */
export const ONNX_MASKED_SCORE = -1e9;

/** The external data file every weight initializer references (beside `model.onnx`). */
export const MODEL_DATA_FILE = 'model.onnx_data';
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
/** Bytes per stored value of each weight dtype. */
export const DTYPE_BYTES: Record<WeightDtype, number> = { float32: 4, float16: 2, bfloat16: 2 };

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
   * 'standard' (default, onnx-export.ts): optimum's names and opset-17 operators only, the
   * cache concatenated per step. 'slots': the cache stays in the caller's buffer, read in
   * place; a step returns only its new keys/values (onnx-export-slots.ts). 'gqa': onnxruntime's
   * contrib operators with one fixed-capacity cache buffer updated in place
   * (onnx-export-gqa.ts); needs onnxruntime and head_dim a multiple of 16.
   */
  attention?: DecoderAttention;
}

export type DecoderAttention = 'standard' | 'slots' | 'gqa';
export const DECODER_ATTENTIONS: readonly DecoderAttention[] = ['standard', 'slots', 'gqa'];

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

function externalRef(offset: number, bytes: number): OnnxStringEntry[] {
  return [
    { key: 'location', value: MODEL_DATA_FILE },
    { key: 'offset', value: String(offset) },
    { key: 'length', value: String(bytes) },
  ];
}

// ---- blocks -----------------------------------------------------------------------------

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
 * holds (kind, weight dtype, attention graph, shape); every attention graph shares it.
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
