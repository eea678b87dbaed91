/**
 * The decoder family's forward pass in TensorFlow.js: the numerical reference the ONNX export
 * is checked against and the model trainer shards differentiate. Conventions are exactly
 * Hugging Face transformers' Qwen3 / Llama / Qwen2 (eager attention):
 *
 * - RMSNorm `x / sqrt(mean(x²) + eps) * w` in float32;
 * - q/k/v projections (with bias when `attentionBias`), Qwen3's per-head q/k RMSNorm before
 *   RoPE, non-interleaved ("rotate_half") RoPE with positions from `position_ids` and the
 *   config's rope scaling (rope.ts);
 * - grouped-query attention (query head h reads key/value head ⌊h / groups⌋), scores scaled
 *   by 1/√headDim, causal over key slots [past…, new…] and masked by `attention_mask`;
 * - SwiGLU MLP, final norm, `lm_head` (or the embedding matrix when tied).
 *
 * Weights live in `tf.Variable`s in their Hugging Face layout (a Linear's weight is
 * [out, in]), addressable by their Hugging Face names. The key/value cache has the
 * optimum/ONNX layout `[batch, kvHeads, len, headDim]` per layer.
 */
import * as tf from '@tensorflow/tfjs';
import { type HostMatrix, hostEmbed, hostHeadMatMul, hostLinear } from './host-matrix.js';
import { type Dims, dims as dimsOf, type ModelConfig } from './model-config.js';
import { batchMatMul, headMatMul, matMul2d, oneHotEmbed } from './plain-matmul.js';
import { type RopeSpec, ropeFrequencies, writeRopeRow } from './rope.js';
import { webgpuLimits } from './tfjs-backend.js';
import { layerPrefix, type TensorSpec, type WeightMap, weightSpecs } from './weight-names.js';

/** One layer's cache: each `[batch, kvHeads, len, headDim]` (optimum's `past_key_values.N.key|value`). */
// A type alias, not an interface: tf.tidy returns only TensorContainer-shaped values.
export type KvEntry = {
  key: tf.Tensor4D;
  value: tf.Tensor4D;
};
export type KvCache = KvEntry[];

/**
 * How token ids become embeddings: `gather` (a lookup, fastest for inference) or `onehot`
 * (one-hot × embedding matrix; the same numbers, and differentiable on backends such as wasm
 * that have no gradient kernel for gather).
 */
export type EmbeddingMode = 'gather' | 'onehot';

export interface ForwardInput {
  /** [batch][seq] token ids of the new tokens. */
  inputIds: number[][];
  /** [batch][past + seq], 1 for real slots and 0 for padding. Default: all ones. */
  attentionMask?: number[][];
  /** [batch][seq] absolute positions of the new tokens. Default: past length + index. */
  positionIds?: number[][];
  /** The `present` of an earlier call (not disposed by this call). */
  past?: KvCache;
  /** Overrides the decoder's default embedding mode for this call. */
  embedding?: EmbeddingMode;
  /** A training pass: LoRA dropout applies. Default false. */
  training?: boolean;
  /** Seeds the pass's dropout masks, so a resumed run draws the same ones. */
  dropoutSeed?: number;
  /**
   * Gradient checkpointing: each layer keeps only its input for the backward pass, which
   * computes the layer again (its dropout masks included) to differentiate it, so a pass's
   * activations are one layer's plus a hidden-size row per token and layer, for one more
   * forward pass of compute. Needs no `past`; `present` is then empty. Default false.
   */
  checkpoint?: boolean;
  /**
   * Positions (b · seq + t, ascending) whose logits are wanted: the LM head then runs on those
   * rows only and `logits` is [1, rows, vocab]. A trainer needs the response tokens' rows, and
   * the head and everything computed from its [tokens, vocab] output dominate a pass at a real
   * vocabulary. Default: every position.
   */
  logitRows?: number[];
  /**
   * Called during the backward pass of this forward's tape with each trainable variable's
   * whole gradient (by Hugging Face or PEFT name) as soon as the backward pass has produced it:
   * after the last layer that reads the variable, so the last layers' gradients come first.
   * The tensor belongs to the tape: keep a clone to use it after the call. Data parallelism reads
   * gradients back and all-reduces them while the rest of the backward pass runs (DDP's buckets).
   */
  onGradient?: GradientTap;
}

/** Receives a trainable variable's gradient during the backward pass (`ForwardInput.onGradient`). */
export type GradientTap = (name: string, grad: tf.Tensor) => void;

export type ForwardOutput = {
  /** [batch, seq, vocab], or [1, logitRows, vocab] */
  logits: tf.Tensor3D;
  /** Per layer, the past concatenated with this call's keys/values: [batch, kvHeads, past + seq, headDim]. */
  present: KvCache;
};

