/**
 * Loss building blocks on TensorFlow.js tensors, for the built-in methods (binary RL, OPD,
 * combine, SFT) and for custom losses. Every function is pure, runs inside `tf.tidy` (only the
 * returned tensors survive) and is differentiable with respect to its logprob / logit inputs
 * on every backend (no `tf.gather` on the wasm backend, which lacks its gradient).
 *
 * Per-token quantities are `[batch, seq]`; masks are 0/1 float tensors of the same shape
 * (other dtypes are cast). Reductions follow slime: a masked mean divides by
 * `max(Σ mask, 1)`, so an all-zero mask gives 0 rather than NaN.
 */
import * as tf from '@tensorflow/tfjs';

/** How per-token values are reduced to a scalar. */
export type LossAggregation = 'token-mean' | 'seq-mean';

/** Identity whose gradient is zero (TensorFlow.js has no built-in stop-gradient). */
const stopGradient = tf.customGrad((...args) => {
  const x = args[0] as tf.Tensor;
  return { value: tf.clone(x), gradFunc: (dy: tf.Tensor) => tf.zerosLike(dy) };
}) as (x: tf.Tensor) => tf.Tensor;

function asFloat(mask: tf.Tensor): tf.Tensor {
  return mask.dtype === 'float32' ? mask : tf.cast(mask, 'float32');
}

function checkShape(x: tf.Tensor, mask: tf.Tensor, what: string): void {
  if (x.rank !== 2 || mask.rank !== 2 || x.shape[0] !== mask.shape[0] || x.shape[1] !== mask.shape[1]) {
    throw new RangeError(`${what}: expected [batch, seq] matching the mask ${mask.shape}, got ${x.shape}`);
  }
}

/** Σ(x·mask) / max(Σ mask, 1) over all tokens. */
export function maskedMean(x: tf.Tensor, mask: tf.Tensor): tf.Scalar {
  return tf.tidy(() => {
    const m = asFloat(mask);
    return tf.div(tf.sum(tf.mul(x, m)), tf.maximum(tf.sum(m), 1)) as tf.Scalar;
  });
}

/**
 * Mean per sequence (Σ_t x·mask / max(Σ_t mask, 1)), then the mean over the sequences that have
 * at least one unmasked token (0 when none has).
 */
export function sequenceMean(x: tf.Tensor, mask: tf.Tensor): tf.Scalar {
  return tf.tidy(() => {
    const m = asFloat(mask);
    const tokens = tf.sum(m, -1);
    const perSeq = tf.div(tf.sum(tf.mul(x, m), -1), tf.maximum(tokens, 1));
    const present = tf.cast(tf.greater(tokens, 0), 'float32');
    return tf.div(tf.sum(tf.mul(perSeq, present)), tf.maximum(tf.sum(present), 1)) as tf.Scalar;
  });
}

/** `maskedMean` for 'token-mean' (default), `sequenceMean` for 'seq-mean'. */
export function aggregate(
  x: tf.Tensor,
  mask: tf.Tensor,
  aggregation: LossAggregation = 'token-mean',
): tf.Scalar {
  if (aggregation === 'token-mean') return maskedMean(x, mask);
  if (aggregation === 'seq-mean') return sequenceMean(x, mask);
  throw new RangeError(`unknown aggregation ${String(aggregation)}`);
}

export interface PpoClipInput {
  /** Current policy logprobs of the sampled tokens, [batch, seq] (the differentiable input). */
  logprobs: tf.Tensor;
  /** Behaviour (rollout / old) policy logprobs, [batch, seq]. */
  oldLogprobs: tf.Tensor;
  /** Per-token advantages [batch, seq], or one per sequence [batch] (broadcast over its tokens). */
  advantages: tf.Tensor;
  mask: tf.Tensor;
  /** ε_low: the ratio is clipped below at 1 − clipLow (default 0.2). */
  clipLow?: number;
  /** ε_high: the ratio is clipped above at 1 + clipHigh (default 0.28, DAPO's clip-higher). */
  clipHigh?: number;
  /** Dual clip (slime's eps_clip_c, > 1): for negative advantages the token loss is at most −c·A. */
  clipC?: number;
  /**
   * Per-token weights [batch, seq] the token loss is multiplied by, without gradient: the
   * truncated importance weights of off-policy samples (`truncatedImportanceWeights`).
   */
  importanceWeights?: tf.Tensor;
  aggregation?: LossAggregation;
}

