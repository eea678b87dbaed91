/**
 * The KV cache of the sequences decoding together. While the batch keeps its members, each
 * step's `present` tensors are fed back as the next step's `past` untouched; only when a
 * sequence joins or leaves is the batch repacked (left-padded to the longest member, padding
 * masked out), so the per-token cost does not include copying the cache.
 */
import type { KvLayout } from './onnx-decoder.js';

/** One sequence's own cache: per layer key then value, each [kvHeads, len, headDim]. */
export interface SequenceKv {
  len: number;
  kv: Float32Array[];
}

export class KvBatch {
  /** Slots per sequence (the longest member's length; shorter ones are left-padded). */
  past = 0;
  /**
   * Two sets of step-output buffers, used in turn: a step reads the cache from one set and
   * writes the next into the other. Fresh multi-MiB outputs every step cost more in page
   * faults than the step's arithmetic.
   */
  private readonly arenas: Float32Array[][] = [[], []];
  private arena = 0;
  kv: Float32Array[] = [];
  /** Real length of each member, in batch order. */
  lens: number[] = [];

  constructor(private readonly layout: KvLayout) {}

  get size(): number {
    return this.lens.length;
  }

  /**
   * Builds the batch from the members' own caches. `reserveSlots` (the longest any member may
   * grow to) sizes the step-output buffers once for the batch's whole life, rather than growing
   * them (fresh multi-MiB buffers, page faults) as the cache lengthens.
   */
  pack(members: SequenceKv[], reserveSlots = 0): void {
    const { layers, kvHeads, headDim } = this.layout;
    const past = Math.max(0, ...members.map((m) => m.len));
    const batch = members.length;
    const kv: Float32Array[] = [];
    for (let t = 0; t < layers * 2; t++) {
      const out = new Float32Array(batch * kvHeads * past * headDim);
      members.forEach((m, b) => {
        const src = m.kv[t];
        const pad = past - m.len;
        for (let h = 0; h < kvHeads; h++) {
          const from = h * m.len * headDim;
          const to = ((b * kvHeads + h) * past + pad) * headDim;
          out.set(src.subarray(from, from + m.len * headDim), to);
        }
      });
      kv.push(out);
    }
    this.past = past;
    this.kv = kv;
    this.lens = members.map((m) => m.len);
    this.reserve(reserveSlots);
  }

  /**
   * Takes a left-padded cache as it stands (a batched prefill's `present`: per layer key then
   * value, [members, kvHeads, past, headDim], member b's real slots the last `lens[b]`).
   */
  adopt(kv: Float32Array[], lens: number[]): void {
    this.past = Math.max(0, ...lens);
    this.kv = kv;
    this.lens = [...lens];
  }

  /**
   * Sizes both step-output buffer sets for `slots` slots per member: grown when short, and let
   * go when four times too big (a long sequence has left), so that they do not hold its memory.
   */
  private reserve(slots: number): void {
    const { layers, kvHeads, headDim } = this.layout;
    const size = this.size * kvHeads * slots * headDim;
    for (const set of this.arenas) {
      for (let t = 1; t <= layers * 2; t++) {
        const held = set[t]?.length ?? -1;
        if (held < size || held > 4 * size) set[t] = new Float32Array(size);
      }
    }
  }

  /** A member's own cache, cut out of the batch (its padding dropped). */
  extract(index: number): SequenceKv {
    const { layers, kvHeads, headDim } = this.layout;
    const len = this.lens[index];
    const pad = this.past - len;
    const kv: Float32Array[] = [];
    for (let t = 0; t < layers * 2; t++) {
      const out = new Float32Array(kvHeads * len * headDim);
      for (let h = 0; h < kvHeads; h++) {
        const from = ((index * kvHeads + h) * this.past + pad) * headDim;
        out.set(this.kv[t].subarray(from, from + len * headDim), h * len * headDim);
      }
      kv.push(out);
    }
    return { len, kv };
  }

  /** [batch, past + 1]: which slots each member may attend to in a one-token step. */
  stepMask(): BigInt64Array {
    const width = this.past + 1;
    const mask = new BigInt64Array(this.size * width);
    this.lens.forEach((len, b) => {
      for (let s = this.past - len; s < width; s++) mask[b * width + s] = 1n;
    });
    return mask;
  }

  /** Output buffers for the next one-token step of this batch: logits and `present`. */
  stepOutputs(): { logits: Float32Array; presentKv: Float32Array[] } {
    const { layers, kvHeads, headDim, vocab } = this.layout;
    this.arena ^= 1;
    const set = this.arenas[this.arena];
    const view = (i: number, size: number) => {
      let buffer = set[i];
      if (!buffer || buffer.length < size) {
        buffer = new Float32Array(Math.ceil(size * 1.25));
        set[i] = buffer;
      }
      return buffer.subarray(0, size);
    };
    const kvSize = this.size * kvHeads * (this.past + 1) * headDim;
    return {
      logits: view(0, this.size * vocab),
      presentKv: Array.from({ length: layers * 2 }, (_, t) => view(t + 1, kvSize)),
    };
  }

  /** Takes a step's `present` (past + 1 slots) as the new cache. */
  advance(present: Float32Array[]): void {
    this.kv = present;
    this.past += 1;
    this.lens = this.lens.map((l) => l + 1);
  }
}
