/**
 * A decoder whose KV cache never leaves the device: onnxruntime's GroupQueryAttention graph
 * (onnx-export-gqa.ts) on a GPU execution provider, its `present` outputs bound to device memory
 * (`preferredOutputLocation: 'gpu-buffer'`) and fed back as the next step's `past`. Only what
 * sampling needs crosses to the host: the logits of each row's last position.
 *
 * The cache is one device tensor per layer and key/value, [rows, kvHeads, slots, headDim], rows
 * RIGHT-padded (row b's live slots are its first `lens[b]`), as GQA keeps them: a step writes
 * row b's new keys and values at slot lens[b] and returns the cache one slot longer. Joining rows
 * (their prompts prefilled into a cache of their own) and leaving rows are done on the device by
 * a second session (kv-ops-graph.ts): the cache is moved only when the batch changes, never
 * copied to the host. A replaced device tensor is disposed at once.
 *
 * This class runs onnxruntime synchronously on whatever thread holds it: the engine keeps it in a
 * worker thread (device-worker.ts) so that its event loop stays free while a step runs.
 */
import * as ort from 'onnxruntime-node';
import { ConfigError } from '../../common/errors.js';
import type { ExecutionProvider } from '../models/execution-provider.js';
import { gqaIoNames } from '../models/onnx-export-gqa.js';
import { MODEL_DATA_FILE } from '../models/onnx-graph.js';
import { type KvOp, kvOpsGraph } from './kv-ops-graph.js';
import type { KvLayout } from './onnx-decoder.js';

export interface DeviceDecoderOptions {
  graph: Uint8Array;
  data: Uint8Array;
  layout: KvLayout;
  provider: ExecutionProvider;
  /** Tokens per prefill and scoring step. */
  chunkTokens: number;
}

/** Logits of a call and the milliseconds spent inside onnxruntime's runs. */
export interface DeviceOutput {
  logits: Float32Array;
  runMs: number;
}

type Feeds = Record<string, ort.Tensor>;

/** A sequence being scored alone (teacher logprobs): its own cache, grown chunk by chunk. */
interface Scoring {
  tokenIds: number[];
  from: number;
  next: number;
  kv: ort.Tensor[] | null;
}

