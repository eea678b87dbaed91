/**
 * One optimisation step of the policy on a batch of trajectories, on TensorFlow.js: per-token
 * logprobs of the given tokens, the method's loss (PPO clip for RL, masked cross-entropy for
 * SFT), gradients flattened into one buffer (the all-reduce point of data parallelism),
 * global-norm clipping and AdamW. Losses are sums over this shard's tokens divided by the
 * GLOBAL token count, so N shards that sum their gradients take exactly the step one shard
 * would take on the whole batch.
 *
 * Every logprob is taken at the temperature the sample was drawn with (softmax(logits / T),
 * the distribution the rollout engine recorded, as slime divides by the rollout temperature):
 * the PPO ratio, the KL, the entropy and the drift metrics (`mismatch`, `policyLag`) all see the
 * policy the rollout sampled from. With truncated importance sampling (`tis`) the step first scores
 * every sample under the current weights without gradient (the proximal policy), trains PPO
 * against those, and weights each token by min(exp(proximal − rollout), cap).
 *
 * Top-K distillation (OpenClaw-RL's top-K OPD, `train.distillTopK`): a sample that carries its
 * teacher's top-K adds, on each response token, distillWeight · KL(student‖teacher) over the
 * teacher's K tokens plus a tail bin (`topKKlPerToken`), the student at the sample's
 * temperature as the teacher was scored. It is added to the sample's PPO term, whose advantages
 * the caller sets (0 for opd: the KL is the whole objective; w_rl·A for combine).
 */
import * as tf from '@tensorflow/tfjs';
import { ClawrayError, ConfigError, registerErrorClass } from '../../common/errors.js';
import { webgpuLimits } from '../models/tfjs-backend.js';
import type { GradientTap, TfjsDecoder } from '../models/tfjs-decoder.js';
import { tokenLogprobs } from '../models/tfjs-decoder.js';
import { DeviceUpdate } from './device-update.js';
import {
  klPerToken,
  ppoClipLoss,
  tokenEntropy,
  topKKlPerToken,
  truncatedImportanceWeights,
} from './losses.js';
import { type LrScheduleOptions, lrAt } from './lr-schedule.js';
import type { AdamW, AdamWOptions, AdamWState } from './optimizer.js';
import { passBytes, planPasses } from './pass-memory.js';
import { type GradientReducer, HostUpdate, type WeightUpdate } from './weight-update.js';

export type { GradientReducer } from './weight-update.js';

export interface TrainSample {
  /** Prompt followed by the response, exactly as the rollout engine produced them. */
  tokenIds: number[];
  /** Index of the first response token: the loss covers tokens from here on. */
  responseStart: number;
  /** RL: the rollout engine's logprob of each response token. */
  oldLogprobs?: number[];
  /** RL: one advantage for the whole response, or one per response token. */
  advantages?: number | number[];
  /**
   * RL with a KL penalty: the frozen reference policy's logprob of each response token, at the
   * sample's temperature (as the policy's are taken).
   */
  refLogprobs?: number[];
  /**
   * The temperature the response was sampled with (default 1): logprobs are taken under
   * softmax(logits / temperature), the distribution `oldLogprobs` are under. Must be > 0: a
   * greedy (temperature 0) output is no sample of a distribution, and is refused.
   */
  temperature?: number;
  /**
   * Top-K distillation: the teacher's K most likely tokens and their logprobs at every response
   * position (flat, row-major: one row of k per response token), at the sample's temperature.
   */
  teacherTopK?: TeacherTopK;
  /** Weight of this sample's top-K distillation term (w_opd of combine). Default 1. */
  distillWeight?: number;
  /**
   * The policy version whose weights drew the response (the rollout engine's `weightVersion`;
   * versions count optimizer steps, as `stepsTaken` does). It splits the trainer's drift in two:
   * a sample drawn by the weights the step starts from (absent means that) measures `mismatch`;
   * one drawn by an older version measures `policyLag`, and `mismatch` too while that version's
   * weights are kept (`lagWindow`). null: not drawn by the policy (a teacher's reply): in neither.
   */
  weightVersion?: number | null;
}

/** A teacher's top-K rows over a response (the rollout engine's `computeTopLogprobs` output). */
export interface TeacherTopK {
  k: number;
  /** responseLength · k token ids, most likely first in each row. */
  ids: number[];
  /** Their logprobs, normalised over the full vocabulary (the rest is the tail bin). */
  logprobs: number[];
}

/** Truncated importance sampling for stale samples (slime's `--use-tis`, AReaL's decoupled PPO). */
export interface TisOptions {
  /** The largest importance weight exp(proximal − rollout) a token gets (> 1; Infinity: none). */
  cap: number;
}

