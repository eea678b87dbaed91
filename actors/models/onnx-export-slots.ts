/**
 * The decoder graph for an engine that keeps the key/value cache itself: the graph reads the
 * cache where it lies and returns only the keys and values of the tokens it was given, which
 * the engine writes into its buffer. Through onnxruntime-node this is the one I/O under which a
 * decode step copies no cache: the binding passes CPU inputs to onnxruntime without a copy, but
 * turns every fetched output into a new JS array (1.30; for a preallocated fetch too). A graph
 * that returns the cache (optimum's `present`, or GroupQueryAttention's shared buffer, which
 * onnxruntime does update in place) therefore pays for a copy of all of it after every step:
 * more than the step's arithmetic at batch 16 on the `small` preset (README "Rollout engine").
 *
 *   inputs   input_ids              int64   [batch_size, sequence_length]
 *            past_lengths           int64   [batch_size]   slots each row holds before this step
 *            num_logits_to_keep     int64   scalar         logits for the last k positions; 0: all
 *            past_key_values.{i}.key|value  float32 [batch_size, kvHeads, max_sequence_length, headDim]
 *   outputs  logits                 float32 [batch_size, logits_sequence_length, vocab]
 *            new_key_values.{i}.key|value   float32 [batch_size, kvHeads, sequence_length, headDim]
 *
 * Rows are RIGHT-padded: row b's cache is slots 0 … past_lengths[b] − 1 of a buffer of any
 * capacity (slots past a row's length are masked out, whatever they hold); its new tokens sit
 * at positions past_lengths[b] + j (position ids are computed in the graph), and
 * `new_key_values` hold their keys (rotated) and values, for the engine to store at slots
 * past_lengths[b] + j. Rows may have different pasts in one step, and a step of many tokens
 * may follow a past (chunked prefill of a batch): new tokens attend to the row's past and,
 * causally, to each other. Right-padding new tokens is harmless (a padded query's output is
 * not read, and a padded key is visible only to later, padded, queries).
 *
 * Attention is computed in two parts that share one softmax, so the cache is never
 * concatenated: scores of the grouped queries against the past (masked by length) and
 * against the new keys (causal) are joined along the key axis (a [.., rows, keys] tensor, small
 * beside the cache in a decode step), normalised, and split again to weigh the past values and
 * the new ones. Only opset-17 operators: every ONNX runtime and execution provider loads it;
 * onnxruntime fuses the norms (SimplifiedLayerNormalization) and the scaled, transposed
 * products (FusedMatMul) at load. Weights and RoPE tables are the standard export's, in the
 * same layout (onnx-graph.ts), so `DecoderWeights` updates them alike.
 */
import { dims as dimsOf, type ModelConfig } from './model-config.js';
import {
  attentionOutput,
  attentionScores,
  type Ctx,
  type DecoderExportOptions,
  type DecoderGraph,
  decoderModel,
  decoderStack,
  GraphBuilder,
  groupQuery,
  groupRows,
  ONNX_MASKED_SCORE,
  qkvHeads,
  ropeInputs,
  type WeightDtype,
} from './onnx-graph.js';
import { attr, DataType, type OnnxValueInfo, valueInfo } from './onnx-proto.js';

export const SLOTS_DIM_NAMES = {
  batch: 'batch_size',
  seq: 'sequence_length',
  capacity: 'max_sequence_length',
  logits: 'logits_sequence_length',
} as const;

/** The slots graph's input and output names in order. */
export function slotsIoNames(layers: number): { inputs: string[]; outputs: string[] } {
  const inputs = ['input_ids', 'past_lengths', 'num_logits_to_keep'];
  const outputs = ['logits'];
  for (let i = 0; i < layers; i++) {
    inputs.push(`past_key_values.${i}.key`, `past_key_values.${i}.value`);
    outputs.push(`new_key_values.${i}.key`, `new_key_values.${i}.value`);
  }
  return { inputs, outputs };
}

function slotsGraphIo(
  layers: number,
  kvHeads: number,
  headDim: number,
  vocab: number,
): { inputs: OnnxValueInfo[]; outputs: OnnxValueInfo[] } {
  const { batch, seq, capacity, logits } = SLOTS_DIM_NAMES;
  const inputs = [
    valueInfo('input_ids', DataType.INT64, [batch, seq]),
    valueInfo('past_lengths', DataType.INT64, [batch]),
    valueInfo('num_logits_to_keep', DataType.INT64, []),
  ];
  const outputs = [valueInfo('logits', DataType.FLOAT, [batch, logits, vocab])];
  for (let i = 0; i < layers; i++) {
    for (const part of ['key', 'value']) {
      inputs.push(
        valueInfo(`past_key_values.${i}.${part}`, DataType.FLOAT, [batch, kvHeads, capacity, headDim]),
      );
      outputs.push(valueInfo(`new_key_values.${i}.${part}`, DataType.FLOAT, [batch, kvHeads, seq, headDim]));
    }
  }
  return { inputs, outputs };
}

