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
/**
 * Floats kept per token of the padded batch, per size of the model; `vocab` per row of logits
 * (the response tokens: the LM head runs on those alone, its input gathered, 24 → 26).
 */
const PER_TOKEN = { vocab: 26, hiddenPerLayer: 44, intermediatePerLayer: 16, headDimPerLayer: 36 };
/**
 * Floats kept per (query, key) pair, per attention head and layer (on wasm, attention's
 * per-entry products hold a score matrix's parts beside their concatenation: 14 → 19).
 */
const PER_PAIR_PER_HEAD_LAYER = 19;
/**
 * Gradient checkpointing: layers' worth of the per-layer terms alive at once (the layer being
 * differentiated, computed again under its own tape, beside its gradients: measured ~1.1 on
 * 4- and 8-layer models, rounded up), and floats kept per token for every layer (its saved
 * input; the residual stream's gradient).
 */
const CHECKPOINT_LIVE_LAYERS = 1.2;
const CHECKPOINT_PER_HIDDEN_LAYER = 2;
/** Gradients and their flat copy: floats per trainable parameter. */
const PER_PARAMETER = 2;
/** Top-K distillation: floats per teacher token per response position. */
const PER_TOPK = 12;

export interface PassShape {
  /** Samples in the pass. */
  samples: number;
  /** Their padded length (the longest sample's tokens − 1: inputs and targets are shifted). */
  width: number;
  /**
   * Positions whose logits the pass computes (the response tokens, when the trainer runs the LM
   * head on those alone). Default: every position of the padded pass.
   */
  logitRows?: number;
  /** The teacher's K when the pass distils (0 or absent: no distillation). */
  distillTopK?: number;
  /** Gradient checkpointing (TfjsDecoder's `checkpoint`): layers keep their inputs only. */
  checkpoint?: boolean;
}

/** Bytes of activations and gradients one pass of this shape keeps at its peak (an upper estimate). */
export function passBytes(d: Dims, trainableParameters: number, shape: PassShape): number {
  const layerPerToken =
    PER_TOKEN.hiddenPerLayer * d.hidden +
    PER_TOKEN.intermediatePerLayer * d.intermediate +
    PER_TOKEN.headDimPerLayer * (d.heads + d.kvHeads) * d.headDim;
  const liveLayers = shape.checkpoint ? Math.min(d.layers, CHECKPOINT_LIVE_LAYERS) : d.layers;
  const perToken =
    liveLayers * layerPerToken + (shape.checkpoint ? CHECKPOINT_PER_HIDDEN_LAYER * d.hidden * d.layers : 0);
  const perLogitRow = PER_TOKEN.vocab * d.vocab + PER_TOPK * (shape.distillTopK ?? 0);
  const perSample =
    perToken * shape.width + PER_PAIR_PER_HEAD_LAYER * liveLayers * d.heads * shape.width ** 2;
  const logitRows = shape.logitRows ?? shape.samples * shape.width;
  return (
    BYTES_PER_FLOAT *
    (shape.samples * perSample + perLogitRow * logitRows + PER_PARAMETER * trainableParameters)
  );
}

/**
 * Splits sample lengths (tokens each) into passes, longest first so each pass pads little:
 * every pass holds at most `maxSamples` samples and its estimate stays within `budgetBytes`,
 * except a single sample that alone exceeds the budget, which gets a pass of its own. `cost`
 * sees the pass's samples, padded width and logit rows (the sum of `logitRows`, one count per
 * sample; absent: its samples × width). Returns the samples' indices per pass.
 */
export function planPasses(
  lengths: readonly number[],
  cost: (samples: number, width: number, logitRows: number) => number,
  budgetBytes: number,
  maxSamples = Number.POSITIVE_INFINITY,
  logitRows?: readonly number[],
): number[][] {
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[b] - lengths[a] || a - b);
  const passes: number[][] = [];
  let current: number[] = [];
  let width = 0;
  let rows = 0;
  for (const i of order) {
    // Longest first: the pass's width is its first sample's.
    const w = current.length === 0 ? lengths[i] - 1 : width;
    const mine = logitRows?.[i];
    const rowsWith = (n: number, r: number) => (logitRows ? r : n * w);
    if (
      current.length > 0 &&
      (current.length >= maxSamples ||
        cost(current.length + 1, w, rowsWith(current.length + 1, rows + (mine ?? 0))) > budgetBytes)
    ) {
      passes.push(current);
      current = [];
      rows = 0;
    }
    if (current.length === 0) width = lengths[i] - 1;
    current.push(i);
    rows += mine ?? 0;
  }
  if (current.length > 0) passes.push(current);
  return passes;
}