export interface TfjsDecoderOptions {
  /** Default `gather`. */
  embedding?: EmbeddingMode;
  /** Whether the variables are trainable (default true; false when `lora` is given). */
  trainable?: boolean;
  /**
   * LoRA adapters on Linear weights: `W x + scale · B (A x)` with A [rank, in] and B
   * [out, rank] trainable and the base weights frozen. Keyed by the base weight's HF name.
   */
  lora?: { scale: number; dropout?: number; adapters: ReadonlyMap<string, LoraWeights> };
  /**
   * With `lora`: keep the frozen base's matrices (Linear weights, embedding, head) in host
   * memory and upload each only for the product that uses it (host-matrix.ts), so that the
   * backend holds adapters, norms and activations only. The decoder keeps the given arrays
   * (no copy): the caller must not change them. Default false.
   */
  frozenBaseOnHost?: boolean;
}

/** Dropout streams per layer: each adapter of layer l draws from seed stream l · this + its index. */
const DROPOUT_STREAMS_PER_LAYER = 16;

/** What every layer of one forward pass reads besides its input. */
type LayerContext = {
  batch: number;
  seq: number;
  mask: tf.Tensor;
  cos: tf.Tensor;
  sin: tf.Tensor;
};

/** Added to the attention scores of slots a query may not see. */
export const MASKED_SCORE = -1e9;

/**
 * Refuses a synchronous read on the webgpu backend, where it cannot work in Node (the backend
 * reads synchronously through an OffscreenCanvas), naming the asynchronous method to use.
 */
function syncReadable(method: string): void {
  if (tf.getBackend() === 'webgpu') {
    throw new Error(
      `TfjsDecoder.${method} reads synchronously, which the webgpu backend cannot do in Node: use ${method}Async`,
    );
  }
}

/** Disposes every tensor of a cache. */
export function disposeKvCache(cache: KvCache | undefined): void {
  if (cache === undefined) return;
  for (const entry of cache) {
    entry.key.dispose();
    entry.value.dispose();
  }
}

/**
 * cos and sin of each [batch][seq] position under the model's RoPE (rope.ts: the same tables
 * the ONNX export bakes in), as flat [batch, seq, headDim / 2] arrays (the second half of
 * HF's duplicated table is the same).
 */
export function ropeTables(
  positionIds: number[][],
  headDim: number,
  rope: RopeSpec,
): { cos: Float32Array; sin: Float32Array } {
  const freqs = ropeFrequencies(rope, headDim);
  const half = headDim / 2;
  const batch = positionIds.length;
  const seq = positionIds[0]?.length ?? 0;
  const cos = new Float32Array(batch * seq * half);
  const sin = new Float32Array(batch * seq * half);
  for (let b = 0; b < batch; b++) {
    for (let i = 0; i < seq; i++)
      writeRopeRow(freqs, positionIds[b][i], cos, sin, (b * seq + i) * half, false);
  }
  return { cos, sin };
}

/**
 * Log-probabilities of `targets` under `logits`: [batch, seq, vocab] × [batch][seq] →
 * [batch, seq]. Differentiable on every backend (one-hot selection, no gather).
 */
export function tokenLogprobs(logits: tf.Tensor3D, targets: number[][]): tf.Tensor2D {
  return tf.tidy(() => {
    const [batch, seq, vocab] = logits.shape;
    const flat = targets.flat();
    if (targets.length !== batch || flat.length !== batch * seq) {
      throw new RangeError(
        `targets must be [${batch}][${seq}], got ${targets.length} rows of ${flat.length} ids`,
      );
    }
    const logp = tf.logSoftmax(logits, -1);
    const select = tf.oneHot(tf.tensor1d(flat, 'int32'), vocab).toFloat().reshape([batch, seq, vocab]);
    return tf.sum(tf.mul(logp, select), -1) as tf.Tensor2D;
  });
}

/**
 * Rows `rows` of x [n, width], differentiable on every backend: a gather, whose gradient is a
 * scatter of dy into zeros (tfjs's own gather gradient needs UnsortedSegmentSum, which the wasm
 * backend lacks).
 */
function selectRows(x: tf.Tensor2D, rows: number[]): tf.Tensor2D {
  const [n, width] = x.shape;
  for (const r of rows) {
    if (!Number.isInteger(r) || r < 0 || r >= n) throw new RangeError(`logit row ${r} is outside [0, ${n})`);
  }
  type Arg = tf.Tensor | tf.GradSaveFunc;
  const take = tf.customGrad((...args: Arg[]) => {
    const [input, save] = args as [tf.Tensor, tf.GradSaveFunc];
    const index = tf.tensor1d(rows, 'int32');
    save([index]);
    return {
      value: tf.gather(input, index),
      gradFunc: (dy: tf.Tensor, [saved]: tf.Tensor[]) =>
        tf.scatterND(saved.reshape([rows.length, 1]), dy, [n, width]),
    };
  });
  return take(x) as tf.Tensor2D;
}

function rmsNorm(x: tf.Tensor, weight: tf.Tensor, eps: number): tf.Tensor {
  const variance = tf.mean(tf.square(x), -1, true);
  return tf.mul(tf.mul(x, tf.rsqrt(tf.add(variance, eps))), weight);
}

