/**
 * What a request costs the rollout engine in memory, estimated before it runs, so that a prompt
 * that cannot fit is refused with a 400 naming the counts (`ContextLengthError`) instead of the
 * process being OOM-killed halfway through its prefill, and so that a sequence that fits alone
 * but not beside the current batch waits for the batch to shrink.
 *
 * The figures are estimates of what is live at the worst moment besides the weights, in float32
 * (what the engine's decoders keep their cache in):
 * - prefill, chunked: the prompt's past and present caches (a chunk step reads one and writes
 *   the other; on an in-place graph, the row the prompt grows in and the batch's row it is
 *   copied to), the chunk's attention scores (kept three times over: scores, masked, softmax)
 *   and its logits;
 * - decoding: the batch's cache, padded to its longest member, three times over (the cache a
 *   step reads, the one it writes, and a copy while the batch is repacked; an in-place graph's
 *   one buffer with half again of room, and the old one while it is regrown, stay within it).
 */
import type { KvLayout } from './onnx-decoder.js';

const FLOAT_BYTES = 4;
/** Copies of the attention-score tensor a chunk's softmax keeps live (scores, + mask, softmax). */
const SCORE_COPIES = 3;
/** Copies of the batch cache live at once (read, written, repacked). */
const BATCH_KV_COPIES = 3;

export interface MemoryShape extends KvLayout {
  /** Query heads (the attention-score tensor is heads × chunk × past). */
  heads: number;
}

/** Bytes of key and value cache one token holds over all layers. */
export function kvBytesPerToken(shape: MemoryShape): number {
  return shape.layers * 2 * shape.kvHeads * shape.headDim * FLOAT_BYTES;
}

/** The peak of a chunked prefill of `promptTokens` tokens, `chunkTokens` at a time. */
export function prefillBytes(shape: MemoryShape, promptTokens: number, chunkTokens: number): number {
  const chunk = Math.min(chunkTokens, promptTokens);
  const cache = 2 * promptTokens * kvBytesPerToken(shape);
  const scores = SCORE_COPIES * shape.heads * chunk * promptTokens * FLOAT_BYTES;
  const logits = chunk * shape.vocab * FLOAT_BYTES;
  return cache + scores + logits;
}

/** The decode-time cost of a batch whose members will reach these lengths (prompt + maxTokens). */
export function batchBytes(shape: MemoryShape, finalLengths: readonly number[]): number {
  if (finalLengths.length === 0) return 0;
  const longest = Math.max(...finalLengths);
  return BATCH_KV_COPIES * finalLengths.length * longest * kvBytesPerToken(shape);
}

/** Bytes as a short human figure (GiB, MiB or KiB). */
export function formatBytes(bytes: number): string {
  if (bytes >= 2 ** 30) return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
  if (bytes >= 2 ** 20) return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
  return `${(bytes / 2 ** 10).toFixed(1)} KiB`;
}
