/**
 * One decoder ONNX graph (Hugging Face optimum names: input_ids, attention_mask,
 * position_ids, past_key_values.N.key|value → logits, present.N.key|value) in an
 * onnxruntime-node session. The CUDA execution provider is used when the onnxruntime build
 * has it and this process holds a GPU; otherwise the CPU provider.
 */
import * as ort from 'onnxruntime-node';

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

export interface StepOptions {
  /**
   * Write the outputs into buffers the decoder reuses, alternating between two sets: right
   * for a batch whose `present` feeds the next step's `past` and is dropped after it. Fresh
   * multi-MiB outputs every step cost more in page faults than the step's arithmetic.
   */
  reuseOutputs?: boolean;
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
  /** Two sets of output buffers, by output index; each step writes the set the last did not. */
  private readonly arenas: Float32Array[][] = [[], []];
  private arena = 0;

  private constructor(
    private readonly session: ort.InferenceSession,
    readonly layout: KvLayout,
    readonly provider: ExecutionProvider,
  ) {}

  /** Loads a graph; `provider` 'auto' tries CUDA when this process holds a GPU. */
  static async load(
    model: Uint8Array | string,
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
        const session =
          typeof model === 'string'
            ? await ort.InferenceSession.create(model, options)
            : await ort.InferenceSession.create(model, options);
        return new OnnxDecoder(session, layout, ep);
      } catch (err) {
        lastError = err;
      }
    }
    throw lastError;
  }

  async step(input: StepInput, options: StepOptions = {}): Promise<StepOutput> {
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
    if (options.reuseOutputs) {
      this.arena ^= 1;
      const total = past + seq;
      const buffer = (i: number, size: number) => {
        let b = this.arenas[this.arena][i];
        if (!b || b.length < size) {
          b = new Float32Array(Math.ceil(size * 1.25));
          this.arenas[this.arena][i] = b;
        }
        return b.subarray(0, size);
      };
      fetches = {
        logits: new ort.Tensor('float32', buffer(0, batch * seq * this.layout.vocab), [
          batch,
          seq,
          this.layout.vocab,
        ]),
      };
      const kvSize = batch * kvHeads * total * headDim;
      for (let l = 0; l < layers; l++) {
        fetches[`present.${l}.key`] = new ort.Tensor('float32', buffer(1 + 2 * l, kvSize), [
          batch,
          kvHeads,
          total,
          headDim,
        ]);
        fetches[`present.${l}.value`] = new ort.Tensor('float32', buffer(2 + 2 * l, kvSize), [
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
