/**
 * One optimisation step of the policy on a batch of trajectories, on TensorFlow.js: per-token
 * logprobs of the given tokens, the method's loss (PPO clip for RL, masked cross-entropy for
 * SFT), gradients flattened into one buffer (the all-reduce point of data parallelism),
 * global-norm clipping and AdamW. Losses are sums over this shard's tokens divided by the
 * GLOBAL token count, so N shards that sum their gradients take exactly the step one shard
 * would take on the whole batch.
 */
import * as tf from '@tensorflow/tfjs';
import { ConfigError } from '../../common/errors.js';
import type { TfjsDecoder } from '../models/tfjs-decoder.js';
import { tokenLogprobs } from '../models/tfjs-decoder.js';
import { clipGradNorm } from './grad-clip.js';
import { klPerToken, ppoClipLoss, tokenEntropy } from './losses.js';
import { type LrScheduleOptions, lrAt } from './lr-schedule.js';
import { AdamW, type AdamWOptions, canonicalOrder, flattenGrads, unflatten } from './optimizer.js';

export interface TrainSample {
  /** Prompt followed by the response, exactly as the rollout engine produced them. */
  tokenIds: number[];
  /** Index of the first response token: the loss covers tokens from here on. */
  responseStart: number;
  /** RL: the rollout engine's logprob of each response token. */
  oldLogprobs?: number[];
  /** RL: one advantage for the whole response, or one per response token. */
  advantages?: number | number[];
  /** RL with a KL penalty: the frozen reference policy's logprob of each response token. */
  refLogprobs?: number[];
}

export interface PolicyTrainerOptions {
  method: 'rl' | 'sft';
  optimizer: AdamWOptions;
  schedule?: Omit<LrScheduleOptions, 'baseLr'>;
  /** Global gradient norm cap; 0 turns clipping off. Default 1. */
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
   * Samples per forward/backward pass; a step accumulates the gradients of all its
   * micro-batches before the one update. Default: the whole batch at once.
   */
  microBatchSize?: number;
  /** Replaces the RL loss (PPO clip + KL + entropy) of `method: 'rl'` steps. */
  customLoss?: CustomLoss;
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
  /** [batch, len, vocab] logits of the policy being trained. */
  logits: tf.Tensor3D;
  /** [batch, len] logprob of each target token under the policy. */
  logprobs: tf.Tensor2D;
  oldLogprobs: tf.Tensor2D;
  advantages: tf.Tensor2D;
  refLogprobs: tf.Tensor2D;
  /** 1 on response tokens, 0 elsewhere. */
  mask: tf.Tensor2D;
  tf: typeof tf;
}) => tf.Scalar;

export interface StepMetrics {
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
  /** Mean |trainer logprob − rollout logprob| over this shard's response tokens (RL). */
  logprobDiff: number;
}

/** Sums a flat gradient buffer across data-parallel ranks, in place. */
export type GradientReducer = (flat: Float32Array) => Promise<void>;

interface Batch {
  inputIds: number[][];
  targets: number[][];
  mask: number[][];
  oldLogprobs: number[][];
  advantages: number[][];
  refLogprobs: number[][];
  tokens: number;
}

export class PolicyTrainer {
  private readonly optimizer: AdamW;
  private readonly names: string[];
  private readonly shapes: Map<string, number[]>;
  /** tfjs names its variables itself; gradients come back under those names. */
  private readonly hfNameOf: Map<string, string>;

  constructor(
    readonly decoder: TfjsDecoder,
    private readonly options: PolicyTrainerOptions,
  ) {
    this.optimizer = new AdamW(options.optimizer);
    // With LoRA only the adapters train; otherwise every weight.
    const trainable = decoder.trainableVariables;
    this.names = canonicalOrder(trainable.keys());
    this.shapes = new Map([...trainable].map(([name, v]) => [name, v.shape]));
    this.hfNameOf = new Map([...trainable].map(([name, v]) => [v.name, name]));
  }

  get stepsTaken(): number {
    return this.optimizer.stepsTaken;
  }

  get adam(): AdamW {
    return this.optimizer;
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
    const size = this.options.microBatchSize ?? samples.length;
    // Every micro-batch's loss is already divided by the global token count, so summing
    // their gradients gives exactly the gradient of the whole batch.
    let flat: Float32Array | undefined;
    const totals = { loss: 0, pg: 0, kl: 0, entropy: 0, clipped: 0, diff: 0, tokens: 0 };
    for (let start = 0; start < samples.length; start += size) {
      const seed = ((this.options.seed ?? 0) * 100_003 + this.optimizer.stepsTaken) * 1_000 + start;
      const part = await this.backward(
        this.layout(samples.slice(start, start + size), method),
        globalTokens,
        seed,
        method,
      );
      if (flat) for (let i = 0; i < flat.length; i++) flat[i] += part.flat[i];
      else flat = part.flat;
      totals.loss += part.loss;
      totals.pg += part.pgSum;
      totals.kl += part.klSum;
      totals.entropy += part.entropySum;
      totals.clipped += part.clipFraction * part.tokens;
      totals.diff += part.diffSum;
      totals.tokens += part.tokens;
    }
    await options.reduce?.(flat!);
    const summed = unflatten(flat!, this.names, this.shapes);
    const gradNorm =
      this.options.maxGradNorm === 0 ? Number.NaN : clipGradNorm(summed, this.options.maxGradNorm ?? 1);
    const lr =
      options.lr ??
      lrAt(this.optimizer.stepsTaken, {
        baseLr: this.options.optimizer.lr,
        ...this.options.schedule,
      });
    const params = this.decoder.readTrainable();
    this.optimizer.step(params, summed, lr);
    this.decoder.assignTrainable(params);
    return {
      step: this.optimizer.stepsTaken,
      loss: totals.loss,
      pgLoss: totals.pg / globalTokens,
      kl: totals.kl / globalTokens,
      entropy: totals.entropy / totals.tokens,
      clipFraction: totals.clipped / totals.tokens,
      gradNorm,
      lr,
      tokens: totals.tokens,
      logprobDiff: totals.diff / totals.tokens,
    };
  }