/**
 * x · Wᵀ with W in PyTorch's [out, in] layout; x is 2-D [rows, in].
 *
 * Every matMul here is a plain one: tfjs-backend-wasm runs a matMul with a transposed operand
 * through a naive loop (~7× slower than its XNNPACK path, measured), so the forward multiplies
 * by a transient transposed copy of W (freed at once: one layer's copy at a time), and the
 * gradient is written by hand: dx = dy · W needs no transpose at all, and dW = dyᵀ · x is
 * computed only for a trainable W (a frozen LoRA base costs no weight gradient).
 */
function linear(x: tf.Tensor2D, weight: tf.Tensor, trainable: boolean): tf.Tensor2D {
  const w = weight as tf.Tensor2D;
  const forward = (input: tf.Tensor2D): tf.Tensor2D => {
    const wt = tf.transpose(w) as tf.Tensor2D;
    const y = tf.matMul(input, wt) as tf.Tensor2D;
    wt.dispose();
    return y;
  };
  type Arg = tf.Tensor | tf.GradSaveFunc;
  return trainable
    ? tf.customGrad((...args: Arg[]) => {
        const [input, wIn, save] = args as [tf.Tensor2D, tf.Tensor2D, tf.GradSaveFunc];
        save([input]);
        return {
          value: forward(input),
          gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => [
            tf.matMul(dy, wIn),
            tf.matMul(tf.transpose(dy), saved[0] as tf.Tensor2D),
          ],
        };
      })(x, w)
    : tf.customGrad((...args: Arg[]) => ({
        value: forward(args[0] as tf.Tensor2D),
        gradFunc: (dy: tf.Tensor2D) => tf.matMul(dy, w),
      }))(x);
}

/**
 * x itself (a new handle on the same data), whose gradient passes through unchanged after `tap`
 * has seen it: the whole gradient of x, every use summed, once the backward pass has gone back
 * past the point where this was recorded.
 */
function tapped(x: tf.Tensor, name: string, tap: GradientTap): tf.Tensor {
  type Arg = tf.Tensor | tf.GradSaveFunc;
  return tf.customGrad((...args: Arg[]) => ({
    value: tf.clone(args[0] as tf.Tensor),
    gradFunc: (dy: tf.Tensor) => {
      tap(name, dy);
      return dy;
    },
  }))(x);
}

/** rotate_half RoPE on x [batch, seq, heads, headDim] with cos/sin [batch, seq, 1, headDim / 2]. */
function applyRope(x: tf.Tensor, cos: tf.Tensor, sin: tf.Tensor): tf.Tensor {
  const [x1, x2] = tf.split(x, 2, -1);
  // x*cos + rotate_half(x)*sin, half by half: [x1*c - x2*s, x2*c + x1*s]
  const first = tf.add(tf.mul(x1, cos), tf.mul(tf.neg(x2), sin));
  const second = tf.add(tf.mul(x2, cos), tf.mul(x1, sin));
  return tf.concat([first, second], -1);
}

function checkRectangular(name: string, rows: number[][], batch: number, width: number): void {
  if (rows.length !== batch) throw new RangeError(`${name} has ${rows.length} rows, expected ${batch}`);
  for (const [b, row] of rows.entries()) {
    if (row.length !== width) {
      throw new RangeError(`${name}[${b}] has length ${row.length}, expected ${width}`);
    }
  }
}

export interface LoraWeights {
  /** [rank, in] */
  A: Float32Array;
  /** [out, rank] */
  B: Float32Array;
  rank: number;
}

/** PEFT's names for the adapter of `model.layers.0.self_attn.q_proj.weight`. */
export function loraNames(target: string): { A: string; B: string } {
  const module = target.replace(/\.weight$/, '');
  return { A: `${module}.lora_A.weight`, B: `${module}.lora_B.weight` };
}

export class TfjsDecoder {
  readonly config: ModelConfig;
  readonly dims: Dims;
  readonly embedding: EmbeddingMode;
  private readonly vars = new Map<string, tf.Variable>();
  /** The frozen base's matrices kept in host memory (`frozenBaseOnHost`), by HF name. */
  private readonly host = new Map<string, HostMatrix>();
  /** Adapter variables by PEFT name, and per target weight. */
  private readonly loraVars = new Map<string, tf.Variable>();
  private readonly adapters = new Map<
    string,
    { A: tf.Variable; B: tf.Variable; names: { A: string; B: string } }
  >();
  private readonly loraScale: number;
  private readonly loraDropout: number;
  /** Set for the duration of a `forward` call (forward is synchronous). */
  private training = false;
  private dropoutSeed: number | undefined;
  private dropoutCalls = 0;
  /**
   * During a forward pass with `onGradient`: the hook and each trainable variable's tapped
   * handle, made at its first use in the pass (so that the backward pass reaches it after every
   * use). Cleared while a checkpointed layer is computed again for its gradient.
   */
  private tap: { fn: GradientTap; handles: Map<string, tf.Tensor> } | undefined;
  private readonly specs: TensorSpec[];
  private disposed = false;

