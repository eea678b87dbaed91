/**
 * The runner of the in-place decoder graphs ('slots': onnx-export-slots.ts; 'gqa':
 * onnx-export-gqa.ts) with the batch's cache in host memory: one right-padded buffer per
 * tensor (KvSlots) whose rows are the batch's rows. A prompt's prefill writes its row directly,
 * a decode step appends one slot per row (nothing concatenated, no repacking when rows join or
 * leave: a leaving row is replaced by the last one), and a generating prefill computes the
 * logits of its last position only. Scoring still visits every position.
 *
 * The buffer's memory stays when the batch empties (the next batch reuses it instead of
 * faulting fresh pages) until the engine's budget wants it back (`fit`); on a weight swap the
 * next runner takes it over (`runnerFor`).
 */

import { HostRunner } from './host-runner.js';
import { KvSlots } from './kv-batch.js';
import type { OnnxDecoder } from './onnx-decoder.js';
import type { Runner } from './runner.js';

export class InPlaceRunner extends HostRunner implements Runner {
  readonly batchedPrefill = true;
  /** The batch's cache: row b is row b of the batch. */
  private slots: KvSlots;
  /** The decode step's logits, reused across steps. */
  private logitsBuffer = new Float32Array(0);

  constructor(
    decoder: OnnxDecoder,
    private readonly options: { prefillChunkTokens: number; maxBatchSize: number },
    /** An empty cache buffer to start from (a previous runner's, kept memory and all). */
    slots?: KvSlots,
  ) {
    super(decoder);
    if (!decoder.inPlace)
      throw new Error(`InPlaceRunner needs a slots or GQA decoder graph, not ${decoder.kind}`);
    this.slots = slots ?? new KvSlots(decoder.layout, options.maxBatchSize);
  }

  get rows(): number {
    return this.slots.size;
  }

  get cacheBytes(): number {
    return this.slots.heldBytes;
  }

  /**
   * Each prompt gets the next row of the buffer and its prefill writes that row in place (no
   * per-sequence cache, no repacking). Several short prompts share one right-padded step.
   */
  async admit(prompts: readonly (readonly number[])[], _reserveSlots: number): Promise<Float32Array> {
    const slots = this.slots;
    const longest = Math.max(0, ...slots.lens.map((l) => l + 1));
    const widest = Math.max(...prompts.map((p) => p.length));
    slots.reserve(slots.size + prompts.length, Math.max(longest, widest));
    const first = slots.size;
    for (let i = 0; i < prompts.length; i++) slots.add();
    if (prompts.length > 1) return this.admitTogether(prompts, first);
    const prompt = prompts[0];
    let last: Float32Array | undefined;
    await this.forward(
      prompt,
      prompt.length - 1,
      (_, logits) => {
        last = logits;
      },
      true,
      { slots, row: first },
    );
    return last!;
  }

  /** One first-prompt step for the rows from `first` on; returns each prompt's last logits. */
  private async admitTogether(prompts: readonly (readonly number[])[], first: number): Promise<Float32Array> {
    const { vocab } = this.decoder.layout;
    const lens = prompts.map((p) => p.length);
    const width = Math.max(...lens);
    const batch = prompts.length;
    // Rows are right-padded, so each row's last prompt token sits at lens[b] − 1: keeping the
    // last width − min(lens) + 1 positions keeps every row's, and the LM head (a vocab-wide
    // product per position: 151,936 columns on Qwen3) runs on those alone.
    const keep = width - Math.min(...lens) + 1;
    const inputIds = new BigInt64Array(batch * width);
    prompts.forEach((prompt, b) => {
      prompt.forEach((id, j) => {
        inputIds[b * width + j] = BigInt(id);
      });
    });
    const logits = await this.decoder.stepInPlace({
      batch,
      seq: width,
      inputIds,
      pastLens: new Int32Array(batch),
      newLens: Int32Array.from(lens),
      kv: this.slots.rows(first, batch),
      capacity: this.slots.capacity,
      logitsToKeep: keep,
      logits: new Float32Array(batch * keep * vocab),
    });
    // Row b's last position moves to row b of the result: a source row is never before its
    // destination (b × keep + lens[b] − min(lens) ≥ b), nor a later one's before its own.
    for (let b = 0; b < batch; b++) {
      this.slots.lens[first + b] = lens[b];
      const row = b * keep + lens[b] - 1 - (width - keep);
      logits.copyWithin(b * vocab, row * vocab, (row + 1) * vocab);
    }
    return logits.subarray(0, batch * vocab);
  }

