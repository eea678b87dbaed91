/**
 * The job's trainer shards as one trainer. A step runs on every shard (their gradients meet in
 * the collective ring); when a shard dies mid-step the ring breaks on every rank. The group
 * then waits for the runtime to restart the shard, restores every rank to the same weights —
 * the last good step, taken from a surviving rank, or the last checkpoint when none survived
 * at a known step — rebuilds the ring and redoes the step.
 */
import type { StepMetrics, TrainSample } from '../../actors/trainer/policy-trainer.js';
import type { TrainerShard } from '../../actors/trainer/trainer-shard.js';
import type { PublishedWeights } from '../../actors/trainer/weight-publisher.js';
import { sleep } from '../../common/backoff.js';
import { ClawrayError } from '../../common/errors.js';
import type { ActorHandle } from '../../runtime/index.js';
import { shardSamples } from './batches.js';
import { isPeerLoss } from './failures.js';

/** Every rank restarted and no checkpoint holds the step the job is at: the driver must resume. */
export class TrainerStateLostError extends ClawrayError {
  override readonly retryable = true;
}

/**
 * One step took down its shards again after every recovery: the batch itself kills them (a
 * sample no pass can hold, a deterministic crash), and redoing it forever would not help.
 */
export class TrainerStepFailedError extends ClawrayError {}

/** What the group needs of a TrainerShard actor (its handle; tests pass in-process fakes). */
export type TrainerShardRef = Pick<ActorHandle<TrainerShard>, 'call'>;

export interface TrainerGroupOptions {
  /** (Re)builds the collective ring over the shards; called after a recovery. */
  rebuildRing(): Promise<void>;
  /** The step of the last checkpoint the job wrote (null: none yet). */
  lastCheckpointStep(): number | null;
  log?: (line: string) => void;
  /** Probe interval while waiting for restarted shards (default 500 ms). */
  probeIntervalMs?: number;
  /** How long a recovery waits for every shard to be back (default 10 min). */
  recoverTimeoutMs?: number;
  /** Recoveries one step may need before the group gives up on it (default 3). */
  maxRecoveriesPerStep?: number;
}

/** One optimizer step of the whole group. */
export interface GroupStepResult {
  /**
   * The step's loss or gradients were not finite, so no rank took it: the weights and the
   * version are what they were (StepMetrics.skipped).
   */
  skipped: boolean;
  /** The summed loss of the shards (each normalised by the global token count). */
  loss: number;
  /**
   * The train–inference mismatch over the batch (StepMetrics.mismatch, shards weighted by the
   * tokens it covers; a rank that only joined the all-reduce with a filler sample is left out);
   * null when no token was scored with the weights that drew it.
   */
  mismatch: number | null;
  /** The policy lag over the batch's stale tokens (StepMetrics.policyLag); null: none stale. */
  policyLag: number | null;
  /** Their mean version gap; null with `policyLag`. */
  policyLagVersions: number | null;
  /** With train.tis: the mean truncated importance weight over the batch's response tokens. */
  tisWeight?: number;
  /** With top-K distillation: the mean top-K reverse KL over the batch's distilled tokens. */
  distillLoss?: number;
}

/** The shards' metrics as one step: token-weighted means over the ranks that trained samples. */
function combine(results: StepMetrics[], trained: boolean[]): GroupStepResult {
  const loss = results.reduce((s, r) => s + r.loss, 0);
  const real = results.filter((_, i) => trained[i]);
  const tokens = real.reduce((n, r) => n + r.tokens, 0);
  // NaN when no rank that trained samples reported (a step finished by some ranks only).
  const mean = (of: (r: StepMetrics) => number) =>
    tokens > 0 ? real.reduce((s, r) => s + of(r) * r.tokens, 0) / tokens : Number.NaN;
  return {
    skipped: results.some((r) => r.skipped),
    loss,
    mismatch: weighted(
      real,
      (r) => r.mismatch,
      (r) => r.mismatchTokens,
    ),
    policyLag: weighted(
      real,
      (r) => r.policyLag,
      (r) => r.policyLagTokens,
    ),
    policyLagVersions: weighted(
      real,
      (r) => r.policyLagVersions,
      (r) => r.policyLagTokens,
    ),
    ...(real[0]?.tisWeight !== undefined ? { tisWeight: mean((r) => r.tisWeight ?? 0) } : {}),
    ...distillOf(real),
  };
}

/** The mean of a per-shard figure weighted by the tokens it covers; null when it covers none. */
function weighted(
  results: StepMetrics[],
  of: (r: StepMetrics) => number | null,
  tokensOf: (r: StepMetrics) => number,
): number | null {
  let sum = 0;
  let tokens = 0;
  for (const r of results) {
    const value = of(r);
    if (value === null || tokensOf(r) === 0) continue;
    sum += value * tokensOf(r);
    tokens += tokensOf(r);
  }
  return tokens > 0 ? sum / tokens : null;
}

/** The distilled-token-weighted mean of the shards' top-K KL, when any shard distilled. */
function distillOf(results: StepMetrics[]): { distillLoss?: number } {
  const tokens = results.reduce((n, r) => n + (r.distillTokens ?? 0), 0);
  if (!results.some((r) => r.distillLoss !== undefined)) return {};
  return {
    distillLoss:
      tokens > 0
        ? results.reduce((s, r) => s + (r.distillLoss ?? 0) * (r.distillTokens ?? 0), 0) / tokens
        : 0,
  };
}

export class TrainerGroup {
  /** Optimizer steps taken: the policy version. */
  version = 0;
  recoveries = 0;