export interface PolicyTrainerOptions {
  method: 'rl' | 'sft';
  optimizer: AdamWOptions;
  schedule?: Omit<LrScheduleOptions, 'baseLr'>;
  /** Global gradient norm cap; 0 turns clipping off (the norm is still reported). Default 1. */
  maxGradNorm?: number;
  /** PPO's asymmetric clip [ε_low, ε_high]. Default [0.2, 0.28]. */
  clip?: [number, number];
  /** Weight of the k3 KL to the reference policy. Default 0. */
  klCoef?: number;
  /** Seeds LoRA dropout (with the step and micro-batch), so resumed runs repeat exactly. Default 0. */
  seed?: number;
  /** Weight of the entropy bonus (the mean token entropy is reported either way). Default 0. */
  entropyCoef?: number;
  /**
   * Samples per forward/backward pass at most; a step accumulates the gradients of all its
   * micro-batches before the one update. Default: as many as `passMemoryBytes` allows.
   */
  microBatchSize?: number;
  /**
   * The memory one forward/backward pass may keep (activations and gradients, estimated from
   * the model's shape and the samples' padded lengths: pass-memory.ts). A batch is split into
   * micro-batches of similar lengths that fit; a sample that alone exceeds it is trained alone.
   * Default 1 GiB (the wasm backend's whole heap is capped at 4 GiB).
   */
  passMemoryBytes?: number;
  /**
   * Gradient checkpointing (TfjsDecoder's `checkpoint`): each layer keeps only its input and is
   * computed again for its gradient, so a pass holds one layer's activations instead of every
   * layer's, for about a third more compute. 'auto' (default): when the step's longest sample
   * alone would exceed `passMemoryBytes` without it (and it makes the pass smaller); 'on' /
   * 'off': every step / never.
   */
  gradientCheckpointing?: 'auto' | 'on' | 'off';
  /** Replaces the RL loss (PPO clip + KL + entropy) of `method: 'rl'` steps. */
  customLoss?: CustomLoss;
  /** Truncated importance sampling of RL steps; absent: off (PPO against the rollout logprobs). */
  tis?: TisOptions;
  /** Top-K distillation's KL: 'reverse' (student‖teacher, the default) or 'forward'. */
  distillDirection?: 'reverse' | 'forward';
  /**
   * Where gradients are summed, clipped and applied (weight-update.ts): 'host' (flat arrays and
   * a JavaScript AdamW: every rank bit-identical on any machine) or 'device' (tensors and AdamW's
   * moments on the backend; with ranks, gradients read back per bucket and all-reduced while the
   * backward pass goes on). Default: 'device' on webgpu, else 'host'.
   */
  update?: 'host' | 'device';
  /** With `update: 'device'` and ranks: gradient bytes per all-reduce bucket. Default 25 MiB (DDP's). */
  bucketBytes?: number;
  /**
   * How many earlier versions' weights an RL step keeps (their trainable values: in host memory
   * for a host update, on the device for a device one), so that a sample drawn up to that many
   * versions ago is also scored, without gradient, under the weights that drew it: its
   * `mismatch` is then the engines' numerics alone, not how far the policy moved. An async job
   * sets it to `train.maxStaleness`. Default 0 (a synchronous job's samples are all fresh).
   */
  lagWindow?: number;
}

export interface StepOptions {
  /** The response-token count of the whole global batch (all shards). */
  globalTokens?: number;
  reduce?: GradientReducer;
  /** This step's objective (an SFT warm start before RL); default the trainer's method. */
  method?: 'rl' | 'sft';
  /** This step's learning rate, in place of the schedule's (a warm start's own rate). */
  lr?: number;
}

/**
 * A custom loss (manifest `plugins.loss`, like slime's `--custom-loss-function-path`): the SUM
 * of the per-token loss over the masked response tokens; the trainer divides it by the global
 * token count, differentiates it and reports it as the policy-gradient loss.
 */
export type CustomLoss = (input: {
  /** [batch, len, vocab] logits of the policy being trained, divided by each sample's temperature. */
  logits: tf.Tensor3D;
  /** [batch, len] logprob of each target token under the policy (at the sample's temperature). */
  logprobs: tf.Tensor2D;
  /** The rollout engine's logprobs. */
  oldLogprobs: tf.Tensor2D;
  /** With `tis`: the proximal policy's logprobs (no gradient) and the truncated weights. */
  proximalLogprobs?: tf.Tensor2D;
  tisWeights?: tf.Tensor2D;
  advantages: tf.Tensor2D;
  refLogprobs: tf.Tensor2D;
  /** 1 on response tokens, 0 elsewhere. */
  mask: tf.Tensor2D;
  tf: typeof tf;
}) => tf.Scalar;

export interface StepMetrics {
  /**
   * The loss or the summed gradients were not finite (NaN, ±Infinity): the step was not taken,
   * `step` is the version before it, and every rank of a data-parallel group skipped it.
   */
  skipped: boolean;
  step: number;
  loss: number;
  pgLoss: number;
  kl: number;
  /** Mean token entropy of the policy over the response tokens. */
  entropy: number;
  clipFraction: number;
  gradNorm: number;
  lr: number;
  tokens: number;
  /** Forward/backward passes (micro-batches) the step took on this shard. */
  passes: number;
  /** Whether its passes ran with gradient checkpointing (`gradientCheckpointing`). */
  gradientCheckpointing: boolean;
  /**
   * The train–inference mismatch: mean |trainer logprob − rollout logprob| over the response
   * tokens the trainer scored with the weights that drew them (fresh samples in the training
   * pass, stale ones under a kept earlier version: `lagWindow`), both at the sample's
   * temperature. A numerics bug shows here (goal ≤ 1e-3). null: no such token (SFT, or only
   * stale samples beyond the window).
   */
  mismatch: number | null;
  /** Response tokens `mismatch` covers. */
  mismatchTokens: number;
  /**
   * The policy lag: mean |trainer logprob − rollout logprob| over stale samples' tokens (drawn by
   * an older version) under the current weights: how far the policy moved since they were drawn
   * (what TIS corrects for), plus the mismatch. null: no stale sample.
   */
  policyLag: number | null;
  /** Response tokens `policyLag` covers. */
  policyLagTokens: number;
  /** Mean version gap (current − drawing version) over those tokens; null with `policyLag`. */
  policyLagVersions: number | null;
  /** With `tis`: the mean truncated importance weight over this shard's response tokens. */
  tisWeight?: number;
  /** With `tis`: the share of response tokens whose weight was truncated at the cap. */
  tisTruncated?: number;
  /**
   * When the batch had samples with a teacher's top-K: the mean top-K reverse KL (student‖teacher,
   * unweighted) over this shard's distilled tokens (0 when this shard had none).
   */
  distillLoss?: number;
  /** Response tokens the distillation term covered on this shard. */
  distillTokens?: number;
}

/**
 * One pass's samples on the trainer's grids. Laid out [batch, width] (position t predicts token
 * t + 1) as the decoder reads `inputIds`; the per-token grids (targets … distill) are then
 * compacted to the response tokens alone, [1, tokens] with `rows` naming each one's position
 * (b · width + t), so that the LM head and everything computed from its [tokens, vocab] output
 * cover only what the loss reads — except under a custom loss, which gets the whole grid.
 */