  async decode(tokens: readonly number[]): Promise<Float32Array> {
    const { vocab } = this.decoder.layout;
    const slots = this.slots;
    const batch = slots.size;
    // Room for this step's token in every row (regrown every SLOT_GRANULE steps).
    slots.reserve(batch, Math.max(...slots.lens) + 1);
    if (this.logitsBuffer.length < batch * vocab) this.logitsBuffer = new Float32Array(batch * vocab);
    const logits = await this.decoder.stepInPlace({
      batch,
      seq: 1,
      inputIds: BigInt64Array.from(tokens, BigInt),
      // The new token goes to slot len (its position), so the row's length becomes len + 1.
      pastLens: Int32Array.from(slots.lens),
      newLens: new Int32Array(batch).fill(1),
      kv: slots.rows(0, batch),
      capacity: slots.capacity,
      logitsToKeep: 1,
      logits: this.logitsBuffer,
    });
    for (let b = 0; b < batch; b++) slots.lens[b] += 1;
    return logits;
  }

  /** Each dropped row is replaced by the last one (only its live slots move). */
  async drop(rows: readonly number[]): Promise<number[]> {
    const order = Array.from({ length: this.slots.size }, (_, i) => i);
    for (const i of [...rows].sort((a, b) => b - a)) {
      const moved = this.slots.remove(i);
      order[i] = order[moved];
      order.pop();
    }
    return order;
  }

  async clear(): Promise<void> {
    this.slots.clear();
  }

  async fit(): Promise<void> {
    this.slots.fit();
  }

  async score(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
  ): Promise<void> {
    await this.forward(tokenIds, from, visit);
  }

  async release(): Promise<void> {
    this.slots.release();
    await this.decoder.release();
  }

  /**
   * Hands the (empty) cache buffer to the runner that follows this one on a weight swap, so
   * that the next batch reuses its memory; this runner keeps an empty one.
   */
  takeCache(): KvSlots {
    const slots = this.slots;
    if (slots.size > 0) slots.clear();
    this.slots = new KvSlots(this.decoder.layout, this.options.maxBatchSize);
    return slots;
  }

  /**
   * A sequence through the decoder, `prefillChunkTokens` tokens a step (batch 1, so a chunk
   * after the first has a past). A sequence of one chunk is written straight into row
   * `into.row` of `into.slots` (the batch's buffer) when given; a longer one into a buffer of its
   * own that grows chunk by chunk, so that each chunk attends to the slots written so far rather
   * than to a buffer sized for the whole sequence (twice the attention work over a long
   * prompt), and is then copied into `into`. `visit` sees the logits row of every position from
   * `from` on (row p predicts token p + 1) while its chunk's logits are live. With `lastOnly`,
   * each chunk computes only its last position's logits (a generating prefill needs no others).
   */
  private async forward(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
    lastOnly = false,
    into?: { slots: KvSlots; row: number },
  ): Promise<void> {
    const decoder = this.decoder;
    const { vocab } = decoder.layout;
    const n = tokenIds.length;
    const chunk = Math.min(this.options.prefillChunkTokens, n);
    const own = into && n <= chunk ? undefined : new KvSlots(decoder.layout, 1);
    own?.reserve(1, chunk);
    const slots = own ?? into!.slots;
    const row = own ? own.add() : into!.row;
    const logits = new Float32Array((lastOnly ? 1 : chunk) * vocab);
    for (let start = 0; start < n; start += chunk) {
      const end = Math.min(n, start + chunk);
      own?.reserve(1, end);
      // Chunks before the one holding `from` need no logits at all: keep one row.
      const keep = lastOnly || end <= from ? 1 : 0;
      const out = await decoder.stepInPlace({
        batch: 1,
        seq: end - start,
        inputIds: BigInt64Array.from(tokenIds.slice(start, end), BigInt),
        pastLens: Int32Array.of(start),
        newLens: Int32Array.of(end - start),
        kv: slots.rows(row, 1),
        capacity: slots.capacity,
        logitsToKeep: keep,
        logits,
      });
      slots.lens[row] = end;
      const first = keep === 1 ? end - 1 : start;
      for (let p = Math.max(first, from); p < end; p++)
        visit(p, out.subarray((p - first) * vocab, (p - first + 1) * vocab));
    }
    if (own && into) into.slots.copyRow(own, row, into.row);
  }
}