  constructor(config: ModelConfig, weights: WeightMap, options: TfjsDecoderOptions = {}) {
    this.config = config;
    this.dims = dimsOf(config);
    this.embedding = options.embedding ?? 'gather';
    if (this.dims.headDim % 2 !== 0) {
      throw new RangeError(`head_dim must be even for RoPE, got ${this.dims.headDim}`);
    }
    this.specs = weightSpecs(this.dims);
    this.checkWeights(weights);
    const trainable = options.trainable ?? options.lora === undefined;
    if (options.frozenBaseOnHost && (options.lora === undefined || trainable)) {
      throw new RangeError('frozenBaseOnHost needs a frozen base: LoRA adapters and trainable false');
    }
    // On WebGPU a tensor is one buffer bound whole: refuse what the adapter cannot bind, by name.
    const binding = tf.getBackend() === 'webgpu' ? webgpuLimits()?.maxStorageBufferBindingSize : undefined;
    for (const spec of this.specs) {
      const data = weights.get(spec.name)!;
      if (
        binding !== undefined &&
        data.length * 4 > binding &&
        !(options.frozenBaseOnHost && spec.shape.length === 2)
      ) {
        throw new RangeError(
          `${spec.name} [${spec.shape.join(', ')}] is ${Math.ceil((data.length * 4) / 2 ** 20)} MiB, more than one WebGPU buffer binding of this adapter holds (${Math.floor(binding / 2 ** 20)} MiB): train it on another backend (train.backend), or on an adapter with a larger maxStorageBufferBindingSize`,
        );
      }
      if (options.frozenBaseOnHost && spec.shape.length === 2) {
        this.host.set(spec.name, { data, rows: spec.shape[0], cols: spec.shape[1] });
        continue;
      }
      const variable = tf.tidy(() => tf.variable(tf.tensor(data, spec.shape, 'float32'), trainable));
      this.vars.set(spec.name, variable);
    }
    this.loraScale = options.lora?.scale ?? 0;
    this.loraDropout = options.lora?.dropout ?? 0;
    for (const [target, lora] of options.lora?.adapters ?? []) {
      const spec = this.specs.find((s) => s.name === target);
      if (spec?.shape.length !== 2) {
        throw new RangeError(`LoRA target ${target} is not a Linear weight of this model`);
      }
      const [out, inFeatures] = spec.shape;
      const names = loraNames(target);
      // In a tidy, as the base's: the initial tensor would otherwise outlive the variable.
      const A = tf.tidy(() => tf.variable(tf.tensor(lora.A, [lora.rank, inFeatures], 'float32'), true));
      const B = tf.tidy(() => tf.variable(tf.tensor(lora.B, [out, lora.rank], 'float32'), true));
      this.adapters.set(target, { A, B, names });
      this.loraVars.set(names.A, A);
      this.loraVars.set(names.B, B);
    }
  }

  /** What training updates: the LoRA adapters when there are any, else every weight. */
  get trainableVariables(): ReadonlyMap<string, tf.Variable> {
    return this.loraVars.size > 0 ? this.loraVars : this.vars;
  }

  /** Parameters of the model (base and adapters), wherever they are held. */
  get parameterCount(): number {
    let n = 0;
    for (const v of [...this.vars.values(), ...this.loraVars.values()]) n += v.size;
    for (const m of this.host.values()) n += m.data.length;
    return n;
  }

  /** Whether the frozen base's matrices live in host memory (`frozenBaseOnHost`). */
  get baseOnHost(): boolean {
    return this.host.size > 0;
  }

  /**
   * Copies of the trainable variables' values, by name. Reads synchronously: not on the webgpu
   * backend (Node has no synchronous WebGPU read), where `readTrainableAsync` does it.
   */
  readTrainable(): Map<string, Float32Array> {
    syncReadable('readTrainable');
    const out = new Map<string, Float32Array>();
    for (const [name, v] of this.trainableVariables)
      out.set(name, Float32Array.from(v.dataSync() as Float32Array));
    return out;
  }

  /** `readTrainable` on every backend: the reads are queued at once and awaited together. */
  async readTrainableAsync(): Promise<Map<string, Float32Array>> {
    const entries = [...this.trainableVariables];
    const values = await Promise.all(entries.map(([, v]) => v.data() as Promise<Float32Array>));
    return new Map(entries.map(([name], i) => [name, Float32Array.from(values[i])]));
  }

  /**
   * On-device copies of the trainable variables (the caller disposes them): a frozen reference
   * policy that never leaves the backend. `assignTrainableTensors` puts such copies back.
   */
  snapshotTrainable(): Map<string, tf.Tensor> {
    return new Map([...this.trainableVariables].map(([name, v]) => [name, tf.keep(v.clone())]));
  }

  /** Sets trainable variables from tensors of their shapes (copied in; the caller keeps them). */
  assignTrainableTensors(values: ReadonlyMap<string, tf.Tensor>): void {
    for (const [name, value] of values) {
      const v = this.trainableVariables.get(name);
      if (!v || v.size !== value.size)
        throw new RangeError(`no trainable tensor ${name} of ${value.size} values`);
      tf.tidy(() => v.assign(value.reshape(v.shape)));
    }
  }