export class DeviceDecoder {
  private kv: ort.Tensor[] | null = null;
  /** Live slots of each row. */
  private lens: number[] = [];
  /** The cache's slot dimension (the longest row). */
  private slots = 0;
  private scoring?: Scoring;
  private readonly pastNames: string[];
  private readonly presentNames: string[];

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly ops: Record<KvOp, ort.InferenceSession>,
    readonly layout: KvLayout,
    readonly provider: ExecutionProvider,
    private readonly chunkTokens: number,
  ) {
    const io = gqaIoNames(layout.layers);
    this.pastNames = io.inputs.filter((n) => n.startsWith('past_key_values.'));
    this.presentNames = io.outputs.filter((n) => n.startsWith('present.'));
  }

  static async load(o: DeviceDecoderOptions): Promise<DeviceDecoder> {
    if (!(Number.isInteger(o.chunkTokens) && o.chunkTokens >= 1)) {
      throw new ConfigError(`chunkTokens must be a whole number ≥ 1, got ${o.chunkTokens}`);
    }
    const { layers, kvHeads, headDim } = o.layout;
    const io = gqaIoNames(layers);
    const onDevice = (names: string[]) =>
      Object.fromEntries(names.map((n) => [n, 'gpu-buffer' as const])) as Record<string, 'gpu-buffer'>;
    const presents = io.outputs.filter((n) => n.startsWith('present.'));
    const session = await ort.InferenceSession.create(o.graph, {
      executionProviders: [o.provider],
      graphOptimizationLevel: 'all',
      externalData: [{ path: MODEL_DATA_FILE, data: o.data }],
      preferredOutputLocation: { logits: 'cpu', ...onDevice(presents) },
    });
    const tensors = layers * 2;
    const outs = Array.from({ length: tensors }, (_, t) => `out.${t}`);
    const opSession = (op: KvOp) =>
      ort.InferenceSession.create(kvOpsGraph(op, tensors, kvHeads, headDim), {
        executionProviders: [o.provider],
        preferredOutputLocation: onDevice(outs),
      });
    const ops = { join: await opSession('join'), keep: await opSession('keep') };
    if (session.inputNames.join() !== io.inputs.join()) {
      throw new ConfigError(
        `the device decoder needs the GQA decoder graph (inputs ${io.inputs.slice(0, 4).join(', ')}, …), got ${session.inputNames.slice(0, 4).join(', ')}, …`,
      );
    }
    return new DeviceDecoder(session, ops, o.layout, o.provider, o.chunkTokens);
  }

  get rows(): number {
    return this.lens.length;
  }

  /**
   * Prefills `prompts` as new rows after the current ones and returns each one's last-position
   * logits, [prompts.length × vocab]: several prompts in one right-padded step (the caller
   * groups only short ones), one prompt in chunks, its cache growing between them.
   */
  async admit(prompts: readonly (readonly number[])[]): Promise<DeviceOutput> {
    if (prompts.length === 0) throw new ConfigError('admit needs at least one prompt');
    const { vocab } = this.layout;
    const out = new Float32Array(prompts.length * vocab);
    let runMs = 0;
    let fresh: ort.Tensor[];
    const lens = prompts.map((p) => p.length);
    if (prompts.length > 1) {
      const width = Math.max(...lens);
      // Rows are right-padded, so row b's last token sits at lens[b] − 1: the last
      // width − min + 1 positions hold every row's, and the LM head runs on those alone.
      const keep = width - Math.min(...lens) + 1;
      const ids = new BigInt64Array(prompts.length * width);
      prompts.forEach((p, b) => {
        for (let j = 0; j < p.length; j++) ids[b * width + j] = BigInt(p[j]);
      });
      const r = await this.run(
        this.feeds(
          ids,
          prompts.length,
          width,
          Int32Array.from(lens, (n) => n - 1),
          width,
          keep,
          null,
        ),
      );
      runMs += r.ms;
      const logits = r.out.logits.data as Float32Array;
      lens.forEach((n, b) => {
        const row = (b * keep + n - 1 - (width - keep)) * vocab;
        out.set(logits.subarray(row, row + vocab), b * vocab);
      });
      fresh = this.presentOf(r.out);
    } else {
      const prompt = prompts[0];
      let kv: ort.Tensor[] | null = null;
      for (let start = 0; start < prompt.length; start += this.chunkTokens) {
        const end = Math.min(prompt.length, start + this.chunkTokens);
        const ids = BigInt64Array.from(prompt.slice(start, end), BigInt);
        const r = await this.run(this.feeds(ids, 1, end - start, Int32Array.of(end - 1), end, 1, kv));
        runMs += r.ms;
        dispose(kv);
        kv = this.presentOf(r.out);
        if (end === prompt.length) out.set((r.out.logits.data as Float32Array).subarray(0, vocab));
      }
      fresh = kv!;
    }
    if (this.kv === null) {
      this.kv = fresh;
      this.slots = Math.max(...lens);
    } else {
      const slots = Math.max(this.slots, ...lens);
      const feeds: Feeds = { slots: int64([slots]) };
      this.kv.forEach((t, i) => {
        feeds[`a.${i}`] = t;
        feeds[`b.${i}`] = fresh[i];
      });
      const r = await timed(() => this.ops.join.run(feeds));
      runMs += r.ms;
      dispose(this.kv);
      dispose(fresh);
      this.kv = this.kv.map((_, i) => r.out[`out.${i}`]);
      this.slots = slots;
    }
    this.lens.push(...lens);
    return { logits: out, runMs };
  }

  /** One decode step: row b takes `tokens[b]`. Returns [rows × vocab] logits. */
  async decode(tokens: readonly number[]): Promise<DeviceOutput> {
    if (this.kv === null || tokens.length !== this.lens.length) {
      throw new ConfigError(`decode got ${tokens.length} tokens for ${this.lens.length} rows`);
    }
    const rows = this.lens.length;
    const total = this.slots + 1;
    const r = await this.run(
      this.feeds(BigInt64Array.from(tokens, BigInt), rows, 1, Int32Array.from(this.lens), total, 1, this.kv),
    );
    dispose(this.kv);
    this.kv = this.presentOf(r.out);
    this.slots = total;
    for (let b = 0; b < rows; b++) this.lens[b] += 1;
    return { logits: ownArray(r.out.logits.data as Float32Array), runMs: r.ms };
  }

  /** Removes these rows; the survivors keep their order. Returns their former indices. */
  async drop(rows: readonly number[]): Promise<number[]> {
    const gone = new Set(rows);
    const order = this.lens.map((_, i) => i).filter((i) => !gone.has(i));
    if (order.length === this.lens.length) return order;
    if (order.length === 0 || this.kv === null) {
      await this.clear();
      return [];
    }
    const lens = order.map((i) => this.lens[i]);
    const slots = Math.max(...lens);
    const feeds: Feeds = { rows: int64(order), slots: int64([slots]) };
    this.kv.forEach((t, i) => {
      feeds[`kv.${i}`] = t;
    });
    const out = await this.ops.keep.run(feeds);
    dispose(this.kv);
    this.kv = this.kv.map((_, i) => out[`out.${i}`]);
    this.lens = lens;
    this.slots = slots;
    return order;
  }

  async clear(): Promise<void> {
    dispose(this.kv);
    this.kv = null;
    this.lens = [];
    this.slots = 0;
  }

  /** Starts scoring a sequence alone (not a row of the batch). */
  scoreStart(tokenIds: number[], from: number): void {
    dispose(this.scoring?.kv ?? null);
    this.scoring = { tokenIds, from, next: 0, kv: null };
  }

  /**
   * The next chunk of the sequence being scored: the logits of its positions from max(first,
   * from) on (`first` is the position of the first row returned), and whether it was the last.
   */
  async scoreNext(): Promise<{ first: number; logits: Float32Array; done: boolean }> {
    const s = this.scoring;
    if (!s) throw new ConfigError('scoreNext without scoreStart');
    const { vocab } = this.layout;
    for (;;) {
      const start = s.next;
      const end = Math.min(s.tokenIds.length, start + this.chunkTokens);
      // A chunk before the one holding `from` needs no logits: keep one row.
      const keep = end <= s.from ? 1 : 0;
      const ids = BigInt64Array.from(s.tokenIds.slice(start, end), BigInt);
      const r = await this.run(this.feeds(ids, 1, end - start, Int32Array.of(end - 1), end, keep, s.kv));
      dispose(s.kv);
      s.kv = this.presentOf(r.out);
      s.next = end;
      const done = end === s.tokenIds.length;
      if (done) {
        dispose(s.kv);
        this.scoring = undefined;
      }
      if (keep === 0 || done) {
        const first = keep === 0 ? start : end - 1;
        const logits = ownArray(r.out.logits.data as Float32Array);
        return { first, logits: logits.subarray(0, (end - first) * vocab), done };
      }
    }
  }

  async release(): Promise<void> {
    await this.clear();
    dispose(this.scoring?.kv ?? null);
    this.scoring = undefined;
    await Promise.all([this.session.release(), this.ops.join.release(), this.ops.keep.release()]);
  }

  private feeds(
    ids: BigInt64Array,
    batch: number,
    seq: number,
    seqlensK: Int32Array,
    total: number,
    keep: number,
    past: ort.Tensor[] | null,
  ): Feeds {
    const { kvHeads, headDim } = this.layout;
    const feeds: Feeds = {
      input_ids: new ort.Tensor('int64', ids, [batch, seq]),
      seqlens_k: new ort.Tensor('int32', seqlensK, [batch]),
      total_sequence_length: new ort.Tensor('int32', Int32Array.of(total), []),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(BigInt(keep)), []),
    };
    this.pastNames.forEach((name, i) => {
      feeds[name] = past ? past[i] : new ort.Tensor('float32', EMPTY, [batch, kvHeads, 0, headDim]);
    });
    return feeds;
  }

  private presentOf(out: ort.InferenceSession.OnnxValueMapType): ort.Tensor[] {
    return this.presentNames.map((n) => out[n] as ort.Tensor);
  }

  private run(feeds: Feeds) {
    return timed(() => this.session.run(feeds));
  }
}

const EMPTY = new Float32Array(0);

function int64(values: readonly number[]): ort.Tensor {
  return new ort.Tensor('int64', BigInt64Array.from(values, BigInt), [values.length]);
}

function dispose(tensors: ort.Tensor[] | null): void {
  if (tensors) for (const t of tensors) t.dispose();
}

/** An array that owns its whole buffer, so it can be transferred to another thread. */
function ownArray(a: Float32Array): Float32Array {
  return a.byteOffset === 0 && a.byteLength === a.buffer.byteLength ? a : a.slice();
}

async function timed<T>(fn: () => Promise<T>): Promise<{ out: T; ms: number }> {
  const started = performance.now();
  const out = await fn();
  return { out, ms: performance.now() - started };
}
