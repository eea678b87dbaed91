/**
 * The LoRA merge W' = W + scale·B·A shared by the trainer (which publishes merged weights or
 * adapters) and the rollout engine (which merges adapters it receives into its own weights):
 * one function, so both sides compute the same bits. Free of TensorFlow.js on purpose: rollout
 * engines import it.
 */
import { ConfigError } from '../../common/errors.js';

const ADAPTER = /^(.*)\.lora_([AB])\.weight$/;

/** PEFT's adapter name `<module>.lora_A.weight` → { target: `<module>.weight`, part: 'A' }; null otherwise. */
export function parseLoraName(name: string): { target: string; part: 'A' | 'B' } | null {
  const m = ADAPTER.exec(name);
  return m ? { target: `${m[1]}.weight`, part: m[2] as 'A' | 'B' } : null;
}

/**
 * W + scale·B·A for W [out, in], A [rank, in], B [out, rank] (scale = alpha/rank); a new array.
 * Without `dims`, out/in/rank follow from the three lengths (rank² = |A|·|B| / |W|).
 */
export function mergeLora(
  base: Float32Array,
  A: Float32Array,
  B: Float32Array,
  scale: number,
  dims?: { out: number; in: number; rank: number },
): Float32Array {
  let d = dims;
  if (!d) {
    const rank = Math.round(Math.sqrt((A.length * B.length) / base.length));
    d = { rank, in: rank > 0 ? A.length / rank : 0, out: rank > 0 ? B.length / rank : 0 };
  }
  const { out: o, in: n, rank: r } = d;
  if (r < 1 || base.length !== o * n || A.length !== r * n || B.length !== o * r || !Number.isInteger(n)) {
    throw new ConfigError(
      `mergeLora: W (${base.length}), A (${A.length}) and B (${B.length}) do not fit W [out, in], A [rank, in], B [out, rank]` +
        (dims ? ` with out=${o}, in=${n}, rank=${r}` : ''),
    );
  }
  const merged = new Float32Array(base.length);
  for (let row = 0; row < o; row++) {
    for (let col = 0; col < n; col++) {
      let s = 0;
      for (let k = 0; k < r; k++) s += B[row * r + k] * A[k * n + col];
      merged[row * n + col] = base[row * n + col] + scale * s;
    }
  }
  return merged;
}