/** What every layer's attention shares: positions' RoPE rows and both masks. */
interface StepInputs {
  cos: string;
  sin: string;
  /** Additive [batch, 1, 1, capacity]: 0 for a row's live slots. */
  pastMask: string;
  /** Additive [seq, seq]: 0 where key j ≤ query i. */
  newMask: string;
  /** The cache's capacity as a 1-D int64 [1] (where the joined scores split). */
  capacity: string;
}

function stepInputs(ctx: Ctx, maxPositions: number): StepInputs {
  const { g } = ctx;
  return g.within('step_inputs', () => {
    const zero = g.ints([0], true);
    const one = g.ints([1], true);
    const axis0 = g.ints([0]);
    const axis1 = g.ints([1]);
    const seq = g.op('Squeeze', [
      g.op('Shape', ['input_ids'], [attr.int('start', 1), attr.int('end', 2)]),
      axis0,
    ]);
    const capacityVec = g.op('Shape', ['past_key_values.0.key'], [attr.int('start', 2), attr.int('end', 3)]);
    const steps = g.op('Range', [zero, seq, one]); // [seq]
    const lengths = g.op('Unsqueeze', ['past_lengths', axis1]); // [batch, 1]
    const positions = g.op('Add', [lengths, g.op('Unsqueeze', [steps, axis0])]); // [batch, seq]
    const { cos, sin } = ropeInputs(ctx, maxPositions, positions);
    const masked = (visible: string) => g.op('Where', [visible, g.scalar(0), g.scalar(ONNX_MASKED_SCORE)]);
    const slots = g.op('Range', [zero, g.op('Squeeze', [capacityVec, axis0]), one]); // [capacity]
    const live = g.op('Less', [g.op('Unsqueeze', [slots, axis0]), lengths]); // [batch, capacity]
    const pastMask = masked(g.op('Unsqueeze', [live, g.ints([1, 2])]));
    const causal = g.op('LessOrEqual', [
      g.op('Unsqueeze', [steps, axis0]),
      g.op('Unsqueeze', [steps, axis1]),
    ]);
    return { cos, sin, pastMask, newMask: masked(causal), capacity: capacityVec };
  });
}

/** Layer `l`'s attention over its past slots and this step's tokens; emits new_key_values.{l}. */
function slotsAttention(ctx: Ctx, x: string, l: number, io: StepInputs): string {
  const { g } = ctx;
  const { query, key, value } = qkvHeads(ctx, x, l, io.cos, io.sin);
  g.opTo(`new_key_values.${l}.key`, 'Identity', [key]);
  g.opTo(`new_key_values.${l}.value`, 'Identity', [value]);
  const grouped = groupQuery(ctx, query);
  const pastScores = g.op('Add', [attentionScores(ctx, grouped, `past_key_values.${l}.key`), io.pastMask]);
  const newScores = g.op('Add', [attentionScores(ctx, grouped, key), groupRows(ctx, io.newMask, 2)]);
  const probs = g.op(
    'Softmax',
    [g.op('Concat', [pastScores, newScores], [attr.int('axis', -1)])],
    [attr.int('axis', -1)],
  );
  const [pastProbs, newProbs] = g.opN(
    'Split',
    [
      probs,
      g.op(
        'Concat',
        [io.capacity, g.op('Shape', [key], [attr.int('start', 2), attr.int('end', 3)])],
        [attr.int('axis', 0)],
      ),
    ],
    2,
    [attr.int('axis', -1)],
  );
  const context = g.op('Add', [
    g.op('MatMul', [pastProbs, `past_key_values.${l}.value`]),
    g.op('MatMul', [newProbs, value]),
  ]);
  return attentionOutput(ctx, context, l);
}

/**
 * Builds the slots decoder graph (called by `buildDecoderGraph` with `attention: 'slots'`,
 * which has checked `dtype` and `maxPositions`).
 */
export function buildSlotsDecoderGraph(
  config: ModelConfig,
  opts: DecoderExportOptions & { dtype: WeightDtype; maxPositions: number },
): DecoderGraph {
  const d = dimsOf(config);
  const g = new GraphBuilder(opts.dtype);
  const ctx: Ctx = { g, d };
  g.within('model', () => {
    const io = stepInputs(ctx, opts.maxPositions);
    decoderStack(
      ctx,
      (x, l) => slotsAttention(ctx, x, l, io),
      // Only the last num_logits_to_keep positions reach lm_head (Slice from −k; −0 = 0: all).
      (final) =>
        g.within('logits_to_keep', () => {
          const start = g.op('Unsqueeze', [g.op('Neg', ['num_logits_to_keep']), g.ints([0])]);
          return g.op('Slice', [final, start, g.ints([2 ** 53 - 1]), g.ints([1])]);
        }),
    );
  });
  return decoderModel(g, slotsGraphIo(d.layers, d.kvHeads, d.headDim, d.vocab), {
    config,
    maxPositions: opts.maxPositions,
    dtype: opts.dtype,
    opts,
    attention: 'slots',
    doc: 'decoder over a key/value cache kept by the caller (new slots out, nothing concatenated)',
  });
}