interface Batch {
  inputIds: number[][];
  /** Its forward passes run with gradient checkpointing. */
  checkpoint?: boolean;
  /** The response positions (b · width + t, ascending) the compact grids hold, one per column. */
  rows?: number[];
  /** The sample each compact column belongs to. */
  rowSample?: number[];
  targets: number[][];
  mask: number[][];
  oldLogprobs: number[][];
  advantages: number[][];
  refLogprobs: number[][];
  /** Rows whose sample brought no refLogprobs: the trainer scores them under its reference. */
  refMissing: number[];
  /**
   * Versions between the weights that drew each response token's sample and the step's (0:
   * fresh), −1 where unknown (a teacher's reply, a version newer than the trainer's) and off the
   * response: laid out as the mask.
   */
  lag: number[][];
  /**
   * 1 / temperature of each sample (of each compact column, with `rows`); undefined when every
   * sample is at temperature 1.
   */
  inverseTemperature?: number[];
  /** With TIS: the proximal policy's logprobs, laid out as oldLogprobs. */
  proximal?: number[][];
  /** Top-K distillation, when a sample carries a teacher's top-K. */
  distill?: DistillGrid;
  tokens: number;
}

/** The teachers' top-K laid out as the batch: [batch, len − 1, k], and per-token weights. */
interface DistillGrid {
  ids: number[][][];
  logprobs: number[][][];
  /** distillWeight on a distilled response token, 0 elsewhere. */
  weight: number[][];
  /** 1 on a distilled response token, 0 elsewhere (for the unweighted metric). */
  mask: number[][];
  tokens: number;
}

/** What one pass reads back, in one transfer, in this order. */
const PASS_STATS = [
  'loss',
  'pgSum',
  'klSum',
  'entropySum',
  'clipFraction',
  'freshDiffSum',
  'staleDiffSum',
  'tisSum',
  'truncatedSum',
  'distillSum',
] as const;
type PassStat = (typeof PASS_STATS)[number];

/** The default memory budget of one forward/backward pass (`passMemoryBytes`). */
export const DEFAULT_PASS_MEMORY_BYTES = 1024 * 2 ** 20;
/** What one pass may need on wasm: its heap is capped at 4 GiB and also holds the model. */
const WASM_PASS_LIMIT_BYTES = 3 * 2 ** 30;
const mib = (bytes: number) => Math.ceil(bytes / 2 ** 20);

/** One sample needs more memory than the trainer's backend can give a pass. */
export class TrainerMemoryError extends ClawrayError {}
registerErrorClass(TrainerMemoryError);

export class PolicyTrainer {
  private readonly update: WeightUpdate;
  private readonly trainableParameters: number;
  /** tfjs names its variables itself; gradients come back under those names. */
  private readonly hfNameOf: Map<string, string>;
  /**
   * With a KL penalty: the reference policy's trainable values, the model as the trainer loaded
   * it (its directory's weights; under LoRA the adapters as initialised, B = 0: the base model):
   * in host memory for a host update, on the device for a device one.
   */
  private readonly reference?: TrainableValues;
  /** Earlier versions' trainable values by version, for `mismatch` on stale samples (`lagWindow`). */
  private readonly drawnWeights = new Map<number, TrainableValues>();

  constructor(
    readonly decoder: TfjsDecoder,
    private readonly options: PolicyTrainerOptions,
  ) {
    const window = options.lagWindow ?? 0;
    if (!(Number.isInteger(window) && window >= 0)) {
      throw new ConfigError(`lagWindow must be a whole number ≥ 0, got ${window}`, {
        fields: { field: 'lagWindow' },
      });
    }
    if (options.tis !== undefined && !(options.tis.cap > 1)) {
      throw new ConfigError(`tis.cap must be a number > 1, got ${options.tis.cap}`, {
        fields: { field: 'tis.cap' },
      });
    }
    const onDevice = (options.update ?? (tf.getBackend() === 'webgpu' ? 'device' : 'host')) === 'device';
    this.update = onDevice
      ? new DeviceUpdate(decoder, options.optimizer, options.bucketBytes)
      : new HostUpdate(decoder, options.optimizer);
    // With LoRA only the adapters train; otherwise every weight.
    const trainable = decoder.trainableVariables;
    this.trainableParameters = [...trainable.values()].reduce((n, v) => n + v.size, 0);
    this.hfNameOf = new Map([...trainable].map(([name, v]) => [v.name, name]));
    if ((options.klCoef ?? 0) > 0) {
      this.reference = onDevice ? decoder.snapshotTrainable() : decoder.readTrainable();
    }
  }

  get stepsTaken(): number {
    return this.update.stepsTaken;
  }

  /** Where this trainer sums and applies its gradients (`update`). */
  get updatesOn(): 'host' | 'device' {
    return this.update instanceof DeviceUpdate ? 'device' : 'host';
  }

  /** The host AdamW of a host update (its moments as arrays); a device update has none. */
  get adam(): AdamW {
    if (!(this.update instanceof HostUpdate)) {
      throw new Error('this trainer updates on the device: use optimizerState() / resetOptimizer()');
    }
    return this.update.optimizer;
  }

  /** AdamW's moments and step count (a checkpoint's optimizer state), wherever they are held. */
  optimizerState(): Promise<AdamWState> {
    return this.update.state();
  }

  loadOptimizerState(state: AdamWState): void {
    this.update.loadState(state);
  }

  /** Starts AdamW's moments afresh; the step count goes on. */
  resetOptimizer(): void {
    this.update.resetMoments();
  }

  /**
   * Drops the earlier versions' weights kept for `mismatch`: after the weights were replaced
   * (a checkpoint restored), a version number may name other weights than the ones kept.
   */
  forgetDrawnWeights(): void {
    for (const values of this.drawnWeights.values()) disposeValues(values);
    this.drawnWeights.clear();
  }

  /** Frees what the trainer holds on the backend (AdamW's moments, a device reference policy). */
  dispose(): void {
    this.update.dispose();
    if (this.reference) disposeValues(this.reference);
    this.forgetDrawnWeights();
  }