  /** Sets trainable variables by name (sizes must match). */
  assignTrainable(values: ReadonlyMap<string, Float32Array>): void {
    for (const [name, data] of values) {
      const v = this.trainableVariables.get(name);
      if (!v || v.size !== data.length)
        throw new RangeError(`no trainable tensor ${name} of ${data.length} values`);
      const value = tf.tensor(data, v.shape, 'float32');
      v.assign(value);
      value.dispose();
    }
  }

  /**
   * The weights with every adapter merged in (W + scale · B A): what rollout engines serve.
   * Synchronous: not on webgpu (`readMergedWeightsAsync`).
   */
  readMergedWeights(): WeightMap {
    syncReadable('readMergedWeights');
    const out = this.readWeights();
    for (const [target, merged] of this.mergedAdapters()) {
      out.set(target, Float32Array.from(merged.dataSync() as Float32Array));
      merged.dispose();
    }
    return out;
  }

  /** `readMergedWeights` on every backend. */
  async readMergedWeightsAsync(): Promise<WeightMap> {
    const out = await this.readWeightsAsync();
    for (const [target, merged] of this.mergedAdapters()) {
      out.set(target, Float32Array.from((await merged.data()) as Float32Array));
      merged.dispose();
    }
    return out;
  }

  /** Each adapted weight merged (W + scale · B A), one at a time as the caller takes them. */
  private *mergedAdapters(): Generator<[string, tf.Tensor]> {
    for (const [target, { A, B }] of this.adapters) {
      yield [target, tf.tidy(() => tf.add(this.matrix(target), tf.mul(tf.matMul(B, A), this.loraScale)))];
    }
  }

  /** The backend's variables by Hugging Face tensor name, in `weightSpecs` order (not the base kept on the host). */
  get variables(): ReadonlyMap<string, tf.Variable> {
    return this.vars;
  }

  /** One variable by its Hugging Face name. */
  variable(name: string): tf.Variable {
    const v = this.vars.get(name);
    if (v === undefined) throw new RangeError(`no tensor named ${name} in this model`);
    return v;
  }

  /** Replaces every variable's value (same names and sizes as the constructor's weights). */
  assignWeights(weights: WeightMap): void {
    this.checkWeights(weights);
    for (const spec of this.specs) {
      const host = this.host.get(spec.name);
      if (host) {
        // A new array, not a write into the old one: readWeights handed that one out.
        this.host.set(spec.name, { ...host, data: Float32Array.from(weights.get(spec.name)!) });
        continue;
      }
      const value = tf.tensor(weights.get(spec.name)!, spec.shape, 'float32');
      this.vars.get(spec.name)!.assign(value);
      value.dispose();
    }
  }

  /**
   * The current values, by Hugging Face name, in `weightSpecs` order: copies of the backend's
   * variables; the base kept on the host as it is held (never written: assignWeights replaces it).
   * Synchronous: not on webgpu (`readWeightsAsync`).
   */
  readWeights(): WeightMap {
    syncReadable('readWeights');
    const out: WeightMap = new Map();
    for (const spec of this.specs) {
      const host = this.host.get(spec.name);
      out.set(
        spec.name,
        host ? host.data : Float32Array.from(this.vars.get(spec.name)!.dataSync() as Float32Array),
      );
    }
    return out;
  }

  /** `readWeights` on every backend: one read at a time (a whole model need not be copied twice). */
  async readWeightsAsync(): Promise<WeightMap> {
    const out: WeightMap = new Map();
    for (const spec of this.specs) {
      const host = this.host.get(spec.name);
      out.set(
        spec.name,
        host ? host.data : Float32Array.from((await this.vars.get(spec.name)!.data()) as Float32Array),
      );
    }
    return out;
  }

  forward(input: ForwardInput): ForwardOutput {
    if (this.disposed) throw new Error('TfjsDecoder was disposed');
    this.tap = input.onGradient ? { fn: input.onGradient, handles: new Map() } : undefined;
    try {
      return this.run(input);
    } finally {
      // The tapped handles' hooks live on in the tape; a later pass (or a checkpointed layer
      // computed again for its gradient) reads the variables themselves.
      this.tap = undefined;
    }
  }

