/**
 * The oracle runner and decoder tests compare against: the logits after a token sequence,
 * computed from scratch on the CPU by the standard graph over the whole sequence at once — no
 * cache, no batching, nothing a runner could get wrong the same way.
 */
import type { OnnxDecoder } from './onnx-decoder.js';

/** The last position's logits of `tokens` run whole through `cpu` (a standard-graph decoder). */
export async function recomputeLastLogits(
  cpu: OnnxDecoder,
  tokens: readonly number[],
): Promise<Float32Array> {
  const { layers, vocab } = cpu.layout;
  const n = tokens.length;
  const out = await cpu.step({
    batch: 1,
    seq: n,
    past: 0,
    inputIds: BigInt64Array.from(tokens, BigInt),
    attentionMask: new BigInt64Array(n).fill(1n),
    positionIds: BigInt64Array.from(tokens, (_, i) => BigInt(i)),
    pastKv: Array.from({ length: 2 * layers }, () => new Float32Array(0)),
  });
  return out.logits.slice((n - 1) * vocab, n * vocab);
}

/** The largest |a[i] − b[i]|. */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}
