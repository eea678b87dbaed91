/**
 * The runner of optimum's standard decoder graph (the cache concatenated and returned every
 * step) with the batch's cache in host memory, left-padded to its longest row (KvBatch). While
 * the batch keeps its rows, each step's `present` is fed back as the next step's `past`
 * untouched; only when rows join or leave is the batch repacked, so the per-token cost does not
 * include copying the cache. An admitted prompt is prefilled into a cache of its own (chunk by
 * chunk, or several short prompts in one left-padded step) and joins the batch at the next
 * decode step: rows admitted together are packed once, and one that finishes on its first token
 * never is.
 */

import { HostRunner } from './host-runner.js';
import { KvBatch, type SequenceKv } from './kv-batch.js';
import type { OnnxDecoder, StepOutput } from './onnx-decoder.js';
import type { Runner } from './runner.js';

/** A row of the batch: packed into the batch's cache, or prefilled and waiting to be. */
interface Row {
  /** The row's own cache until the next pack; undefined once packed. */
  own?: SequenceKv;
  /** Its row in the batch's cache when packed. */
  index: number;
  /** The longest it may grow to (sizes the step buffers once for the batch's life). */
  reserveSlots: number;
}

export class StandardRunner extends HostRunner implements Runner {
  readonly batchedPrefill = true;
  private readonly batch: KvBatch;
  private order: Row[] = [];

  constructor(
    decoder: OnnxDecoder,
    private readonly options: { prefillChunkTokens: number },
  ) {
    super(decoder);
    if (decoder.kind !== 'standard')
      throw new Error(`StandardRunner needs the standard decoder graph, not ${decoder.kind}`);
    this.batch = new KvBatch(decoder.layout);
  }

  get rows(): number {
    return this.order.length;
  }

  /** The live cache: the packed batch and the caches of rows waiting to join it. */
  get cacheBytes(): number {
    const bytes = (kv: Float32Array[]) => kv.reduce((n, t) => n + t.byteLength, 0);
    const packed = this.order.some((r) => !r.own) ? bytes(this.batch.kv) : 0;
    return this.order.reduce((n, r) => n + (r.own ? bytes(r.own.kv) : 0), packed);
  }

  async admit(prompts: readonly (readonly number[])[], reserveSlots: number): Promise<Float32Array> {
    if (prompts.length > 1) return this.admitTogether(prompts, reserveSlots);
    const prompt = prompts[0];
    let last: Float32Array | undefined;
    const own = await this.forward(prompt, prompt.length - 1, (_, logits) => {
      last = logits;
    });
    this.order.push({ own, index: -1, reserveSlots });
    return last!;
  }

  /**
   * Prefills `prompts` in one decoder step, left-padded to the longest (padding masked out, as
   * in a decode step): one step's overhead instead of one per request when many arrive
   * together. Returns each prompt's last logits.
   */
  private async admitTogether(
    prompts: readonly (readonly number[])[],
    reserveSlots: number,
  ): Promise<Float32Array> {
    const { layers, vocab } = this.decoder.layout;
    const lens = prompts.map((p) => p.length);
    const width = Math.max(...lens);
    const batch = prompts.length;
    const inputIds = new BigInt64Array(batch * width);
    const attentionMask = new BigInt64Array(batch * width);
    const positionIds = new BigInt64Array(batch * width);
    prompts.forEach((prompt, b) => {
      const pad = width - lens[b];
      prompt.forEach((id, j) => {
        inputIds[b * width + pad + j] = BigInt(id);
        attentionMask[b * width + pad + j] = 1n;
        positionIds[b * width + pad + j] = BigInt(j);
      });
    });
    const out = await this.decoder.step({
      batch,
      seq: width,
      past: 0,
      inputIds,
      attentionMask,
      positionIds,
      pastKv: Array.from({ length: layers * 2 }, () => new Float32Array(0)),
    });
    const padded = new KvBatch(this.decoder.layout);
    padded.adopt(out.presentKv, lens);
    // Every row ends at the last position (left-padded): row b's moves to row b of the result,
    // never from before its destination.
    for (let b = 0; b < batch; b++) {
      this.order.push({ own: padded.extract(b), index: -1, reserveSlots });
      const row = b * width + width - 1;
      out.logits.copyWithin(b * vocab, row * vocab, (row + 1) * vocab);
    }
    return out.logits.subarray(0, batch * vocab);
  }

