/**
 * One decoder ONNX graph in an onnxruntime-node session: optimum's names (input_ids,
 * attention_mask, position_ids, past_key_values.N.key|value → logits, present.N.key|value;
 * `step`), or clawray's GQA graph (onnx-export-gqa.ts) whose cache is one buffer per tensor
 * updated in place (`stepInPlace`). When this process holds a GPU, 'auto' tries the CUDA execution
 * provider (a separate library that onnxruntime-node's installer fetches), then WebGPU (built into
 * onnxruntime-node for Linux x64: Dawn over the GPU driver's Vulkan), then the CPU.
 */
import * as ort from 'onnxruntime-node';
import { ConfigError } from '../../common/errors.js';
import { cpuCores } from '../models/cpu-cores.js';
import { type ExecutionProvider, providerAttempts } from '../models/execution-provider.js';
import { MODEL_DATA_FILE } from '../models/onnx-graph.js';

/**
 * A graph whose weights are ONNX external data held in memory: onnxruntime resolves the
 * graph's `model.onnx_data` references to `data` (and copies what it needs at session
 * creation, so `data` may be rewritten while the session serves).
 */
export interface GraphWithData {
  graph: Uint8Array;
  data: Uint8Array;
}

export interface KvLayout {
  layers: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
}

export type { ExecutionProvider };

export interface StepInput {
  batch: number;
  /** New tokens per sequence in this step (all sequences alike). */
  seq: number;
  /** Past slots per sequence (left-padded to a common length). */
  past: number;
  inputIds: BigInt64Array;
  /** [batch, past + seq]: 1 for real slots, 0 for padding. */
  attentionMask: BigInt64Array;
  positionIds: BigInt64Array;
  /** Per layer, key then value, each [batch, kvHeads, past, headDim]. */
  pastKv: Float32Array[];
}

export interface StepOutput {
  /** [batch, seq, vocab] */
  logits: Float32Array;
  /** Per layer, key then value, each [batch, kvHeads, past + seq, headDim]. */
  presentKv: Float32Array[];
}

const EMPTY_CACHE = new Float32Array(0);

/**
 * The reason in an onnxruntime error, without the source location and function signature its
 * first line starts with (`…/webgpu_context.cc:136 …<lambda()> … was false. Failed to get a
 * WebGPU adapter: No supported adapters`, `… : FAIL : Failed to load library …`).
 */
export function ortReason(err: unknown): string {
  const line = (err instanceof Error ? err.message : String(err)).split('\n')[0];
  return (/(?:was false\. | : FAIL : )(.*)$/.exec(line)?.[1] ?? line).trim();
}

/** How a decoder session is created. */
export interface DecoderLoadOptions {
  /** 'auto' (default) tries CUDA, then WebGPU, when this process holds a GPU; else the CPU. */
  provider?: ExecutionProvider | 'auto';
  /**
   * Threads of onnxruntime's intra-op pool. Default: one per physical core this process may
   * run on, within its cgroup's CPU quota (cpu-cores.ts; onnxruntime's own detection falls
   * back to one thread where it cannot read the topology); 0: onnxruntime's own default.
   * Several engines on one machine each want fewer.
   */
  intraOpNumThreads?: number;
  /**
   * Whether idle intra-op threads spin waiting for work (session.intra_op.allow_spinning).
   * Default true, onnxruntime's: lowest step latency, but spinning threads burn cores that
   * other processes on a shared machine could use.
   */
  allowSpinning?: boolean;
}

/**
 * The graph kinds: optimum's names (the cache concatenated and returned every step, `step`),
 * or a cache kept in the caller's buffer (`stepInPlace`): 'slots' (the graph returns only the
 * new keys/values, which the decoder writes into the buffer) or 'gqa' (GroupQueryAttention
 * writes them into the shared past/present buffer itself).
 */
export type DecoderKind = 'standard' | 'slots' | 'gqa';

/**
 * One step of an in-place graph ('slots' or 'gqa'): rows right-padded in a buffer of
 * `capacity` slots per row; row b holds `pastLens[b]` slots before the step and receives
 * `newLens[b]` (≤ seq) new ones at the slots after them.
 */
export interface InPlaceStepInput {
  batch: number;
  /** New tokens per row (right-padded to a common count). */
  seq: number;
  inputIds: BigInt64Array;
  /** Slots each row holds before this step. */
  pastLens: Int32Array;
  /** Real new tokens of each row (the rest of its `seq` is padding). */
  newLens: Int32Array;
  /** Per layer key then value, each [batch, kvHeads, capacity, headDim]: read and updated in place. */
  kv: Float32Array[];
  capacity: number;
  /** Logits of the last k positions of every row; 0 for all `seq`. */
  logitsToKeep: number;
  /** Receives the logits, [batch, logitsToKeep || seq, vocab]. */
  logits: Float32Array;
}