  /** Forward and backward of one micro-batch: its flat gradient and loss parts. */
  private async backward(batch: Batch, globalTokens: number, dropoutSeed: number, method: 'rl' | 'sft') {
    const vars = [...this.decoder.trainableVariables.values()];
    let parts = { pgSum: 0, klSum: 0, entropySum: 0, clipFraction: 0, diffSum: 0 };
    const { value, grads } = tf.variableGrads(() => {
      const { logits } = this.decoder.forward({ inputIds: batch.inputIds, training: true, dropoutSeed });
      const logprobs = tokenLogprobs(logits, batch.targets);
      const mask = tf.tensor2d(batch.mask);
      const { total, ...numbers } = this.tokenLoss(logits, logprobs, mask, batch, method);
      parts = numbers;
      return tf.div(total, globalTokens) as tf.Scalar;
    }, vars);
    const loss = (await value.data())[0];
    value.dispose();
    const byName = new Map<string, Float32Array>();
    for (const [tfName, g] of Object.entries(grads)) {
      byName.set(this.hfNameOf.get(tfName)!, Float32Array.from(await g.data()));
      g.dispose();
    }
    return { flat: flattenGrads(this.names, byName), loss, tokens: batch.tokens, ...parts };
  }

  /** The summed per-token loss of the batch (a scalar tensor) and its parts as numbers. */
  private tokenLoss(
    logits: tf.Tensor3D,
    logprobs: tf.Tensor2D,
    mask: tf.Tensor2D,
    batch: Batch,
    method: 'rl' | 'sft',
  ) {
    const sum = (t: tf.Tensor) => tf.sum(tf.mul(t, mask));
    const entropy = sum(tokenEntropy(logits));
    const entropySum = entropy.dataSync()[0];
    const entropyCoef = this.options.entropyCoef ?? 0;
    if (method === 'sft') {
      const total = sum(tf.neg(logprobs));
      return { total, pgSum: total.dataSync()[0], klSum: 0, entropySum, clipFraction: 0, diffSum: 0 };
    }
    const old = tf.tensor2d(batch.oldLogprobs);
    const diffOf = () => tf.sum(tf.mul(tf.abs(tf.sub(logprobs, old)), mask)).dataSync()[0];
    if (this.options.customLoss) {
      const total = this.options.customLoss({
        logits,
        logprobs,
        oldLogprobs: old,
        advantages: tf.tensor2d(batch.advantages),
        refLogprobs: tf.tensor2d(batch.refLogprobs),
        mask,
        tf,
      });
      if (!(total instanceof tf.Tensor) || total.rank !== 0) {
        throw new ConfigError('the custom loss must return a scalar tensor (the summed token loss)');
      }
      return { total, pgSum: total.dataSync()[0], klSum: 0, entropySum, clipFraction: 0, diffSum: diffOf() };
    }
    const [clipLow, clipHigh] = this.options.clip ?? [0.2, 0.28];
    const ppo = ppoClipLoss({
      logprobs,
      oldLogprobs: old,
      advantages: tf.tensor2d(batch.advantages),
      mask,
      clipLow,
      clipHigh,
    });
    let total = sum(ppo.tokenLoss);
    const pgSum = total.dataSync()[0];
    let klSum = 0;
    const klCoef = this.options.klCoef ?? 0;
    if (klCoef > 0) {
      const kl = sum(klPerToken(logprobs, tf.tensor2d(batch.refLogprobs), 'k3'));
      klSum = kl.dataSync()[0];
      total = tf.add(total, tf.mul(kl, klCoef));
    }
    if (entropyCoef > 0) total = tf.sub(total, tf.mul(entropy, entropyCoef));
    return {
      total,
      pgSum,
      klSum,
      entropySum,
      clipFraction: ppo.clipFraction.dataSync()[0],
      diffSum: diffOf(),
    };
  }

  /** Right-pads the samples into [batch, len − 1] grids: position t predicts token t + 1. */
  private layout(samples: TrainSample[], method: 'rl' | 'sft'): Batch {
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
      tokens: 0,
    };
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
        if ((this.options.klCoef ?? 0) > 0 && s.refLogprobs?.length !== responseLength) {
          throw new ConfigError(`sample ${b}: a KL penalty needs refLogprobs for every response token`);
        }
      }
      for (let t = 0; t + 1 < s.tokenIds.length; t++) batch.targets[b][t] = s.tokenIds[t + 1];
      for (let k = 0; k < responseLength; k++) {
        const t = s.responseStart - 1 + k;
        batch.mask[b][t] = 1;
        batch.oldLogprobs[b][t] = s.oldLogprobs?.[k] ?? 0;
        batch.advantages[b][t] = Array.isArray(s.advantages) ? s.advantages[k] : (s.advantages ?? 0);
        batch.refLogprobs[b][t] = s.refLogprobs?.[k] ?? 0;
      }
      batch.tokens += responseLength;
    });
    return batch;
  }
}
