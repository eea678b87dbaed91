/**
 * The decoder graph with onnxruntime's fused contrib operators, as onnxruntime-genai's model
 * builder emits them, whose kernel updates the key/value cache in place:
 *
 *   inputs   input_ids              int64   [batch_size, sequence_length]
 *            seqlens_k              int32   [batch_size]   each row's length after this step − 1
 *            total_sequence_length  int32   scalar         the longest row's length after this step
 *            num_logits_to_keep     int64   scalar         logits for the last k positions; 0: all
 *            past_key_values.{i}.key|value  float32 [batch_size, kvHeads, max_sequence_length, headDim]
 *   outputs  logits                 float32 [batch_size, logits_sequence_length, vocab]
 *            present.{i}.key|value          float32 [batch_size, kvHeads, max_sequence_length, headDim]
 *
 * Rows are RIGHT-padded: row b's cache is slots 0 … seqlens_k[b] of a buffer of a fixed
 * capacity (`max_sequence_length`), and a step's new keys/values land at the row's next slots.
 * The caller binds the same memory as `past` and `present`, and `GroupQueryAttention` sees
 * past_present_share_buffer and writes only the new slots in place: onnxruntime-node (1.30)
 * hands a CPU input to onnxruntime as it is and binds a preallocated fetch to its memory (the
 * in-place decoder test checks that slots past a row are left untouched). But the binding then
 * turns every fetched output into a new JS array, so each step still pays a copy of the whole
 * buffer after the run: work in proportion to the capacity, which the engine therefore keeps
 * close to the longest row (kv-batch.ts), and the reason the engine's default is the slots
 * graph (onnx-export-slots.ts), which returns only the new slots. Positions are implied:
 * GQA's rotary (`do_rotary`, cos/sin caches of [maxPositions, headDim / 2]) uses slot index =
 * position, as a sequence with no padding in
 * front has. A prompt step (sequence_length > 1) with a non-empty past must have batch 1
 * (onnxruntime's CPU kernel refuses more); a first prompt may be batched, right-padded.
 *
 * Per layer: `SkipSimplifiedLayerNormalization` fuses the residual add with the next RMSNorm
 * (the first norm is `SimplifiedLayerNormalization`); q/k/v projections; Qwen3's per-head q/k
 * RMSNorm (`SimplifiedLayerNormalization` over [.., heads, headDim]) BEFORE GQA, so GQA's
 * rotary is applied after it as Hugging Face does; GQA; o_proj; SwiGLU MLP. The final norm's
 * output is sliced to the last `num_logits_to_keep` positions before lm_head: a generating
 * prefill computes one row of logits instead of one per prompt token.
 *
 * Weights are the same Hugging Face tensors as the standard export's, in a layout of this
 * graph's own (external data, see onnx-graph.ts), so `DecoderWeights` updates them alike.
 */
import { ConfigError } from '../../common/errors.js';
import { dims as dimsOf, type ModelConfig } from './model-config.js';
import {
  type Ctx,
  type DecoderExportOptions,
  type DecoderGraph,
  decoderModel,
  GraphBuilder,
  linear,
  mlp,
  ropeTableData,
  type WeightDtype,
} from './onnx-graph.js';
import { attr, DataType, type OnnxValueInfo, valueInfo } from './onnx-proto.js';
import { layerPrefix } from './weight-names.js';

const MS = 'com.microsoft';

/** GQA's CPU rotary needs head_dim a multiple of 16. */
export const GQA_HEAD_DIM_MULTIPLE = 16;

export const GQA_DIM_NAMES = {
  batch: 'batch_size',
  seq: 'sequence_length',
  capacity: 'max_sequence_length',
  logits: 'logits_sequence_length',
} as const;

/** Why `config` cannot have the GQA graph, or null when it can. */
export function gqaUnsupported(config: ModelConfig): string | null {
  const d = dimsOf(config);
  if (d.headDim % GQA_HEAD_DIM_MULTIPLE !== 0)
    return `head_dim ${d.headDim} is not a multiple of ${GQA_HEAD_DIM_MULTIPLE} (onnxruntime's GroupQueryAttention rotary)`;
  return null;
}