  private run(input: ForwardInput): ForwardOutput {
    const d = this.dims;
    const { inputIds, past } = input;
    this.training = input.training ?? false;
    // A checkpointed pass draws each dropout mask twice (forward, recomputation): unseeded, it
    // gets a seed of its own so that both draws agree.
    this.dropoutSeed =
      input.dropoutSeed ??
      (input.checkpoint && this.training ? Math.floor(Math.random() * 2 ** 31) : undefined);
    const batch = inputIds.length;
    const seq = inputIds[0]?.length ?? 0;
    if (batch === 0 || seq === 0) throw new RangeError('inputIds must be a non-empty [batch][seq] array');
    checkRectangular('inputIds', inputIds, batch, seq);
    for (const row of inputIds) {
      for (const id of row) {
        if (!Number.isInteger(id) || id < 0 || id >= d.vocab) {
          throw new RangeError(`token id ${id} is outside the vocabulary [0, ${d.vocab})`);
        }
      }
    }
    let pastLen = 0;
    if (past !== undefined && past.length > 0) {
      if (past.length !== d.layers) {
        throw new RangeError(`past has ${past.length} layers, expected ${d.layers}`);
      }
      const [pb, ph, pl, pd] = past[0].key.shape;
      if (pb !== batch || ph !== d.kvHeads || pd !== d.headDim) {
        throw new RangeError(
          `past key shape [${past[0].key.shape}] does not fit batch ${batch}, ${d.kvHeads} kv heads of ${d.headDim}`,
        );
      }
      pastLen = pl;
      if (input.checkpoint) throw new RangeError('a checkpointed forward pass takes no past');
    }
    const total = pastLen + seq;
    const attentionMask = input.attentionMask;
    if (attentionMask !== undefined) checkRectangular('attentionMask', attentionMask, batch, total);
    const positionIds = input.positionIds ?? inputIds.map((row) => row.map((_, i) => pastLen + i));
    checkRectangular('positionIds', positionIds, batch, seq);
    const mode = input.embedding ?? this.embedding;

    // Additive mask [batch, 1, seq, total]: query i sits in slot pastLen + i.
    const maskData = new Float32Array(batch * seq * total);
    for (let b = 0; b < batch; b++) {
      for (let i = 0; i < seq; i++) {
        const base = (b * seq + i) * total;
        for (let s = 0; s < total; s++) {
          const visible = s <= pastLen + i && (attentionMask === undefined || attentionMask[b][s] !== 0);
          if (!visible) maskData[base + s] = MASKED_SCORE;
        }
      }
    }
    const rope = ropeTables(positionIds, d.headDim, d.rope);

    return tf.tidy((): ForwardOutput => {
      const mask = tf.tensor4d(maskData, [batch, 1, seq, total]);
      const cos = tf.tensor4d(rope.cos, [batch, seq, 1, d.headDim / 2]);
      const sin = tf.tensor4d(rope.sin, [batch, seq, 1, d.headDim / 2]);
      const embed = this.host.has('model.embed_tokens.weight')
        ? undefined
        : this.w('model.embed_tokens.weight');
      const hostEmbedding = this.host.get('model.embed_tokens.weight');
      const ids = () => tf.tensor1d(inputIds.flat(), 'int32');
      let h: tf.Tensor2D = hostEmbedding
        ? hostEmbed(inputIds.flat(), hostEmbedding)
        : mode === 'gather'
          ? (tf.gather(embed!, ids()) as tf.Tensor2D)
          : oneHotEmbed(ids(), embed as tf.Tensor2D);
      const present: KvCache = [];
      const ctx: LayerContext = { batch, seq, mask, cos, sin };
      for (let l = 0; l < d.layers; l++) {
        if (input.checkpoint) {
          h = this.checkpointedLayer(l, h, ctx);
          continue;
        }
        const entry = past !== undefined && past.length > 0 ? past[l] : undefined;
        const out = this.layer(l, h, ctx, entry);
        present.push(out.kv);
        h = out.h;
      }
      const normed = rmsNorm(h, this.w('model.norm.weight'), d.eps) as tf.Tensor2D;
      const headName = d.tied ? 'model.embed_tokens.weight' : 'lm_head.weight';
      const hostHead = this.host.get(headName);
      const project = (x: tf.Tensor2D) =>
        hostHead
          ? hostHeadMatMul(x, hostHead)
          : headMatMul(x, this.w(headName) as tf.Tensor2D, this.vars.get(headName)!.trainable);
      const rows = input.logitRows;
      const logits = rows
        ? (project(selectRows(normed, rows)).reshape([1, rows.length, d.vocab]) as tf.Tensor3D)
        : (project(normed).reshape([batch, seq, d.vocab]) as tf.Tensor3D);
      return { logits, present };
    });
  }

  /**
   * Log-probabilities of `tokenIds[t]` given `tokenIds[0..t)` for every t ≥ `fromIndex`
   * (so `fromIndex` ≥ 1; pass the prompt length to score a completion). Returns
   * `tokenIds.length - fromIndex` numbers.
   */
  logprobsOf(tokenIds: number[], fromIndex: number): number[] {
    const n = tokenIds.length;
    if (!Number.isInteger(fromIndex) || fromIndex < 1 || fromIndex > n) {
      throw new RangeError(`fromIndex must be in [1, ${n}], got ${fromIndex}`);
    }
    if (fromIndex === n) return [];
    syncReadable('logprobsOf');
    const out = this.scored(tokenIds, fromIndex);
    const values = Array.from(out.dataSync());
    out.dispose();
    return values;
  }

  /** `logprobsOf` on every backend. */
  async logprobsOfAsync(tokenIds: number[], fromIndex: number): Promise<number[]> {
    const n = tokenIds.length;
    if (!Number.isInteger(fromIndex) || fromIndex < 1 || fromIndex > n) {
      throw new RangeError(`fromIndex must be in [1, ${n}], got ${fromIndex}`);
    }
    if (fromIndex === n) return [];
    const out = this.scored(tokenIds, fromIndex);
    const values = Array.from(await out.data());
    out.dispose();
    return values;
  }

