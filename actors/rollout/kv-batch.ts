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

/**
 * Capacity grows in steps of this many slots. Small, because a step's work grows with the
 * capacity, not with the rows' lengths: the slots graph scores every slot of the buffer (the
 * ones past a row's length masked out), and onnxruntime-node copies a GQA graph's fetched
 * buffer into a fresh JS array after each run. So the buffer is kept within a step or two of the
 * longest row and regrown (one copy of the live cache) every SLOT_GRANULE decode steps.
 */
export const SLOT_GRANULE = 32;

/** A new cache buffer's size over what is asked for (room for rows to grow into). */
const GROWTH = 1.5;

/**
 * The cache of an in-place decoder (onnx-export-slots.ts, onnx-export-gqa.ts): per layer key
 * then value, one buffer [rows, kvHeads, capacity, headDim]. Row i holds member i's cache
 * right-padded (slots 0 … len − 1); the members in use are rows 0 … size − 1, so the rows a
 * step feeds are one contiguous view. A step adds only the new slots (no concatenation, no
 * repacking when members join or leave: a member that leaves has the last row moved into its
 * place). When the capacity changes, the rows are laid out again inside the same memory where
 * it is big enough (a fresh multi-MiB buffer costs its page faults and a collection, every
 * SLOT_GRANULE decode steps), in a new one with room to spare otherwise.
 *
 * The memory outlives the rows: when the batch empties it is kept, all zero, for the next one
 * (vLLM allocates its KV pool once for the same reason: first-touch page faults ran at
 * 0.26 GB/s on a 2-core VM; at the Qwen3-0.6B shape a 16-request wave spent 2.8–3.1 s of 21–23
 * s growing a fresh buffer, 40 ms reusing one). `heldBytes` says what is kept; `fit()` lets go
 * of what the rows do not need, which the engine does when its memory budget wants it.
 *
 * Every slot at or past a row's length holds 0, whatever rows held it before: the slots graph
 * scores those slots and weighs their values by a probability of exactly 0, and 0 × NaN is NaN,
 * so a departed member's non-finite cache must not linger where another row's step reads.
 */
export class KvSlots {
  /** Slots per row. */
  capacity = 0;
  /** Rows allocated. */
  private rowsHeld = 0;
  /** Per tensor: the memory the views in `kv` are the start of. */
  private store: Float32Array[] = [];
  kv: Float32Array[] = [];
  /** Real length of each row in use. */
  lens: number[] = [];

  constructor(
    private readonly layout: KvLayout,
    /** Rows the buffer may grow to (the engine's batch size). */
    private readonly maxRows: number,
  ) {}

  get size(): number {
    return this.lens.length;
  }

  /** Elements of one row of one tensor. */
  private rowElems(capacity = this.capacity): number {
    return this.layout.kvHeads * capacity * this.layout.headDim;
  }

  /**
   * Makes room for `rows` rows of `slots` slots (the longest row after the next step), keeping
   * every row's live slots; shrinks when more than two granules too big (a long row left).
   */
  reserve(rows: number, slots: number): void {
    const wantSlots = Math.ceil(Math.max(1, slots) / SLOT_GRANULE) * SLOT_GRANULE;
    const needRows = Math.max(rows, this.size, 1);
    const growRows = needRows > this.rowsHeld;
    // With no rows in use a new capacity moves nothing: start the next batch at its own size.
    const resizeSlots =
      slots > this.capacity ||
      this.capacity > wantSlots + 2 * SLOT_GRANULE ||
      (this.size === 0 && this.capacity !== wantSlots);
    if (!growRows && !resizeSlots) return;
    const capacity = resizeSlots ? wantSlots : this.capacity;
    // Rows double (up to the batch size) so that members arriving one by one rarely reallocate.
    const rowsHeld = growRows
      ? Math.min(Math.max(this.maxRows, needRows), Math.max(needRows, 2 * this.rowsHeld))
      : this.rowsHeld;
    const size = rowsHeld * this.rowElems(capacity);
    if ((this.store[0]?.length ?? 0) >= size) this.relayout(capacity);
    else this.reallocate(capacity, size);
    this.capacity = capacity;
    this.rowsHeld = rowsHeld;
    this.kv = this.store.map((t) => t.subarray(0, size));
  }

  /** Bytes of memory the buffer holds (in use or kept for the next rows). */
  get heldBytes(): number {
    return this.store.reduce((n, t) => n + t.byteLength, 0);
  }