  /** Response tokens of a batch (what a driver sums over shards for `globalTokens`). */
  static countTokens(samples: TrainSample[]): number {
    return samples.reduce((n, s) => n + Math.max(0, s.tokenIds.length - s.responseStart), 0);
  }

  async step(samples: TrainSample[], options: StepOptions = {}): Promise<StepMetrics> {
    const method = options.method ?? this.options.method;
    if (samples.length === 0) throw new ConfigError('trainStep needs at least one sample');
    const globalTokens = options.globalTokens ?? PolicyTrainer.countTokens(samples);
    if (globalTokens <= 0) throw new ConfigError('the batch has no response tokens to train on');
    const totals = {
      loss: 0,
      pg: 0,
      kl: 0,
      entropy: 0,
      clipped: 0,
      fresh: 0,
      stale: 0,
      tis: 0,
      truncated: 0,
      tokens: 0,
      distill: 0,
      distillTokens: 0,
      distilled: false,
    };
    const { passes, checkpoint } = this.passes(samples);
    const version = this.update.stepsTaken;
    const batches = passes.map((indices, pass) => ({
      pass,
      batch: {
        ...this.layout(
          indices.map((i) => samples[i]),
          method,
          version,
        ),
        checkpoint,
      },
    }));
    if (method === 'rl' && this.reference && batches.some(({ batch }) => batch.refMissing.length > 0)) {
      await this.scoreReference(batches.map(({ batch }) => batch));
    }
    const drift = driftCounts(batches.map(({ batch }) => batch));
    // Stale samples under the weights that drew them (before this step keeps its own).
    const drawn =
      method === 'rl'
        ? await this.scoreDrawnWeights(
            batches.map(({ batch }) => batch),
            version,
          )
        : undefined;
    if (method === 'rl') this.keepDrawnWeights(version);
    this.update.reset();
    for (const { pass, batch } of batches) {
      const seed = ((this.options.seed ?? 0) * 100_003 + this.update.stepsTaken) * 1_000 + pass;
      // Every micro-batch's loss is already divided by the global token count, so summing
      // their gradients gives exactly the gradient of the whole batch.
      const tap = this.update.tap(pass === batches.length - 1, options.reduce !== undefined);
      const part = await this.backward(batch, globalTokens, seed, method, tap);
      await this.update.add(part.grads);
      totals.loss += part.loss;
      totals.pg += part.pgSum;
      totals.kl += part.klSum;
      totals.entropy += part.entropySum;
      totals.clipped += part.clipFraction * part.tokens;
      totals.fresh += part.freshDiffSum;
      totals.stale += part.staleDiffSum;
      totals.tis += part.tisSum;
      totals.truncated += part.truncatedSum;
      totals.tokens += part.tokens;
      totals.distill += part.distillSum;
      totals.distillTokens += part.distillTokens;
      totals.distilled ||= part.distilled;
    }
    const lr =
      options.lr ??
      lrAt(this.update.stepsTaken, {
        baseLr: this.options.optimizer.lr,
        ...this.options.schedule,
      });
    const { gradNorm, skipped } = await this.update.finish({
      lossFinite: Number.isFinite(totals.loss),
      reduce: options.reduce,
      lr,
      maxGradNorm: this.options.maxGradNorm ?? 1,
    });
    return {
      skipped,
      step: this.update.stepsTaken,
      loss: totals.loss,
      pgLoss: totals.pg / globalTokens,
      kl: totals.kl / globalTokens,
      entropy: totals.entropy / totals.tokens,
      clipFraction: totals.clipped / totals.tokens,
      gradNorm,
      lr,
      tokens: totals.tokens,
      passes: batches.length,
      gradientCheckpointing: checkpoint,
      ...driftMetrics(method, totals, drift, drawn),
      ...(this.tisOn(method)
        ? { tisWeight: totals.tis / totals.tokens, tisTruncated: totals.truncated / totals.tokens }
        : {}),
      ...(totals.distilled
        ? {
            distillLoss: totals.distillTokens > 0 ? totals.distill / totals.distillTokens : 0,
            distillTokens: totals.distillTokens,
          }
        : {}),
    };
  }

  /**
   * The step's micro-batches (sample indices): within `microBatchSize` and the pass memory
   * budget, and whether they run with gradient checkpointing. On wasm a pass that cannot fit
   * the heap is refused here, before the module aborts.
   */
  private passes(samples: TrainSample[]): { passes: number[][]; checkpoint: boolean } {
    const k = Math.max(0, ...samples.map((s) => s.teacherTopK?.k ?? 0));
    // On a device one tensor must fit one storage binding (WebGPU's maxStorageBufferBindingSize,
    // 128 MiB on lavapipe): the pass's [logit rows, vocab] logits are its largest.
    const binding = tf.getBackend() === 'webgpu' ? webgpuLimits()?.maxStorageBufferBindingSize : undefined;
    const vocabBytes = this.decoder.dims.vocab * 4;
    const costWith = (checkpoint: boolean) => (n: number, width: number, logitRows: number) =>
      binding !== undefined && logitRows * vocabBytes > binding
        ? Number.POSITIVE_INFINITY
        : passBytes(this.decoder.dims, this.trainableParameters, {
            samples: n,
            width,
            logitRows,
            distillTopK: k,
            checkpoint,
          });
    const lengths = samples.map((s) => s.tokenIds.length);
    // The LM head runs on the response tokens alone, but on every position under a custom loss.
    const logitRows = this.options.customLoss
      ? undefined
      : samples.map((s) => s.tokenIds.length - s.responseStart);
    const budget = this.options.passMemoryBytes ?? DEFAULT_PASS_MEMORY_BYTES;
    const longest = lengths.indexOf(Math.max(...lengths));
    const alone = (checkpoint: boolean) =>
      costWith(checkpoint)(1, lengths[longest] - 1, logitRows?.[longest] ?? lengths[longest] - 1);
    const mode = this.options.gradientCheckpointing ?? 'auto';
    // Auto: only where it helps (a one-layer model's checkpointed pass is no smaller).
    const checkpoint =
      mode === 'on' || (mode === 'auto' && alone(false) > budget && alone(true) < alone(false));
    const passes = planPasses(lengths, costWith(checkpoint), budget, this.options.microBatchSize, logitRows);
    if (binding !== undefined) {
      const rows = Math.max(...lengths.map((n, i) => logitRows?.[i] ?? n - 1));
      if (rows * vocabBytes > binding) {
        throw new TrainerMemoryError(
          `a sample with ${rows} logit rows needs a ${mib(rows * vocabBytes)} MiB logits tensor, more than one WebGPU binding of this adapter holds (${mib(binding)} MiB): shorten the responses (rollout.maxTokens)`,
          { fields: { rows, limitBytes: binding } },
        );
      }
    }
    if (tf.getBackend() === 'wasm') {
      const need = alone(checkpoint);
      if (need > WASM_PASS_LIMIT_BYTES) {
        throw new TrainerMemoryError(
          `a ${lengths[longest]}-token sample needs about ${mib(need)} MiB of activations in one pass${checkpoint ? ' with gradient checkpointing' : ''}, more than the wasm backend's heap can hold (${mib(WASM_PASS_LIMIT_BYTES)} MiB); ${!checkpoint && alone(true) <= WASM_PASS_LIMIT_BYTES ? 'set train.gradientCheckpointing: on, ' : ''}shorten the episodes (rollout.maxTokens, maxTurns) or install @tensorflow/tfjs-node`,
          { fields: { tokens: lengths[longest], estimatedBytes: need, limitBytes: WASM_PASS_LIMIT_BYTES } },
        );
      }
    }
    return { passes, checkpoint };
  }