export interface PpoClipOutput {
  loss: tf.Scalar;
  /** Fraction of unmasked tokens whose clipped term is the active one (always token-mean). */
  clipFraction: tf.Scalar;
  /** slime's ppo_kl: masked mean of old − new logprob (k1 estimate of KL(old‖new)). */
  approxKl: tf.Scalar;
  /** The unreduced token losses, [batch, seq] (masked tokens included; multiply by the mask). */
  tokenLoss: tf.Tensor2D;
}

/**
 * PPO clipped policy loss: ratio = exp(logp − old); token loss = max(−A·ratio,
 * −A·clip(ratio, 1 − clipLow, 1 + clipHigh)) = −min(ratio·A, clip(ratio)·A), times the
 * token's importance weight when given, aggregated over the mask. Gradients flow through
 * `logprobs` only.
 */
export function ppoClipLoss({
  logprobs,
  oldLogprobs,
  advantages,
  mask,
  clipLow = 0.2,
  clipHigh = 0.28,
  clipC,
  importanceWeights,
  aggregation = 'token-mean',
}: PpoClipInput): PpoClipOutput {
  checkShape(logprobs, mask, 'ppoClipLoss logprobs');
  checkShape(oldLogprobs, mask, 'ppoClipLoss oldLogprobs');
  if (importanceWeights !== undefined) checkShape(importanceWeights, mask, 'ppoClipLoss importanceWeights');
  if (clipC !== undefined && !(clipC > 1)) throw new RangeError(`clipC must be > 1, got ${clipC}`);
  return tf.tidy(() => {
    const m = asFloat(mask);
    let adv = advantages;
    if (adv.rank === 1) adv = tf.expandDims(adv, 1);
    else checkShape(adv, mask, 'ppoClipLoss advantages');
    const logRatio = tf.sub(logprobs, stopGradient(oldLogprobs));
    const ratio = tf.exp(logRatio);
    const a = stopGradient(adv);
    const pg1 = tf.neg(tf.mul(a, ratio));
    const pg2 = tf.neg(tf.mul(a, tf.clipByValue(ratio, 1 - clipLow, 1 + clipHigh)));
    let tokenLoss = tf.maximum(pg1, pg2);
    if (clipC !== undefined) {
      const bound = tf.neg(tf.mul(a, clipC));
      tokenLoss = tf.where(tf.less(a, 0), tf.minimum(tokenLoss, bound), tokenLoss);
    }
    if (importanceWeights !== undefined) tokenLoss = tf.mul(tokenLoss, stopGradient(importanceWeights));
    const clipped = tf.cast(tf.greater(pg2, pg1), 'float32');
    return {
      loss: aggregate(tokenLoss, m, aggregation),
      clipFraction: maskedMean(clipped, m),
      approxKl: maskedMean(tf.neg(stopGradient(logRatio)), m),
      tokenLoss: tokenLoss as tf.Tensor2D,
    };
  });
}

export interface TruncatedImportanceInput {
  /** The policy's logprobs before this step's update (the proximal policy), [batch, seq]. */
  proximalLogprobs: tf.Tensor;
  /** The rollout (behaviour) policy's logprobs of the same tokens, [batch, seq]. */
  rolloutLogprobs: tf.Tensor;
  /** Largest weight (> 1); Infinity leaves the weights untruncated. */
  cap: number;
}

/**
 * Truncated importance sampling for stale samples (slime's `--use-tis`, AReaL's decoupled PPO):
 * per-token weights min(exp(proximal − rollout), cap), [batch, seq], without gradient. Used
 * with PPO whose "old" logprobs are the proximal ones: the clip then bounds the step from the
 * current policy, and the weight corrects for the rollout having been sampled by an older one.
 */