  async decode(tokens: readonly number[]): Promise<Float32Array> {
    if (this.order.some((r) => r.own)) this.pack();
    const batch = this.batch;
    const out = await this.decoder.step(
      {
        batch: batch.size,
        seq: 1,
        past: batch.past,
        inputIds: BigInt64Array.from(tokens, BigInt),
        attentionMask: batch.stepMask(),
        // A row's next position is its length (prompt + tokens fed so far).
        positionIds: BigInt64Array.from(batch.lens, BigInt),
        pastKv: batch.kv,
      },
      batch.stepOutputs(),
    );
    batch.advance(out.presentKv);
    return out.logits;
  }

  /**
   * Rows leave in order. When packed rows leave, the batch is repacked at once (their memory
   * goes now, not after the next prefill); rows still waiting to be packed just leave.
   */
  async drop(rows: readonly number[]): Promise<number[]> {
    const gone = new Set(rows);
    const kept = this.order.flatMap((_, i) => (gone.has(i) ? [] : [i]));
    const repack = rows.some((i) => !this.order[i].own);
    this.order = kept.map((i) => this.order[i]);
    if (repack) this.pack();
    return kept;
  }

  async clear(): Promise<void> {
    this.order = [];
    this.batch.pack([]);
  }

  /** Nothing to give back: the batch's buffers follow its rows (KvBatch lets oversized ones go). */
  async fit(): Promise<void> {}

  async score(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
  ): Promise<void> {
    await this.forward(tokenIds, from, visit);
  }

  async release(): Promise<void> {
    await this.clear();
    await this.decoder.release();
  }

  /** Rebuilds the batch's cache from its rows, in order (packed rows cut out of the old one). */
  private pack(): void {
    const caches = this.order.map((r) => r.own ?? this.batch.extract(r.index));
    this.batch.pack(caches, Math.max(0, ...this.order.map((r) => r.reserveSlots)));
    this.order = this.order.map((r, index) => ({ index, reserveSlots: r.reserveSlots }));
  }

  /**
   * One sequence from its first token through the decoder, `prefillChunkTokens` tokens a step,
   * the cache growing between steps; `visit` sees the logits row of every position from `from`
   * on (row p predicts token p + 1) while its chunk's logits are live. Two cache buffers sized
   * for the whole sequence are used in turn (a step reads its past from one and writes its
   * present into the other), so no step allocates. Returns the sequence's cache.
   */
  private async forward(
    tokenIds: readonly number[],
    from: number,
    visit: (position: number, logits: Float32Array) => void,
  ): Promise<SequenceKv> {
    const decoder = this.decoder;
    const { layers, kvHeads, headDim, vocab } = decoder.layout;
    const n = tokenIds.length;
    const chunk = Math.min(this.options.prefillChunkTokens, n);
    const tensors = layers * 2;
    const slot = kvHeads * headDim;
    const sets = n <= chunk ? 1 : 2;
    const buffers = Array.from({ length: sets }, () =>
      Array.from({ length: tensors }, () => new Float32Array(n * slot)),
    );
    const logits = new Float32Array(chunk * vocab);
    let pastKv: Float32Array[] = Array.from({ length: tensors }, () => new Float32Array(0));
    for (let start = 0, step = 0; start < n; start += chunk, step++) {
      const end = Math.min(n, start + chunk);
      const seq = end - start;
      const into: StepOutput = {
        logits: logits.subarray(0, seq * vocab),
        presentKv: buffers[step % sets].map((b) => b.subarray(0, end * slot)),
      };
      const out = await decoder.step(
        {
          batch: 1,
          seq,
          past: start,
          inputIds: BigInt64Array.from(tokenIds.slice(start, end), BigInt),
          attentionMask: new BigInt64Array(end).fill(1n),
          positionIds: BigInt64Array.from({ length: seq }, (_, i) => BigInt(start + i)),
          pastKv,
        },
        into,
      );
      for (let p = Math.max(start, from); p < end; p++)
        visit(p, out.logits.subarray((p - start) * vocab, (p - start + 1) * vocab));
      pastKv = out.presentKv;
    }
    return { len: n, kv: pastKv };
  }
}