/** The GQA graph's input and output names in order. */
export function gqaIoNames(layers: number): { inputs: string[]; outputs: string[] } {
  const inputs = ['input_ids', 'seqlens_k', 'total_sequence_length', 'num_logits_to_keep'];
  const outputs = ['logits'];
  for (let i = 0; i < layers; i++) {
    inputs.push(`past_key_values.${i}.key`, `past_key_values.${i}.value`);
    outputs.push(`present.${i}.key`, `present.${i}.value`);
  }
  return { inputs, outputs };
}

/** RMSNorm as onnxruntime's SimplifiedLayerNormalization (float32 math, last axis). */
function simplifiedNorm(ctx: Ctx, x: string, weightName: string, size: number, scope: string): string {
  const { g, d } = ctx;
  return g.within(scope, () =>
    g.op(
      'SimplifiedLayerNormalization',
      [x, g.weight(weightName, [size], weightName)],
      [attr.int('axis', -1), attr.float('epsilon', d.eps), attr.int('stash_type', 1)],
    ),
  );
}

/** RMSNorm(x + skip): returns the normed value and the sum (the next residual). */
function skipNorm(
  ctx: Ctx,
  x: string,
  skip: string,
  weightName: string,
  scope: string,
): { normed: string; sum: string } {
  const { g, d } = ctx;
  return g.within(scope, () => {
    const w = g.weight(weightName, [d.hidden], weightName);
    // Outputs 1 and 2 (mean, inverse std) are not wanted; the names are unique per weight.
    const base = `/${weightName}/SkipSimplifiedLayerNormalization`;
    const [normed, , , sum] = g.opN(
      'SkipSimplifiedLayerNormalization',
      [x, skip, w],
      [`${base}_output_0`, '', '', `${base}_output_3`],
      [attr.float('epsilon', d.eps)],
      MS,
    );
    return { normed, sum };
  });
}

/** Self-attention of layer `l` on x [batch, seq, hidden] through GroupQueryAttention. */
function gqaAttention(ctx: Ctx, x: string, l: number, cos: string, sin: string): string {
  const { g, d } = ctx;
  const p = `${layerPrefix(l)}.self_attn`;
  const q = d.heads * d.headDim;
  const kv = d.kvHeads * d.headDim;
  return g.within('self_attn', () => {
    const project = (name: 'q' | 'k' | 'v', n: number, width: number): string => {
      const t = linear(ctx, x, `${p}.${name}_proj`, d.hidden, width, d.attentionBias);
      if (!d.qkNorm || name === 'v') return t;
      // Qwen3 normalizes each head before RoPE: [b, s, n·hd] → [b, s, n, hd] → norm → back.
      const split = g.op('Reshape', [t, g.ints([0, 0, n, d.headDim])]);
      const normed = simplifiedNorm(ctx, split, `${p}.${name}_norm.weight`, d.headDim, `${name}_norm`);
      return g.op('Reshape', [normed, g.ints([0, 0, width])]);
    };
    const query = project('q', d.heads, q);
    const key = project('k', d.kvHeads, kv);
    const value = project('v', d.kvHeads, kv);
    const [context] = g.opN(
      'GroupQueryAttention',
      [
        query,
        key,
        value,
        `past_key_values.${l}.key`,
        `past_key_values.${l}.value`,
        'seqlens_k',
        'total_sequence_length',
        cos,
        sin,
      ],
      [`/model/layers.${l}/self_attn/GroupQueryAttention_output_0`, `present.${l}.key`, `present.${l}.value`],
      [
        attr.int('num_heads', d.heads),
        attr.int('kv_num_heads', d.kvHeads),
        attr.float('scale', 1 / Math.sqrt(d.headDim)),
        attr.int('do_rotary', 1),
        attr.int('rotary_interleaved', 0),
      ],
      MS,
    );
    return linear(ctx, context, `${p}.o_proj`, q, d.hidden, false);
  });
}

