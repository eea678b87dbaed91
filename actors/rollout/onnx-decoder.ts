/**
 * One decoder ONNX graph (Hugging Face optimum names: input_ids, attention_mask,
 * position_ids, past_key_values.N.key|value → logits, present.N.key|value) in an
 * onnxruntime-node session. The CUDA execution provider is used when the onnxruntime build
 * has it and this process holds a GPU; otherwise the CPU provider.
 */
import * as ort from 'onnxruntime-node';
import { MODEL_DATA_FILE } from '../models/onnx-export.js';

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

export type ExecutionProvider = 'cuda' | 'cpu';

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

function wantsGpu(): boolean {
  const visible = process.env.CUDA_VISIBLE_DEVICES;
  return visible !== undefined && visible !== '' && visible !== '-1';
}

export class OnnxDecoder {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly layout: KvLayout,
    readonly provider: ExecutionProvider,
  ) {}

  /**
   * Loads a graph (bytes with inline weights, a file path, or graph bytes with in-memory
   * external data); `provider` 'auto' tries CUDA when this process holds a GPU.
   */
  static async load(
    model: Uint8Array | string | GraphWithData,
    layout: KvLayout,
    provider: ExecutionProvider | 'auto' = 'auto',
  ): Promise<OnnxDecoder> {
    const attempts: ExecutionProvider[] =
      provider === 'auto' ? (wantsGpu() ? ['cuda', 'cpu'] : ['cpu']) : [provider];
    let lastError: unknown;
    for (const ep of attempts) {
      try {
        const options: ort.InferenceSession.SessionOptions = {
          executionProviders: [ep],
          graphOptimizationLevel: 'all',
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
        return new OnnxDecoder(session, layout, ep);
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError;
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