export class OnnxDecoder {
  /** From the graph's inputs: `seqlens_k` is GQA's, `past_lengths` the slots graph's. */
  readonly kind: DecoderKind;

  private constructor(
    private readonly session: ort.InferenceSession,
    readonly layout: KvLayout,
    readonly provider: ExecutionProvider,
    /** The intra-op pool's threads asked for (0: onnxruntime's own default). */
    readonly intraOpThreads: number,
  ) {
    const inputs = session.inputNames;
    this.kind = inputs.includes('seqlens_k') ? 'gqa' : inputs.includes('past_lengths') ? 'slots' : 'standard';
  }

  /**
   * Loads a graph (bytes with inline weights, a file path, or graph bytes with in-memory
   * external data). `options` is the provider alone or DecoderLoadOptions.
   */
  static async load(
    model: Uint8Array | string | GraphWithData,
    layout: KvLayout,
    options: ExecutionProvider | 'auto' | DecoderLoadOptions = 'auto',
  ): Promise<OnnxDecoder> {
    const opts: DecoderLoadOptions = typeof options === 'string' ? { provider: options } : options;
    const provider = opts.provider ?? 'auto';
    const threads = opts.intraOpNumThreads ?? cpuCores();
    if (threads !== undefined && !(Number.isInteger(threads) && threads >= 0)) {
      throw new ConfigError(
        `intraOpNumThreads must be a whole number ≥ 0 (0: onnxruntime's default), got ${threads}`,
        {
          fields: { intraOpNumThreads: threads },
        },
      );
    }
    const attempts = providerAttempts(provider);
    let lastError: unknown;
    for (const ep of attempts) {
      try {
        const options: ort.InferenceSession.SessionOptions = {
          executionProviders: [ep],
          graphOptimizationLevel: 'all',
          ...(threads ? { intraOpNumThreads: threads } : {}),
          ...(opts.allowSpinning === false
            ? { extra: { session: { intra_op: { allow_spinning: '0' } } } }
            : {}),
        };
        let session: ort.InferenceSession;
        if (typeof model === 'string') session = await ort.InferenceSession.create(model, options);
        else if (model instanceof Uint8Array) session = await ort.InferenceSession.create(model, options);
        else {
          session = await ort.InferenceSession.create(model.graph, {
            ...options,
            externalData: [{ path: MODEL_DATA_FILE, data: model.data }],
          });
        }
        return new OnnxDecoder(session, layout, ep, threads);
      } catch (err) {
        lastError = err;
      }
    }
    if (provider !== 'auto' && provider !== 'cpu') {
      // Asked for by name: say which provider could not start and why (no adapter, no library).
      throw new ConfigError(
        `execution provider '${provider}' could not start a session here: ${ortReason(lastError)}`,
        {
          cause: lastError,
          fields: { provider },
        },
      );
    }
    throw lastError;
  }

  /** Whether the graph updates a cache buffer the caller keeps (`stepInPlace`), not `step`. */
  get inPlace(): boolean {
    return this.kind !== 'standard';
  }