export function truncatedImportanceWeights({
  proximalLogprobs,
  rolloutLogprobs,
  cap,
}: TruncatedImportanceInput): tf.Tensor2D {
  if (!(cap > 1)) throw new RangeError(`the TIS cap must be > 1, got ${cap}`);
  if (proximalLogprobs.rank !== 2 || proximalLogprobs.shape.join() !== rolloutLogprobs.shape.join()) {
    throw new RangeError(
      `truncatedImportanceWeights: expected two [batch, seq] tensors of one shape, got ${proximalLogprobs.shape} and ${rolloutLogprobs.shape}`,
    );
  }
  return tf.tidy(
    () => stopGradient(tf.minimum(tf.exp(tf.sub(proximalLogprobs, rolloutLogprobs)), cap)) as tf.Tensor2D,
  );
}

export type KlEstimator = 'k1' | 'k2' | 'k3';

/**
 * Per-token estimates of KL(π‖π_ref) from sampled-token logprobs, with log r = ref − logp:
 * k1 = −log r, k2 = ½(log r)², k3 = exp(log r) − log r − 1 (Schulman's low-variance estimator,
 * slime's `low_var_kl`, clamped to [−clamp, clamp] as slime when `clamp` is given).
 */
export function klPerToken(
  logprobs: tf.Tensor,
  refLogprobs: tf.Tensor,
  estimator: KlEstimator = 'k3',
  clamp?: number,
): tf.Tensor2D {
  return tf.tidy(() => {
    const logR = tf.sub(stopGradient(refLogprobs), logprobs);
    let kl: tf.Tensor;
    if (estimator === 'k1') kl = tf.neg(logR);
    else if (estimator === 'k2') kl = tf.mul(tf.square(logR), 0.5);
    else if (estimator === 'k3') kl = tf.sub(tf.sub(tf.exp(logR), logR), 1);
    else throw new RangeError(`unknown KL estimator ${String(estimator)}`);
    if (clamp !== undefined) kl = tf.clipByValue(kl, -clamp, clamp);
    return kl as tf.Tensor2D;
  });
}

export interface KlInput {
  logprobs: tf.Tensor;
  refLogprobs: tf.Tensor;
  mask: tf.Tensor;
  /** Clamp each token's k3 to [−clamp, clamp] (default 10, as slime's low_var_kl). */
  clamp?: number;
  aggregation?: LossAggregation;
}

/** k3 KL estimate exp(ref − logp) − (ref − logp) − 1, aggregated over the mask. */
export function klK3({
  logprobs,
  refLogprobs,
  mask,
  clamp = 10,
  aggregation = 'token-mean',
}: KlInput): tf.Scalar {
  checkShape(logprobs, mask, 'klK3 logprobs');
  checkShape(refLogprobs, mask, 'klK3 refLogprobs');
  return tf.tidy(() => aggregate(klPerToken(logprobs, refLogprobs, 'k3', clamp), mask, aggregation));
}

/** Entropy of the softmax at every position: −Σ_v p·log p, [batch, seq] from logits [batch, seq, vocab]. */
export function tokenEntropy(logits: tf.Tensor): tf.Tensor2D {
  return tf.tidy(() => {
    const logp = tf.logSoftmax(logits, -1);
    return tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), -1)) as tf.Tensor2D;
  });
}

/** Mean token entropy (nats) over the mask. */
export function entropyFromLogits(
  logits: tf.Tensor,
  mask: tf.Tensor,
  aggregation: LossAggregation = 'token-mean',
): tf.Scalar {
  if (logits.rank !== 3)
    throw new RangeError(`entropyFromLogits: logits must be [batch, seq, vocab], got ${logits.shape}`);
  return tf.tidy(() => {
    const h = tokenEntropy(logits);
    checkShape(h, mask, 'entropyFromLogits logits');
    return aggregate(h, mask, aggregation);
  });
}