  private tisOn(method: 'rl' | 'sft'): boolean {
    return method === 'rl' && this.options.tis !== undefined;
  }

  /** The logits as the samples were drawn from: each row divided by its sample's temperature. */
  private tempered(logits: tf.Tensor3D, batch: Batch): tf.Tensor3D {
    const inv = batch.inverseTemperature;
    if (!inv) return logits;
    const shape: [number, number, number] = batch.rows ? [1, inv.length, 1] : [inv.length, 1, 1];
    return tf.mul(logits, tf.tensor3d(inv, shape)) as tf.Tensor3D;
  }

  /** The policy's logits of the batch's positions (its response tokens when compact). */
  private logitsOf(
    batch: Batch,
    training: boolean,
    dropoutSeed?: number,
    onGradient?: GradientTap,
  ): tf.Tensor3D {
    return this.decoder.forward({
      inputIds: batch.inputIds,
      training,
      ...(onGradient ? { onGradient } : {}),
      // Without a gradient too: each checkpointed layer frees its intermediates as it returns.
      ...(batch.checkpoint ? { checkpoint: true } : {}),
      ...(dropoutSeed !== undefined ? { dropoutSeed } : {}),
      ...(batch.rows ? { logitRows: batch.rows } : {}),
    }).logits;
  }

  /** TIS: the current (pre-update) policy's logprobs of the batch, without gradient or dropout. */
  private async proximalLogprobs(batch: Batch): Promise<number[][]> {
    const out = tf.tidy(() =>
      tokenLogprobs(this.tempered(this.logitsOf(batch, false), batch), batch.targets),
    );
    const values = await out.array();
    out.dispose();
    return values;
  }

  /**
   * KL penalty: the reference policy's logprobs of the rows that came without them, at each
   * sample's temperature (OpenRLHF's and slime's frozen reference model, here the loaded weights
   * swapped in for the scoring: one copy of the trainable weights, in host memory for a host
   * update (two writes of them per step), on the device for a device one).
   */
  private async scoreReference(batches: Batch[]): Promise<void> {
    await this.withTrainable(this.reference!, async () => {
      for (const batch of batches) {
        if (batch.refMissing.length === 0) continue;
        const scored = await this.proximalLogprobs(batch);
        if (batch.rowSample) {
          batch.rowSample.forEach((b, r) => {
            if (batch.refMissing.includes(b)) batch.refLogprobs[0][r] = scored[0][r];
          });
        } else {
          for (const b of batch.refMissing) batch.refLogprobs[b] = scored[b];
        }
      }
    });
  }

  /** The trainable values now: host copies for a host update, device clones for a device one. */
  private snapshotTrainable(): TrainableValues {
    return this.updatesOn === 'device' ? this.decoder.snapshotTrainable() : this.decoder.readTrainable();
  }

  /** Runs `fn` with `values` swapped in for the trainable weights, and puts them back after. */
  private async withTrainable<T>(values: TrainableValues, fn: () => Promise<T>): Promise<T> {
    const put = (v: TrainableValues) =>
      this.updatesOn === 'device'
        ? this.decoder.assignTrainableTensors(v as Map<string, tf.Tensor>)
        : this.decoder.assignTrainable(v as Map<string, Float32Array>);
    const current = this.snapshotTrainable();
    put(values);
    try {
      return await fn();
    } finally {
      put(current);
      disposeValues(current);
    }
  }

  /**
   * Keeps the weights this step starts from (version `version`) for the next `lagWindow` steps'
   * stale samples, and lets go of versions no sample can come from any more.
   */
  private keepDrawnWeights(version: number): void {
    const window = this.options.lagWindow ?? 0;
    if (window === 0) return;
    for (const [v, values] of this.drawnWeights) {
      if (v < version - window + 1 || v > version) {
        disposeValues(values);
        this.drawnWeights.delete(v);
      }
    }
    if (!this.drawnWeights.has(version)) this.drawnWeights.set(version, this.snapshotTrainable());
  }