  private scored(tokenIds: number[], fromIndex: number): tf.Tensor {
    const n = tokenIds.length;
    return tf.tidy(() => {
      // The last token's logits predict nothing here; causality makes the rest identical.
      const { logits } = this.forward({ inputIds: [tokenIds.slice(0, n - 1)] });
      const wanted = logits.slice([0, fromIndex - 1, 0], [1, n - fromIndex, this.dims.vocab]);
      return tokenLogprobs(wanted, [tokenIds.slice(fromIndex)]);
    });
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const v of [...this.vars.values(), ...this.loraVars.values()]) v.dispose();
    this.vars.clear();
    this.host.clear();
    this.loraVars.clear();
    this.adapters.clear();
  }

  /** A backend weight as this pass reads it: the variable, or its tapped handle (`onGradient`). */
  private w(name: string): tf.Tensor {
    return this.param(name, this.vars.get(name)!);
  }

  /** A variable, or under `onGradient` a trainable one's tapped handle (made at its first use). */
  private param(name: string, v: tf.Variable): tf.Tensor {
    const tap = this.tap;
    if (!tap || !v.trainable) return v;
    let handle = tap.handles.get(name);
    if (!handle) {
      handle = tapped(v, name, tap.fn);
      tap.handles.set(name, handle);
    }
    return handle;
  }

  /** A 2-D weight as a tensor: the variable, or an upload of the host copy (inside a tidy). */
  private matrix(name: string): tf.Tensor2D {
    const host = this.host.get(name);
    return (host ? tf.tensor2d(host.data, [host.rows, host.cols]) : this.w(name)) as tf.Tensor2D;
  }

  /** A Linear layer by its weight's name, plus its LoRA adapter if it has one. */
  private lin(x: tf.Tensor2D, weightName: string, bias?: tf.Tensor): tf.Tensor2D {
    const host = this.host.get(weightName);
    const product = host
      ? hostLinear(x, host)
      : linear(x, this.w(weightName), this.vars.get(weightName)!.trainable);
    const y = bias === undefined ? product : (tf.add(product, bias) as tf.Tensor2D);
    const adapter = this.adapters.get(weightName);
    if (!adapter) return y;
    // PEFT applies dropout to the adapter's input only, and only while training.
    const seed = this.dropoutSeed === undefined ? undefined : this.dropoutSeed * 1009 + this.dropoutCalls++;
    const input =
      this.training && this.loraDropout > 0 ? tf.dropout(x, this.loraDropout, undefined, seed) : x;
    const A = this.param(adapter.names.A, adapter.A);
    const B = this.param(adapter.names.B, adapter.B);
    const delta = matMul2d(
      matMul2d(input as tf.Tensor2D, tf.transpose(A) as tf.Tensor2D),
      tf.transpose(B) as tf.Tensor2D,
    );
    return tf.add(y, tf.mul(delta, this.loraScale)) as tf.Tensor2D;
  }

  private checkWeights(weights: WeightMap): void {
    for (const spec of this.specs) {
      const data = weights.get(spec.name);
      const size = spec.shape.reduce((a, b) => a * b, 1);
      if (data === undefined) throw new RangeError(`weights lack ${spec.name}`);
      if (data.length !== size) {
        throw new RangeError(
          `${spec.name} has ${data.length} values, expected ${size} ([${spec.shape.join(', ')}])`,
        );
      }
    }
  }

  /** Decoder layer l on the residual stream h [batch*seq, hidden]: the new stream and the layer's present. */
  private layer(
    l: number,
    h: tf.Tensor2D,
    ctx: LayerContext,
    past?: KvEntry,
  ): { h: tf.Tensor2D; kv: KvEntry } {
    const d = this.dims;
    const p = layerPrefix(l);
    this.dropoutCalls = l * DROPOUT_STREAMS_PER_LAYER;
    const x1 = rmsNorm(h, this.w(`${p}.input_layernorm.weight`), d.eps) as tf.Tensor2D;
    const [attnOut, kv] = this.attention(l, x1, { ...ctx, past });
    const mid = tf.add(h, attnOut) as tf.Tensor2D;
    const x2 = rmsNorm(mid, this.w(`${p}.post_attention_layernorm.weight`), d.eps) as tf.Tensor2D;
    return { h: tf.add(mid, this.mlp(l, x2)) as tf.Tensor2D, kv };
  }

  /**
   * Layer l with gradient checkpointing. Its trainable variables (adapters, or its weights and
   * norms) are inputs of the custom gradient only so that the outer tape routes their
   * gradients through it. The forward's intermediates are freed when it returns (a custom
   * gradient's forward is not taped); the gradient runs the layer again on the saved input
   * under a tape of its own and returns d(input) and d(variables).
   */
  private checkpointedLayer(l: number, h: tf.Tensor2D, ctx: LayerContext): tf.Tensor2D {
    const prefix = `${layerPrefix(l)}.`;
    const entries = [...this.trainableVariables].filter(([name]) => name.startsWith(prefix));
    const vars = entries.map(([, v]) => v);
    // Under onGradient the outer tape reaches the variables through their tapped handles.
    const inputs = entries.map(([name, v]) => this.param(name, v));
    // The pass's dropout settings, for the recomputation whenever the backward pass runs.
    const { training, dropoutSeed } = this;
    type Arg = tf.Tensor | tf.GradSaveFunc;
    return tf.customGrad((...args: Arg[]) => {
      const x = args[0] as tf.Tensor2D;
      const save = args[args.length - 1] as tf.GradSaveFunc;
      // The context too: the forward pass's tidy frees it before the backward pass runs.
      save([x, ctx.mask, ctx.cos, ctx.sin]);
      return {
        value: this.layer(l, x, ctx).h,
        gradFunc: (dy: tf.Tensor2D, saved: tf.Tensor[]) => {
          const [xs, mask, cos, sin] = saved;
          const input = tf.variable(xs as tf.Tensor2D, true);
          // The outer backward pass runs at gradient depth 0, where a gradient computation
          // starts the engine's tape afresh and, when done, frees its saved tensors and drops
          // it: this one's own (what checkpointing is for), but the outer pass still needs its
          // tape to free its own at its end, so it is put back.
          const state = tf.engine().state;
          const outerTape = state.activeTape;
          this.training = training;
          this.dropoutSeed = dropoutSeed;
          try {
            const { value, grads } = tf.variableGrads(
              () => tf.sum(tf.mul(this.layer(l, input, { ...ctx, mask, cos, sin }).h, dy)) as tf.Scalar,
              [input, ...vars],
            );
            value.dispose();
            return [grads[input.name], ...vars.map((v) => grads[v.name] ?? tf.zerosLike(v))];
          } finally {
            state.activeTape = outerTape;
            input.dispose();
          }
        },
      };
    })(h, ...inputs) as tf.Tensor2D;
  }

  /** Self-attention of layer l on x [batch*seq, hidden]; returns the o_proj output and the layer's present. */
  private attention(
    l: number,
    x: tf.Tensor2D,
    ctx: LayerContext & { past?: KvEntry },
  ): [tf.Tensor2D, KvEntry] {
    const d = this.dims;
    const { batch, seq } = ctx;
    const p = `${layerPrefix(l)}.self_attn`;
    const bias = (name: string) => (d.attentionBias ? this.w(`${p}.${name}.bias`) : undefined);
    // [batch, seq, n, headDim]
    const project = (name: string, n: number): tf.Tensor =>
      this.lin(x, `${p}.${name}.weight`, bias(name)).reshape([batch, seq, n, d.headDim]);
    let q = project('q_proj', d.heads);
    let k = project('k_proj', d.kvHeads);
    const v = project('v_proj', d.kvHeads);
    if (d.qkNorm) {
      q = rmsNorm(q, this.w(`${p}.q_norm.weight`), d.eps);
      k = rmsNorm(k, this.w(`${p}.k_norm.weight`), d.eps);
    }
    q = applyRope(q, ctx.cos, ctx.sin);
    k = applyRope(k, ctx.cos, ctx.sin);
    // [batch, heads, seq, headDim]
    const qh = tf.transpose(q, [0, 2, 1, 3]);
    let key = tf.transpose(k, [0, 2, 1, 3]) as tf.Tensor4D;
    let value = tf.transpose(v, [0, 2, 1, 3]) as tf.Tensor4D;
    if (ctx.past !== undefined) {
      key = tf.concat([ctx.past.key, key], 2);
      value = tf.concat([ctx.past.value, value], 2);
    }
    const total = key.shape[2];
    // Query heads grouped under their kv head: [batch, kvHeads, groups*seq, headDim].
    const qg = qh.reshape([batch, d.kvHeads, d.groups * seq, d.headDim]) as tf.Tensor4D;
    const scores = tf.mul(batchMatMul(qg, key, false, true), 1 / Math.sqrt(d.headDim));
    const masked = tf.add(scores.reshape([batch, d.heads, seq, total]), ctx.mask);
    const probs = tf.softmax(masked, -1).reshape([batch, d.kvHeads, d.groups * seq, total]) as tf.Tensor4D;
    const attn = batchMatMul(probs, value)
      .reshape([batch, d.heads, seq, d.headDim])
      .transpose([0, 2, 1, 3])
      .reshape([batch * seq, d.heads * d.headDim]) as tf.Tensor2D;
    return [this.lin(attn, `${p}.o_proj.weight`), { key, value }];
  }

  private mlp(l: number, x: tf.Tensor2D): tf.Tensor2D {
    const p = `${layerPrefix(l)}.mlp`;
    const gate = this.lin(x, `${p}.gate_proj.weight`);
    const up = this.lin(x, `${p}.up_proj.weight`);
    const act = tf.mul(tf.mul(gate, tf.sigmoid(gate)), up) as tf.Tensor2D;
    return this.lin(act, `${p}.down_proj.weight`);
  }
}