  constructor(
    readonly shards: TrainerShardRef[],
    private readonly o: TrainerGroupOptions,
  ) {}

  /** One optimizer step over all shards: the summed loss and the drift. Survives shard deaths. */
  async step(
    samples: TrainSample[],
    options: { method: 'rl' | 'sft'; lr?: number },
    signal?: AbortSignal,
  ): Promise<GroupStepResult> {
    const globalTokens = samples.reduce((n, s) => n + s.tokenIds.length - s.responseStart, 0);
    const parts = shardSamples(samples, this.shards.length);
    // Every rank joins the all-reduce; a rank without samples adds a zero-gradient one.
    const filler = samples[0];
    const trained = parts.map((p) => p.length > 0);
    for (let attempt = 0; ; attempt++) {
      const before = this.version;
      const results = await Promise.allSettled(
        this.shards.map((t, i) =>
          t.call(
            'trainStep',
            parts[i].length > 0
              ? parts[i]
              : [
                  {
                    ...filler,
                    advantages: 0,
                    oldLogprobs: filler.oldLogprobs ?? [],
                    teacherTopK: undefined,
                    weightVersion: null,
                  },
                ],
            { globalTokens, ...options },
          ),
        ),
      );
      const done = results.filter((r): r is PromiseFulfilledResult<StepMetrics> => r.status === 'fulfilled');
      if (done.length === results.length) {
        this.version = done[0].value.step;
        return combine(
          done.map((r) => r.value),
          trained,
        );
      }
      const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')!.reason;
      if (!isPeerLoss(failure)) throw failure;
      const limit = this.o.maxRecoveriesPerStep ?? 3;
      if (attempt >= limit)
        throw new TrainerStepFailedError(
          `trainer step ${before + 1} lost its shards ${attempt + 1} times in a row (last: ${(failure as Error).message}); giving up on it`,
          { cause: failure, fields: { step: before + 1, attempts: attempt + 1 } },
        );
      this.o.log?.(
        `trainer step ${before + 1} failed (${(failure as Error).message}); recovering the shards`,
      );
      const at = await this.recover(signal);
      // Every rank that finished had already applied the step: it is done, not redone.
      if (at === before + 1) {
        const finished = results.map((r) => r.status === 'fulfilled');
        return combine(
          done.map((r) => r.value),
          trained.filter((_, i) => finished[i]),
        );
      }
    }
  }

  /**
   * Waits for every shard to answer, then puts all of them at one step: a surviving shard's
   * (saved and loaded by all), else the last checkpoint. Returns that step.
   */
  async recover(signal?: AbortSignal): Promise<number> {
    const deadline = Date.now() + (this.o.recoverTimeoutMs ?? 600_000);
    let steps: number[];
    for (;;) {
      const probes = await Promise.allSettled(this.shards.map((s) => s.call('ready')));
      if (probes.every((p) => p.status === 'fulfilled')) {
        steps = probes.map((p) => (p as PromiseFulfilledResult<{ step: number }>).value.step);
        break;
      }
      if (Date.now() > deadline || signal?.aborted)
        throw new TrainerStateLostError('trainer shards did not come back in time');
      await sleep(this.o.probeIntervalMs ?? 500, signal);
    }
    // A rank one step past the job's version finished the failed step; one at it holds the
    // last good weights. Either is a donor; a restarted rank (back at its initial weights)
    // is not. At version 0 every rank starts from the same initial weights anyway.
    const donor = [this.version + 1, this.version].map((v) => steps.indexOf(v)).find((i) => i >= 0);
    let target: number;
    if (donor !== undefined) {
      target = steps[donor];
      if (target > 0 && steps.some((s) => s !== target)) {
        await this.shards[donor].call('saveCheckpoint');
        await Promise.all(this.shards.map((s, i) => (i === donor ? target : s.call('resume', target))));
      }
    } else {
      const ckpt = this.o.lastCheckpointStep();
      if (ckpt === null || ckpt !== this.version)
        throw new TrainerStateLostError(
          `no trainer shard survived at step ${this.version} and the last checkpoint is at ${ckpt ?? 'none'}`,
          { fields: { version: this.version, checkpoint: ckpt } },
        );
      target = ckpt;
      await Promise.all(this.shards.map((s) => s.call('resume', ckpt)));
    }
    await this.o.rebuildRing();
    this.version = target;
    this.recoveries++;
    this.o.log?.(`trainer shards recovered at step ${target}`);
    return target;
  }

  /** What to publish to rollout engines: every weight, or only the LoRA adapters and their scale. */
  async readWeights(): Promise<PublishedWeights> {
    const out = await this.shards[0].call('readPublishable');
    if ('lora' in out)
      return { lora: { scale: out.lora.scale, adapters: new Map(Object.entries(out.lora.adapters)) } };
    return new Map(Object.entries(out.weights));
  }

  /** Starts every shard's AdamW moments afresh (TrainerShard.resetOptimizer). */
  async resetOptimizer(): Promise<void> {
    await Promise.all(this.shards.map((s) => s.call('resetOptimizer')));
  }

  /** Saves a checkpoint of rank 0 (every rank holds the same weights); returns its path. */

  saveCheckpoint(dataCursor: number): Promise<string> {
    return this.shards[0].call('saveCheckpoint', { dataCursor });
  }

  /** Loads `step` (default the newest) on every shard. */
  async resume(step?: number): Promise<number> {
    const steps = await Promise.all(this.shards.map((s) => s.call('resume', step)));
    this.version = steps[0];
    return this.version;
  }
}