  /**
   * Lets go of the memory the rows in use do not need: all of it when there are none, else
   * what is past a fresh buffer for them (with the usual room to spare).
   */
  fit(): void {
    if (this.size === 0) {
      this.release();
      return;
    }
    const size = this.rowsHeld * this.rowElems();
    if (this.heldBytes <= Math.ceil(size * GROWTH) * this.store.length * Float32Array.BYTES_PER_ELEMENT)
      return;
    this.reallocate(this.capacity, size);
    this.kv = this.store.map((t) => t.subarray(0, size));
  }

  /** Moves every row's live slots to a new stride inside the same memory, zeroing the rest. */
  private relayout(capacity: number): void {
    if (capacity === this.capacity) return;
    const { kvHeads, headDim } = this.layout;
    const blocks = this.size * kvHeads;
    const [to, from] = [capacity * headDim, this.capacity * headDim];
    const live = (block: number) => this.lens[Math.floor(block / kvHeads)] * headDim;
    for (const t of this.store) {
      // Growing, blocks move up: the last first, so that none overwrites one still to move.
      for (let i = 0; i < blocks; i++) {
        const b = capacity > this.capacity ? blocks - 1 - i : i;
        t.copyWithin(b * to, b * from, b * from + live(b));
      }
      for (let b = 0; b < blocks; b++) t.fill(0, b * to + live(b), (b + 1) * to);
      if (capacity < this.capacity) t.fill(0, blocks * to, blocks * from);
    }
  }

  /** A new buffer with room to spare (GROWTH), each row's live slots copied in. */
  private reallocate(capacity: number, size: number): void {
    const { kvHeads, headDim } = this.layout;
    const next: Float32Array[] = [];
    for (let t = 0; t < this.layout.layers * 2; t++) {
      const fresh = new Float32Array(Math.ceil(size * GROWTH));
      const old = this.store[t];
      if (old) {
        this.lens.forEach((len, r) => {
          for (let h = 0; h < kvHeads; h++) {
            const from = (r * kvHeads + h) * this.capacity * headDim;
            fresh.set(old.subarray(from, from + len * headDim), (r * kvHeads + h) * capacity * headDim);
          }
        });
      }
      next.push(fresh);
    }
    this.store = next;
  }

  /** Adds a row (its cache still to be written by a prefill) and returns its index. */
  add(len = 0): number {
    if (this.size >= this.rowsHeld) throw new Error('KvSlots: no free row (reserve first)');
    this.lens.push(len);
    return this.lens.length - 1;
  }

  /** Copies row `fromRow` of `source` (its live slots) into row `row`, which takes its length. */
  copyRow(source: KvSlots, fromRow: number, row: number): void {
    const len = source.lens[fromRow];
    if (len > this.capacity) throw new Error(`KvSlots: a row of ${len} slots does not fit ${this.capacity}`);
    const { kvHeads, headDim } = this.layout;
    for (let t = 0; t < this.kv.length; t++) {
      for (let h = 0; h < kvHeads; h++) {
        const from = (fromRow * kvHeads + h) * source.capacity * headDim;
        const to = (row * kvHeads + h) * this.capacity * headDim;
        this.kv[t].set(source.kv[t].subarray(from, from + len * headDim), to);
        this.kv[t].fill(0, to + len * headDim, to + this.capacity * headDim);
      }
    }
    this.lens[row] = len;
  }

  /** Views of rows `from` … `from + count − 1` of every tensor (what a step feeds). */
  rows(from: number, count: number): Float32Array[] {
    const n = this.rowElems();
    return this.kv.map((t) => t.subarray(from * n, (from + count) * n));
  }

  /**
   * Drops row `index`, moving the last row into its place (only its live slots are copied).
   * Returns the index the moved row came from (the caller moves its own bookkeeping alike).
   */
  remove(index: number): number {
    const last = this.size - 1;
    const n = this.rowElems();
    for (const t of this.kv) {
      if (index !== last) {
        const { kvHeads, headDim } = this.layout;
        const len = this.lens[last] * headDim;
        for (let h = 0; h < kvHeads; h++) {
          const from = (last * kvHeads + h) * this.capacity * headDim;
          const to = (index * kvHeads + h) * this.capacity * headDim;
          t.copyWithin(to, from, from + len);
          t.fill(0, to + len, to + this.capacity * headDim);
        }
      }
      t.fill(0, last * n, (last + 1) * n);
    }
    if (index !== last) this.lens[index] = this.lens[last];
    this.lens.pop();
    return last;
  }

  /** Drops every row, keeping the memory (zeroed where rows were) for the next ones. */
  clear(): void {
    for (const t of this.kv) t.fill(0);
    this.lens = [];
  }

  /** Drops every row and lets go of the memory. */
  release(): void {
    this.lens = [];
    this.kv = [];
    this.store = [];
    this.capacity = 0;
    this.rowsHeld = 0;
  }
}