  /**
   * One step of an in-place graph: row b's new keys/values land in `input.kv` at slots
   * pastLens[b] … pastLens[b] + newLens[b] − 1; the logits in `input.logits`. A GQA graph
   * writes them itself (the buffers are fed as past and fetched as present: one memory, which
   * GroupQueryAttention updates in place, though onnxruntime-node then copies the fetched
   * buffer into a new array); a slots graph returns only them and they are copied here.
   */
  async stepInPlace(input: InPlaceStepInput): Promise<Float32Array> {
    if (!this.inPlace)
      throw new ConfigError(`stepInPlace needs a slots or GQA decoder graph, not ${this.kind}`);
    const { batch, seq, capacity, pastLens, newLens } = input;
    const { layers, kvHeads, headDim, vocab } = this.layout;
    const kept = input.logitsToKeep > 0 ? Math.min(input.logitsToKeep, seq) : seq;
    const logits = input.logits.subarray(0, batch * kept * vocab);
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', input.inputIds, [batch, seq]),
      num_logits_to_keep: new ort.Tensor('int64', BigInt64Array.of(BigInt(input.logitsToKeep)), []),
    };
    const fetches: Record<string, ort.Tensor | null> = {
      logits: new ort.Tensor('float32', logits, [batch, kept, vocab]),
    };
    const dims = [batch, kvHeads, capacity, headDim];
    const cache = (l: number, part: 'key' | 'value') => input.kv[2 * l + (part === 'key' ? 0 : 1)];
    if (this.kind === 'gqa') {
      let total = 0;
      const seqlensK = new Int32Array(batch);
      for (let b = 0; b < batch; b++) {
        seqlensK[b] = pastLens[b] + newLens[b] - 1;
        total = Math.max(total, seqlensK[b] + 1);
      }
      feeds.seqlens_k = new ort.Tensor('int32', seqlensK, [batch]);
      feeds.total_sequence_length = new ort.Tensor('int32', Int32Array.of(total), []);
      for (let l = 0; l < layers; l++) {
        for (const part of ['key', 'value'] as const) {
          feeds[`past_key_values.${l}.${part}`] = new ort.Tensor('float32', cache(l, part), dims);
          fetches[`present.${l}.${part}`] = new ort.Tensor('float32', cache(l, part), dims);
        }
      }
      await this.session.run(feeds, fetches as Record<string, ort.Tensor>);
      return logits;
    }
    feeds.past_lengths = new ort.Tensor('int64', BigInt64Array.from(pastLens, BigInt), [batch]);
    // A first step (no row has a past) reads no slot: an empty past spares the graph scoring
    // every masked slot of the buffer. Not on WebGPU, whose zero-sized products (the scores
    // against an empty past) crash onnxruntime 1.30's kernels: there the masked buffer is read.
    const empty = pastLens.every((n) => n === 0) && this.provider !== 'webgpu';
    const pastDims = empty ? [batch, kvHeads, 0, headDim] : dims;
    for (let l = 0; l < layers; l++) {
      for (const part of ['key', 'value'] as const) {
        const past = empty ? EMPTY_CACHE : cache(l, part);
        feeds[`past_key_values.${l}.${part}`] = new ort.Tensor('float32', past, pastDims);
        fetches[`new_key_values.${l}.${part}`] = null;
      }
    }
    const out = await this.session.run(feeds, fetches as Record<string, ort.Tensor>);
    // [batch, kvHeads, seq, headDim] → row b, head h: slots pastLens[b] … of the row's buffer.
    for (let l = 0; l < layers; l++) {
      for (const part of ['key', 'value'] as const) {
        const fresh = out[`new_key_values.${l}.${part}`].data as Float32Array;
        const target = cache(l, part);
        for (let b = 0; b < batch; b++) {
          const n = newLens[b] * headDim;
          for (let h = 0; h < kvHeads; h++) {
            const from = (b * kvHeads + h) * seq * headDim;
            target.set(
              fresh.subarray(from, from + n),
              ((b * kvHeads + h) * capacity + pastLens[b]) * headDim,
            );
          }
        }
      }
    }
    return logits;
  }

  /**
   * Runs one step. `into`, when given, receives the outputs (sized for this step) instead of
   * freshly allocated arrays.
   */
  async step(input: StepInput, into?: StepOutput): Promise<StepOutput> {
    const { batch, seq, past, layers, kvHeads, headDim } = { ...input, ...this.layout };
    const feeds: Record<string, ort.Tensor> = {
      input_ids: new ort.Tensor('int64', input.inputIds, [batch, seq]),
      attention_mask: new ort.Tensor('int64', input.attentionMask, [batch, past + seq]),
      position_ids: new ort.Tensor('int64', input.positionIds, [batch, seq]),
    };
    for (let l = 0; l < layers; l++) {
      feeds[`past_key_values.${l}.key`] = new ort.Tensor('float32', input.pastKv[2 * l], [
        batch,
        kvHeads,
        past,
        headDim,
      ]);
      feeds[`past_key_values.${l}.value`] = new ort.Tensor('float32', input.pastKv[2 * l + 1], [
        batch,
        kvHeads,
        past,
        headDim,
      ]);
    }
    let fetches: Record<string, ort.Tensor> | undefined;
    if (into) {
      const total = past + seq;
      fetches = { logits: new ort.Tensor('float32', into.logits, [batch, seq, this.layout.vocab]) };
      for (let l = 0; l < layers; l++) {
        fetches[`present.${l}.key`] = new ort.Tensor('float32', into.presentKv[2 * l], [
          batch,
          kvHeads,
          total,
          headDim,
        ]);
        fetches[`present.${l}.value`] = new ort.Tensor('float32', into.presentKv[2 * l + 1], [
          batch,
          kvHeads,
          total,
          headDim,
        ]);
      }
    }
    const out = fetches ? await this.session.run(feeds, fetches) : await this.session.run(feeds);
    const presentKv: Float32Array[] = [];
    for (let l = 0; l < layers; l++) {
      presentKv.push(
        out[`present.${l}.key`].data as Float32Array,
        out[`present.${l}.value`].data as Float32Array,
      );
    }
    return { logits: out.logits.data as Float32Array, presentKv };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