function gqaGraphIo(
  layers: number,
  kvHeads: number,
  headDim: number,
  vocab: number,
): {
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
} {
  const { batch, seq, capacity, logits } = GQA_DIM_NAMES;
  const inputs = [
    valueInfo('input_ids', DataType.INT64, [batch, seq]),
    valueInfo('seqlens_k', DataType.INT32, [batch]),
    valueInfo('total_sequence_length', DataType.INT32, []),
    valueInfo('num_logits_to_keep', DataType.INT64, []),
  ];
  const outputs = [valueInfo('logits', DataType.FLOAT, [batch, logits, vocab])];
  for (let i = 0; i < layers; i++) {
    for (const part of ['key', 'value']) {
      const shape = [batch, kvHeads, capacity, headDim];
      inputs.push(valueInfo(`past_key_values.${i}.${part}`, DataType.FLOAT, shape));
      outputs.push(valueInfo(`present.${i}.${part}`, DataType.FLOAT, shape));
    }
  }
  return { inputs, outputs };
}

/**
 * Builds the GQA decoder graph (called by `buildDecoderGraph` with `attention: 'gqa'`, which
 * has checked `dtype` and `maxPositions`).
 */
export function buildGqaDecoderGraph(
  config: ModelConfig,
  opts: DecoderExportOptions & { dtype: WeightDtype; maxPositions: number },
): DecoderGraph {
  const reason = gqaUnsupported(config);
  if (reason)
    throw new ConfigError(`ONNX export (attention 'gqa'): ${reason}`, { fields: { option: 'attention' } });
  const d = dimsOf(config);
  const { dtype, maxPositions } = opts;
  const g = new GraphBuilder(dtype);
  const ctx: Ctx = { g, d };
  g.within('model', () => {
    const embed = g.weight('model.embed_tokens.weight', [d.vocab, d.hidden], 'model.embed_tokens.weight');
    const embedded = g.within('embed_tokens', () =>
      g.op('Gather', [embed, 'input_ids'], [attr.int('axis', 0)]),
    );
    // GQA's caches hold the first half of each row (cos/sin of the headDim / 2 frequencies).
    const { cos, sin } = g.within('rotary_emb', () => {
      const full = ropeTableData(d.headDim, d.rope, maxPositions);
      const half = d.headDim / 2;
      const halve = (t: Float32Array) => {
        const out = new Float32Array(maxPositions * half);
        for (let p = 0; p < maxPositions; p++)
          out.set(t.subarray(p * d.headDim, p * d.headDim + half), p * half);
        return out;
      };
      return {
        cos: g.table('rope.cos_cache', [maxPositions, half], halve(full.cos)),
        sin: g.table('rope.sin_cache', [maxPositions, half], halve(full.sin)),
      };
    });
    let residual = embedded;
    let normed = simplifiedNorm(
      ctx,
      embedded,
      `${layerPrefix(0)}.input_layernorm.weight`,
      d.hidden,
      'layers.0/input_layernorm',
    );
    for (let l = 0; l < d.layers; l++) {
      const p = layerPrefix(l);
      g.within(`layers.${l}`, () => {
        const attended = gqaAttention(ctx, normed, l, cos, sin);
        const post = skipNorm(
          ctx,
          attended,
          residual,
          `${p}.post_attention_layernorm.weight`,
          'post_attention_layernorm',
        );
        const mlpOut = mlp(ctx, post.normed, l);
        const last = l === d.layers - 1;
        const next = last ? 'model.norm.weight' : `${layerPrefix(l + 1)}.input_layernorm.weight`;
        const after = skipNorm(ctx, mlpOut, post.sum, next, last ? 'final_norm' : 'next_input_layernorm');
        residual = after.sum;
        normed = after.normed;
      });
    }
    // Only the last num_logits_to_keep positions reach lm_head (Slice from −k; −0 = 0: all).
    const kept = g.within('logits_to_keep', () => {
      const start = g.op('Unsqueeze', [g.op('Neg', ['num_logits_to_keep']), g.ints([0])]);
      return g.op('Slice', [normed, start, g.ints([2 ** 53 - 1]), g.ints([1])]);
    });
    const head = g.weight(
      'lm_head.weight.T',
      [d.hidden, d.vocab],
      d.tied ? 'model.embed_tokens.weight' : 'lm_head.weight',
      true,
    );
    g.within('lm_head', () => g.opTo('logits', 'MatMul', [kept, head]));
  });

  return decoderModel(g, gqaGraphIo(d.layers, d.kvHeads, d.headDim, d.vocab), {
    config,
    maxPositions,
    dtype,
    opts,
    attention: 'gqa',
    doc: 'decoder with GroupQueryAttention and a shared past/present key/value buffer',
    opsets: [{ domain: MS, version: 1 }],
  });
}