  /**
   * `mismatch` on stale samples: each kept earlier version's weights swapped in once, the
   * micro-batches holding tokens it drew scored without gradient, |that − rollout| summed over
   * those tokens. One forward pass per such micro-batch and version (as TIS's proximal pass).
   */
  private async scoreDrawnWeights(
    batches: Batch[],
    version: number,
  ): Promise<{ sum: number; tokens: number }> {
    let sum = 0;
    let tokens = 0;
    for (const [v, values] of this.drawnWeights) {
      const lag = version - v;
      if (lag <= 0) continue;
      const holding = batches.filter((b) => b.lag.some((row) => row.includes(lag)));
      if (holding.length === 0) continue;
      await this.withTrainable(values, async () => {
        for (const batch of holding) {
          const scored = await this.proximalLogprobs(batch);
          batch.lag.forEach((row, i) => {
            row.forEach((l, j) => {
              if (l !== lag || batch.mask[i][j] === 0) return;
              sum += Math.abs(scored[i][j] - batch.oldLogprobs[i][j]);
              tokens++;
            });
          });
        }
      });
    }
    return { sum, tokens };
  }

  /**
   * Forward and backward of one micro-batch: its gradients by parameter name (tensors, for the
   * weight update to take) and its loss parts. The parts are read back in one transfer queued
   * right after the forward pass, ahead of the backward pass's work, so that on a device they
   * arrive while the backward pass still runs; `tap` sees each gradient as it is made.
   */
  private async backward(
    batch: Batch,
    globalTokens: number,
    dropoutSeed: number,
    method: 'rl' | 'sft',
    tap?: GradientTap,
  ) {
    const vars = [...this.decoder.trainableVariables.values()];
    // The weights change only after every micro-batch: scoring here is scoring before the step.
    if (this.tisOn(method)) batch.proximal = await this.proximalLogprobs(batch);
    let read: Promise<Float32Array> | undefined;
    let stats: tf.Tensor | undefined;
    const { value, grads } = tf.variableGrads(() => {
      const logits = this.tempered(this.logitsOf(batch, true, dropoutSeed, tap), batch);
      const logprobs = tokenLogprobs(logits, batch.targets);
      const mask = tf.tensor2d(batch.mask);
      const { total, ...parts } = this.tokenLoss(logits, logprobs, mask, batch, method);
      const distill = method === 'rl' ? this.distillLoss(logits, batch) : undefined;
      const loss = tf.div(distill ? tf.add(total, distill.total) : total, globalTokens) as tf.Scalar;
      const sums: Record<PassStat, tf.Scalar> = { ...parts, loss, distillSum: distill?.sum ?? tf.scalar(0) };
      stats = tf.keep(tf.stack(PASS_STATS.map((name) => sums[name])));
      read = stats.data() as Promise<Float32Array>;
      return loss;
    }, vars);
    value.dispose();
    const byName = new Map<string, tf.Tensor>();
    for (const [tfName, g] of Object.entries(grads)) byName.set(this.hfNameOf.get(tfName)!, g);
    let numbers: Float32Array;
    try {
      numbers = await read!;
    } finally {
      stats!.dispose();
    }
    const sums = Object.fromEntries(PASS_STATS.map((name, i) => [name, numbers[i]])) as Record<
      PassStat,
      number
    >;
    return {
      grads: byName,
      ...sums,
      tokens: batch.tokens,
      distilled: method === 'rl' && batch.distill !== undefined,
      distillTokens: method === 'rl' ? (batch.distill?.tokens ?? 0) : 0,
    };
  }

  /**
   * Top-K distillation of the samples that carry a teacher's top-K: Σ distillWeight · KL over
   * their response tokens (the total) and the unweighted Σ KL (the metric), as scalar tensors.
   */
  private distillLoss(logits: tf.Tensor3D, batch: Batch): { total: tf.Scalar; sum: tf.Scalar } | undefined {
    const grid = batch.distill;
    if (!grid) return undefined;
    const kl = topKKlPerToken({
      studentLogits: logits,
      teacherTopIds: grid.ids,
      teacherTopLogprobs: tf.tensor3d(grid.logprobs),
      direction: this.options.distillDirection,
    });
    const sum = tf.sum(tf.mul(kl, tf.tensor2d(grid.mask))) as tf.Scalar;
    return { total: tf.sum(tf.mul(kl, tf.tensor2d(grid.weight))) as tf.Scalar, sum };
  }

  /** The summed per-token loss of the batch and its parts, as scalar tensors. */
  private tokenLoss(
    logits: tf.Tensor3D,
    logprobs: tf.Tensor2D,
    mask: tf.Tensor2D,
    batch: Batch,
    method: 'rl' | 'sft',
  ) {
    const sum = (t: tf.Tensor) => tf.sum(tf.mul(t, mask)) as tf.Scalar;
    const entropySum = sum(tokenEntropy(logits));
    const entropyCoef = this.options.entropyCoef ?? 0;
    const zero = tf.scalar(0);
    const none = {
      klSum: zero,
      clipFraction: zero,
      freshDiffSum: zero,
      staleDiffSum: zero,
      tisSum: zero,
      truncatedSum: zero,
    };
    if (method === 'sft') {
      const total = sum(tf.neg(logprobs));
      return { ...none, total, pgSum: total, entropySum };
    }
    const rollout = tf.tensor2d(batch.oldLogprobs);
    // The drift, split by whether the weights that drew a token are the ones scoring it.
    const absDiff = tf.abs(tf.sub(logprobs, rollout));
    const lag = tf.tensor2d(batch.lag);
    const freshDiffSum = sum(tf.mul(absDiff, tf.cast(tf.equal(lag, 0), 'float32')));
    const staleDiffSum = sum(tf.mul(absDiff, tf.cast(tf.greater(lag, 0), 'float32')));
    // TIS: PPO against the proximal policy, each token weighted by its truncated importance weight.
    const tis = this.tisOn(method) ? this.tisWeights(batch, rollout, mask) : undefined;
    if (this.options.customLoss) {
      const total = this.options.customLoss({
        logits,
        logprobs,
        oldLogprobs: rollout,
        ...(tis ? { proximalLogprobs: tis.proximal, tisWeights: tis.weights } : {}),
        advantages: tf.tensor2d(batch.advantages),
        refLogprobs: tf.tensor2d(batch.refLogprobs),
        mask,
        tf,
      });
      if (!(total instanceof tf.Tensor) || total.rank !== 0) {
        throw new ConfigError('the custom loss must return a scalar tensor (the summed token loss)');
      }
      return { ...none, ...tis?.sums, total, pgSum: total, entropySum, freshDiffSum, staleDiffSum };
    }
    const [clipLow, clipHigh] = this.options.clip ?? [0.2, 0.28];
    const ppo = ppoClipLoss({
      logprobs,
      oldLogprobs: tis?.proximal ?? rollout,
      advantages: tf.tensor2d(batch.advantages),
      mask,
      clipLow,
      clipHigh,
      ...(tis ? { importanceWeights: tis.weights } : {}),
    });
    const pgSum = sum(ppo.tokenLoss);
    let total: tf.Scalar = pgSum;
    let klSum = zero;
    const klCoef = this.options.klCoef ?? 0;
    if (klCoef > 0) {
      klSum = sum(klPerToken(logprobs, tf.tensor2d(batch.refLogprobs), 'k3'));
      total = tf.add(total, tf.mul(klSum, klCoef));
    }
    if (entropyCoef > 0) total = tf.sub(total, tf.mul(entropySum, entropyCoef));
    return {
      total,
      pgSum,
      klSum,
      entropySum,
      clipFraction: ppo.clipFraction,
      freshDiffSum,
      staleDiffSum,
      tisSum: tis?.sums.tisSum ?? zero,
      truncatedSum: tis?.sums.truncatedSum ?? zero,
    };
  }