export interface SftInput {
  logprobs: tf.Tensor;
  mask: tf.Tensor;
  aggregation?: LossAggregation;
}

/** Negative log-likelihood of the target tokens, aggregated over the mask. */
export function sftLoss({ logprobs, mask, aggregation = 'token-mean' }: SftInput): tf.Scalar {
  checkShape(logprobs, mask, 'sftLoss logprobs');
  return tf.tidy(() => aggregate(tf.neg(logprobs), mask, aggregation));
}

export interface TopKDistillationInput {
  /** Student logits [batch, seq, vocab] (differentiable). */
  studentLogits: tf.Tensor;
  /** Teacher's top-K token ids per position, [batch, seq, K]. */
  teacherTopIds: tf.Tensor | number[][][];
  /** Teacher logprobs of those ids, [batch, seq, K] (normalised over the full vocabulary). */
  teacherTopLogprobs: tf.Tensor;
  mask: tf.Tensor;
  /** Floor for a tail bin's probability before its log (default 1e-8). */
  minTail?: number;
  /**
   * How the student's logprobs at the teacher ids are picked: 'gather' (less memory; its
   * gradient needs UnsortedSegmentSum, missing on wasm) or 'onehot'. Default: 'onehot' on the
   * wasm backend, else 'gather'.
   */
  select?: 'gather' | 'onehot';
  /**
   * 'reverse' KL(student‖teacher) (OpenClaw-RL's top-K OPD; the default), or 'forward'
   * KL(teacher‖student). The reverse KL's gradient on a token is proportional to the student's
   * own probability of it, so it cannot raise a token the student never gives any mass (the
   * teacher's "Sam," to a student that never opens with it); the forward KL pulls every teacher
   * token toward the teacher's probability (distillation's classic direction, GKD's β = 0).
   */
  direction?: 'reverse' | 'forward';
  aggregation?: LossAggregation;
}

/**
 * Per-token KL over K + 1 bins, reverse (student‖teacher) unless `direction` says forward: the
 * teacher's top-K ids plus a tail bin holding the rest of the mass (teacher tail = 1 − Σ
 * exp(teacher top-K logprobs); student tail = 1 − Σ student probs at those ids; both floored at
 * `minTail`). Returns [batch, seq].
 */
export function topKKlPerToken({
  studentLogits,
  teacherTopIds,
  teacherTopLogprobs,
  minTail = 1e-8,
  select,
  direction = 'reverse',
}: Omit<TopKDistillationInput, 'mask' | 'aggregation'>): tf.Tensor2D {
  if (studentLogits.rank !== 3) {
    throw new RangeError(
      `topK distillation: studentLogits must be [batch, seq, vocab], got ${studentLogits.shape}`,
    );
  }
  const [batch, seq, vocab] = studentLogits.shape;
  const mode = select ?? (tf.getBackend() === 'wasm' ? 'onehot' : 'gather');
  return tf.tidy(() => {
    const ids =
      teacherTopIds instanceof tf.Tensor
        ? tf.cast(teacherTopIds, 'int32')
        : tf.tensor3d(teacherTopIds, undefined, 'int32');
    if (ids.rank !== 3 || ids.shape[0] !== batch || ids.shape[1] !== seq) {
      throw new RangeError(
        `topK distillation: teacherTopIds must be [${batch}, ${seq}, K], got ${ids.shape}`,
      );
    }
    const k = ids.shape[2] as number;
    if (teacherTopLogprobs.rank !== 3 || teacherTopLogprobs.shape.join() !== ids.shape.join()) {
      throw new RangeError(
        `topK distillation: teacherTopLogprobs must be ${ids.shape}, got ${teacherTopLogprobs.shape}`,
      );
    }
    const logp = tf.logSoftmax(studentLogits, -1);
    let studentTop: tf.Tensor;
    if (mode === 'onehot') {
      const select3 = tf
        .oneHot(tf.reshape(ids, [-1]), vocab)
        .toFloat()
        .reshape([batch, seq, k, vocab]);
      studentTop = tf.sum(tf.mul(tf.expandDims(logp, 2), select3), -1);
    } else {
      const rows = tf.reshape(tf.range(0, batch * seq, 1, 'int32'), [batch, seq, 1]);
      const flatIdx = tf.add(tf.mul(rows, tf.scalar(vocab, 'int32')), ids);
      studentTop = tf.reshape(tf.gather(tf.reshape(logp, [-1]), tf.reshape(flatIdx, [-1])), [batch, seq, k]);
    }
    const teacherTop = stopGradient(teacherTopLogprobs);
    const tailLog = (top: tf.Tensor) => tf.log(tf.maximum(tf.sub(1, tf.sum(tf.exp(top), -1, true)), minTail));
    const s = tf.concat([studentTop, tailLog(studentTop)], -1);
    const t = tf.concat([teacherTop, tailLog(teacherTop)], -1);
    const [p, q] = direction === 'forward' ? [t, s] : [s, t];
    return tf.sum(tf.mul(tf.exp(p), tf.sub(p, q)), -1) as tf.Tensor2D;
  });
}

