/**
 * How much memory one forward/backward pass of the trainer needs, and how a batch is split
 * into passes that fit. TensorFlow.js keeps every intermediate of the forward pass for the
 * backward one, so a pass's memory grows with its samples, their padded length, and
 * quadratically with that length in attention (no flash attention on these backends). On the
 * wasm backend the whole heap is capped at 4 GiB: a batch that does not fit does not fail
 * cleanly, the module aborts ("memory access out of bounds") and the process is unusable.
 *
 * The coefficients are floats kept per token (per vocabulary entry, per hidden unit and layer,
 * …) and per token pair (per head and layer), measured with `tf.profile` on the RL loss (the
 * costliest objective: PPO ratio, entropy, KL, temperature) over models that vary one size at a
 * time, rounded up; pass-memory.test.ts checks the estimate against measured peaks.
 */
import type { Dims } from '../models/model-config.js';

const BYTES_PER_FLOAT = 4;
/** Floats kept per token of the padded batch, per size of the model. */
const PER_TOKEN = { vocab: 24, hiddenPerLayer: 44, intermediatePerLayer: 16, headDimPerLayer: 36 };
/**
 * Floats kept per (query, key) pair, per attention head and layer (on wasm, attention's
 * per-entry products hold a score matrix's parts beside their concatenation: 14 → 19).
 */
const PER_PAIR_PER_HEAD_LAYER = 19;
/** Gradients and their flat copy: floats per trainable parameter. */
const PER_PARAMETER = 2;
/** Top-K distillation: floats per teacher token per response position. */
const PER_TOPK = 12;

export interface PassShape {
  /** Samples in the pass. */
  samples: number;
  /** Their padded length (the longest sample's tokens − 1: inputs and targets are shifted). */
  width: number;
  /** The teacher's K when the pass distils (0 or absent: no distillation). */
  distillTopK?: number;
}

/** Bytes of activations and gradients one pass of this shape keeps at its peak (an upper estimate). */
export function passBytes(d: Dims, trainableParameters: number, shape: PassShape): number {
  const perToken =
    PER_TOKEN.vocab * d.vocab +
    d.layers *
      (PER_TOKEN.hiddenPerLayer * d.hidden +
        PER_TOKEN.intermediatePerLayer * d.intermediate +
        PER_TOKEN.headDimPerLayer * (d.heads + d.kvHeads) * d.headDim) +
    PER_TOPK * (shape.distillTopK ?? 0);
  const perSample = perToken * shape.width + PER_PAIR_PER_HEAD_LAYER * d.layers * d.heads * shape.width ** 2;
  return BYTES_PER_FLOAT * (shape.samples * perSample + PER_PARAMETER * trainableParameters);
}

/**
 * Splits sample lengths (tokens each) into passes, longest first so each pass pads little:
 * every pass holds at most `maxSamples` samples and its estimate stays within `budgetBytes`,
 * except a single sample that alone exceeds the budget, which gets a pass of its own. Returns
 * the samples' indices per pass.
 */
export function planPasses(
  lengths: readonly number[],
  cost: (samples: number, width: number) => number,
  budgetBytes: number,
  maxSamples = Number.POSITIVE_INFINITY,
): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[b] - lengths[a] || a - b);
  const passes: number[][] = [];
  let current: number[] = [];
  let width = 0;
  for (const i of order) {
    // Longest first: the pass's width is its first sample's.
    const w = current.length === 0 ? lengths[i] - 1 : width;
    if (current.length > 0 && (current.length >= maxSamples || cost(current.length + 1, w) > budgetBytes)) {
      passes.push(current);
      current = [];
    }
    if (current.length === 0) width = lengths[i] - 1;
    current.push(i);
  }
  if (current.length > 0) passes.push(current);
  return passes;
}