  /** The proximal logprobs as a tensor, their truncated weights, and the weights' masked sums. */
  private tisWeights(batch: Batch, rollout: tf.Tensor2D, mask: tf.Tensor2D) {
    const cap = this.options.tis!.cap;
    const proximal = tf.tensor2d(batch.proximal!);
    const weights = truncatedImportanceWeights({ proximalLogprobs: proximal, rolloutLogprobs: rollout, cap });
    const tisSum = tf.sum(tf.mul(weights, mask)) as tf.Scalar;
    const truncatedSum = tf.sum(tf.mul(tf.cast(tf.greaterEqual(weights, cap), 'float32'), mask)) as tf.Scalar;
    return { proximal, weights, sums: { tisSum, truncatedSum } };
  }

  /** Right-pads the samples into [batch, len − 1] grids: position t predicts token t + 1. */
  private layout(samples: TrainSample[], method: 'rl' | 'sft', version: number): Batch {
    const width = Math.max(...samples.map((s) => s.tokenIds.length)) - 1;
    const grid = () => samples.map(() => new Array<number>(width).fill(0));
    const batch: Batch = {
      inputIds: samples.map((s) =>
        [...s.tokenIds, ...new Array(width + 1 - s.tokenIds.length).fill(0)].slice(0, width),
      ),
      targets: grid(),
      mask: grid(),
      oldLogprobs: grid(),
      advantages: grid(),
      refLogprobs: grid(),
      refMissing: [],
      lag: samples.map(() => new Array<number>(width).fill(-1)),
      tokens: 0,
    };
    const temperatures = samples.map((s, b) => {
      const t = s.temperature ?? 1;
      if (!(Number.isFinite(t) && t > 0)) {
        throw new ConfigError(
          `sample ${b}: temperature must be > 0 (the temperature its response was sampled with), got ${t}: a greedy (temperature 0) output is no sample of the policy and cannot be trained on`,
          { fields: { sample: b, temperature: t } },
        );
      }
      return t;
    });
    // At temperature 1 everywhere the logits stay as they are (no extra op, bit-identical).
    if (temperatures.some((t) => t !== 1)) batch.inverseTemperature = temperatures.map((t) => 1 / t);
    samples.forEach((s, b) => {
      const responseLength = s.tokenIds.length - s.responseStart;
      if (s.responseStart < 1 || responseLength < 1) {
        throw new ConfigError(`sample ${b}: responseStart must be ≥ 1 and leave at least one response token`);
      }
      if (method === 'rl') {
        if (s.oldLogprobs?.length !== responseLength) {
          throw new ConfigError(
            `sample ${b}: oldLogprobs needs one value per response token (${responseLength})`,
          );
        }
        if (s.advantages === undefined) throw new ConfigError(`sample ${b}: RL samples need advantages`);
        if (Array.isArray(s.advantages) && s.advantages.length !== responseLength) {
          throw new ConfigError(
            `sample ${b}: advantages needs one value per response token (${responseLength})`,
          );
        }
        if (s.refLogprobs !== undefined && s.refLogprobs.length !== responseLength) {
          throw new ConfigError(
            `sample ${b}: refLogprobs needs one value per response token (${responseLength})`,
          );
        }
        if (s.refLogprobs === undefined && this.reference) batch.refMissing.push(b);
      }
      const drawnBy = s.weightVersion === undefined ? version : s.weightVersion;
      if (drawnBy !== null && !(Number.isInteger(drawnBy) && drawnBy >= 0)) {
        throw new ConfigError(
          `sample ${b}: weightVersion must be a whole number ≥ 0 or null, got ${drawnBy}`,
          {
            fields: { sample: b, weightVersion: drawnBy },
          },
        );
      }
      // A version newer than the trainer's (weights since restored to an earlier step): unknown.
      const lag = drawnBy === null || drawnBy > version || method === 'sft' ? -1 : version - drawnBy;
      for (let t = 0; t + 1 < s.tokenIds.length; t++) batch.targets[b][t] = s.tokenIds[t + 1];
      for (let k = 0; k < responseLength; k++) {
        const t = s.responseStart - 1 + k;
        batch.mask[b][t] = 1;
        batch.oldLogprobs[b][t] = s.oldLogprobs?.[k] ?? 0;
        batch.advantages[b][t] = Array.isArray(s.advantages) ? s.advantages[k] : (s.advantages ?? 0);
        batch.refLogprobs[b][t] = s.refLogprobs?.[k] ?? 0;
        batch.lag[b][t] = lag;
      }
      batch.tokens += responseLength;
    });
    if (method === 'rl') batch.distill = distillGrid(samples, width);
    return this.options.customLoss ? batch : compact(batch);
  }
}