/** Top-K KL distillation loss (OpenClaw-RL's top-K OPD), aggregated over the mask. */
export function topKDistillationLoss(input: TopKDistillationInput): tf.Scalar {
  const { mask, aggregation = 'token-mean', ...rest } = input;
  return tf.tidy(() => {
    const kl = topKKlPerToken(rest);
    checkShape(kl, mask, 'topKDistillationLoss');
    return aggregate(kl, mask, aggregation);
  });
}

export interface RlLossInput extends PpoClipInput {
  /** Reference-policy logprobs; needed when klCoef > 0 (the KL is reported whenever given). */
  refLogprobs?: tf.Tensor;
  /** Weight of the k3 KL penalty (default 0, as OpenClaw-RL's scripts). */
  klCoef?: number;
  /** Student logits [batch, seq, vocab]; needed when entropyCoef > 0 (reported whenever given). */
  logits?: tf.Tensor;
  /** Weight of the entropy bonus (default 0). */
  entropyCoef?: number;
}

export interface RlLossOutput {
  /** pgLoss + klCoef·kl − entropyCoef·entropy. */
  loss: tf.Scalar;
  pgLoss: tf.Scalar;
  clipFraction: tf.Scalar;
  approxKl: tf.Scalar;
  /** k3 KL to the reference policy, when `refLogprobs` was given. */
  kl?: tf.Scalar;
  /** Mean token entropy, when `logits` was given. */
  entropy?: tf.Scalar;
}

/** The PPO-clip policy loss plus optional k3 KL penalty and entropy bonus, with every component. */
export function rlLoss(input: RlLossInput): RlLossOutput {
  const { refLogprobs, klCoef = 0, logits, entropyCoef = 0, ...ppo } = input;
  if (klCoef !== 0 && refLogprobs === undefined) throw new RangeError('rlLoss: klCoef needs refLogprobs');
  if (entropyCoef !== 0 && logits === undefined) throw new RangeError('rlLoss: entropyCoef needs logits');
  const aggregation = ppo.aggregation ?? 'token-mean';
  return tf.tidy(() => {
    const pg = ppoClipLoss(ppo);
    pg.tokenLoss.dispose();
    let loss: tf.Scalar = pg.loss;
    const out: Omit<RlLossOutput, 'loss'> = {
      pgLoss: pg.loss,
      clipFraction: pg.clipFraction,
      approxKl: pg.approxKl,
    };
    if (refLogprobs !== undefined) {
      out.kl = klK3({ logprobs: ppo.logprobs, refLogprobs, mask: ppo.mask, aggregation });
      if (klCoef !== 0) loss = tf.add(loss, tf.mul(out.kl, klCoef));
    }
    if (logits !== undefined) {
      out.entropy = entropyFromLogits(logits, ppo.mask, aggregation);
      if (entropyCoef !== 0) loss = tf.sub(loss, tf.mul(out.entropy, entropyCoef));
    }
    return { loss, ...out };
  });
}