/** The batch's per-token grids cut down to its response tokens (`Batch`), one column each. */
function compact(batch: Batch): Batch {
  const rows: number[] = [];
  const rowSample: number[] = [];
  const cells: [number, number][] = [];
  const width = batch.inputIds[0].length;
  batch.mask.forEach((row, b) => {
    row.forEach((m, t) => {
      if (m === 0) return;
      rows.push(b * width + t);
      rowSample.push(b);
      cells.push([b, t]);
    });
  });
  const pick = <T>(grid: T[][]): T[][] => [cells.map(([b, t]) => grid[b][t])];
  const distill = batch.distill;
  return {
    ...batch,
    rows,
    rowSample,
    targets: pick(batch.targets),
    mask: pick(batch.mask),
    oldLogprobs: pick(batch.oldLogprobs),
    advantages: pick(batch.advantages),
    refLogprobs: pick(batch.refLogprobs),
    lag: pick(batch.lag),
    ...(batch.inverseTemperature
      ? { inverseTemperature: rowSample.map((b) => batch.inverseTemperature![b]) }
      : {}),
    ...(distill
      ? {
          distill: {
            ids: pick(distill.ids),
            logprobs: pick(distill.logprobs),
            weight: pick(distill.weight),
            mask: pick(distill.mask),
            tokens: distill.tokens,
          },
        }
      : {}),
  };
}

/**
 * The samples' top-K rows on the batch grid (position t predicts token t + 1, as the targets),
 * or undefined when no sample carries one. Positions without a teacher get uniform rows of
 * weight 0: they add nothing, and keep the KL finite.
 */
function distillGrid(samples: TrainSample[], width: number): DistillGrid | undefined {
  const withTopK = samples.filter((s) => s.teacherTopK !== undefined);
  if (withTopK.length === 0) return undefined;
  const k = withTopK[0].teacherTopK!.k;
  const filler = Math.log(1 / (k + 1));
  const grid: DistillGrid = {
    ids: samples.map(() => Array.from({ length: width }, () => new Array<number>(k).fill(0))),
    logprobs: samples.map(() => Array.from({ length: width }, () => new Array<number>(k).fill(filler))),
    weight: samples.map(() => new Array<number>(width).fill(0)),
    mask: samples.map(() => new Array<number>(width).fill(0)),
    tokens: 0,
  };
  samples.forEach((s, b) => {
    const top = s.teacherTopK;
    if (!top) return;
    const responseLength = s.tokenIds.length - s.responseStart;
    if (!(Number.isInteger(top.k) && top.k >= 1) || top.k !== k) {
      throw new ConfigError(
        `sample ${b}: teacherTopK.k is ${top.k}, but the batch's teachers gave ${k} tokens per position: one batch distills at one K`,
        { fields: { sample: b, k: top.k } },
      );
    }
    if (top.ids.length !== responseLength * k || top.logprobs.length !== responseLength * k) {
      throw new ConfigError(
        `sample ${b}: teacherTopK needs ${k} ids and logprobs per response token (${responseLength * k}), got ${top.ids.length} ids and ${top.logprobs.length} logprobs`,
        { fields: { sample: b } },
      );
    }
    const weight = s.distillWeight ?? 1;
    if (!(Number.isFinite(weight) && weight >= 0)) {
      throw new ConfigError(`sample ${b}: distillWeight must be a number ≥ 0, got ${weight}`, {
        fields: { sample: b, distillWeight: weight },
      });
    }
    for (let p = 0; p < responseLength; p++) {
      const t = s.responseStart - 1 + p;
      grid.ids[b][t] = top.ids.slice(p * k, (p + 1) * k);
      grid.logprobs[b][t] = top.logprobs.slice(p * k, (p + 1) * k);
      grid.weight[b][t] = weight;
      grid.mask[b][t] = 1;
    }
    grid.tokens += responseLength;
  });
  return grid;
}

/** Trainable values by name: host copies (a host update) or device tensors (a device one). */
type TrainableValues = Map<string, Float32Array> | Map<string, tf.Tensor>;

function disposeValues(values: TrainableValues): void {
  for (const t of values.values()) if (t instanceof tf.Tensor) t.dispose();
}

/** The step's response tokens by drift class: fresh, and stale with their summed version gap. */
function driftCounts(batches: Batch[]): { fresh: number; stale: number; staleVersions: number } {
  const out = { fresh: 0, stale: 0, staleVersions: 0 };
  for (const batch of batches) {
    batch.lag.forEach((row, i) => {
      row.forEach((l, j) => {
        if (batch.mask[i][j] === 0) return;
        if (l === 0) out.fresh++;
        else if (l > 0) {
          out.stale++;
          out.staleVersions += l;
        }
      });
    });
  }
  return out;
}

/** `mismatch` and `policyLag` of a step (StepMetrics) from its sums and token counts. */
function driftMetrics(
  method: 'rl' | 'sft',
  totals: { fresh: number; stale: number },
  counts: { fresh: number; stale: number; staleVersions: number },
  drawn: { sum: number; tokens: number } | undefined,
): Pick<StepMetrics, 'mismatch' | 'mismatchTokens' | 'policyLag' | 'policyLagTokens' | 'policyLagVersions'> {
  if (method === 'sft') {
    return {
      mismatch: null,
      mismatchTokens: 0,
      policyLag: null,
      policyLagTokens: 0,
      policyLagVersions: null,
    };
  }
  const mismatchTokens = counts.fresh + (drawn?.tokens ?? 0);
  return {
    mismatch: mismatchTokens > 0 ? (totals.fresh + (drawn?.sum ?? 0)) / mismatchTokens : null,
    mismatchTokens,
    policyLag: counts.stale > 0 ? totals.stale / counts.stale : null,
    policyLagTokens: counts.stale,
    policyLagVersions: counts.stale > 0 ? counts.staleVersions / counts.stale : null,
  };
}
