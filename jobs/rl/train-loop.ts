/**
 * The train loop: judged stream → complete groups → one optimizer step per `batchSize` groups
 * → weights to the rollout engines every `updateWeightsEvery` steps. Groups generated more than
 * `maxStaleness` versions behind the policy they would train are dropped (counted, never
 * silently). The staleness gate is advanced with the *published* version, which is what the
 * engines generate with. Nothing is acked here: the ledger acks a step's entries once a
 * checkpoint holds it.
 *
 * With `skipEmptySteps` (live personal sessions, as OpenClaw-RL) a batch with no trainable sample
 * is not a step: its samples are accounted as dropped, the gate admits a step's worth of
 * rollouts again, and the loop waits for the next batch. Env tracks count such a step (a
 * task set nobody can solve would otherwise never end).
 *
 * A step the trainer skipped because its loss or gradients were not finite (a judge that
 * returned NaN, an overflow) changed no weight: nothing is published, its samples are dropped
 * as `non_finite`, and `onSkippedStep` reports it. Like an empty batch it is a step on env
 * tracks (DeepSpeed counts skipped steps among its global steps) and not one with
 * `skipEmptySteps`.
 */
import type { TrainSample } from '../../actors/trainer/policy-trainer.js';
import type { TrajectoryBuffer } from '../buffer/types.js';
import { type AdvantageOptions, type BatchStats, buildSamples, GroupAssembler } from './batches.js';
import type { StalenessGate } from './staleness-gate.js';
import type { GroupStepResult } from './trainer-group.js';
import { type StepUse, TRAIN_GROUP, type TrajectoryLedger } from './trajectory-ledger.js';

export interface TrainLoopTrainer {
  /** The policy version (optimizer steps taken). */
  readonly version: number;
  step(samples: TrainSample[], options: { method: 'rl' }, signal?: AbortSignal): Promise<GroupStepResult>;
}

export interface TrainStepRecord extends BatchStats {
  step: number;
  /** The trainer skipped it (non-finite loss or gradients): no weight changed. */
  skipped: boolean;
  loss: number;
  seconds: number;
  /** Groups dropped because they were too stale. */
  staleGroups: number;
  /**
   * The train–inference mismatch: mean |trainer − rollout logprob| over the step's tokens scored
   * with the weights that drew them, both at the sampling temperature (GroupStepResult); null
   * when the step trained nothing or scored no such token.
   */
  mismatch: number | null;
  /** The policy lag over the step's stale samples and their mean version gap; null: none. */
  policyLag: number | null;
  policyLagVersions: number | null;
  /** With train.tis: the step's mean truncated importance weight (absent when nothing trained). */
  tisWeight?: number;
  /** With top-K distillation: the step's mean top-K reverse KL over its distilled tokens. */
  distillLoss?: number;
  /** Greedy (temperature 0) turns left out of the batch (counted as no_signal). */
  greedy: number;
  /** Turns left out because their judge's reward was not finite (counted as non_finite). */
  nonFinite: number;
}

export interface TrainLoopOptions {
  judged: TrajectoryBuffer;
  trainer: TrainLoopTrainer;
  /** Publishes the trainer's weights when due (every `updateWeightsEvery` versions) or forced; true if it did. */
  publish(force: boolean): Promise<boolean>;
  ledger: TrajectoryLedger;
  gate: StalenessGate;
  /** The step the loop starts from (a resumed job's). */
  startStep: number;
  /** Steps to reach; undefined = until stopped. */
  totalSteps?: number;
  /** A batch without a trainable sample is not a step. Default false. */
  skipEmptySteps?: boolean;
  /** Called for each batch that was not a step, with what it held. */
  onEmptyBatch?(batch: {
    turns: number;
    stale: number;
    noSignal: number;
    truncated: number;
    nonFinite: number;
  }): void;
  /** Called for each step the trainer skipped (non-finite loss or gradients), before `afterStep`. */
  onSkippedStep?(step: { step: number; loss: number; samples: number }): void;
  batchSize: number;
  maxStaleness: number;
  advantages: AdvantageOptions;
  /** True once a graceful stop was asked for: the step in progress finishes, then the loop ends. */
  stopRequested(): boolean;
  /** Aborted when the job fails: the loop ends at once. */
  signal: AbortSignal;
  /** After each step: evaluation and checkpoints (the driver's). */
  afterStep(record: TrainStepRecord): Promise<void>;
  /** Milliseconds spent waiting for judged samples. */
  onWait?(ms: number): void;
  onLag?(groupsReady: number): void;
  now?: () => number;
  consumer?: string;
  blockMs?: number;
}

export async function runTrainLoop(o: TrainLoopOptions): Promise<number> {
  const now = o.now ?? (() => performance.now());
  const consumer = o.consumer ?? 'driver';
  const assembler = new GroupAssembler();
  const running = () => !o.stopRequested() && !o.signal.aborted;
  const more = (step: number) => o.totalSteps === undefined || step < o.totalSteps;

  // Entries handed to this consumer before a restart: those a checkpoint already holds are
  // acked and skipped; the rest are trained (again, into the resumed weights).
  const replay = await o.judged.readPending({ group: TRAIN_GROUP, consumer, count: 100_000 });
  const done: string[] = [];
  for (const e of replay) {
    if (await o.judged.wasTrained(e.record.trajectoryId)) done.push(e.entryId);
    else assembler.add(e.record, e.entryId);
  }
  if (done.length > 0) await o.judged.ack(TRAIN_GROUP, done);

  let step = o.startStep;
  let unpublished = false;
  while (more(step) && running()) {
    const waitStarted = now();
    while (assembler.size < o.batchSize && running()) {
      const entries = await o.judged.read({
        group: TRAIN_GROUP,
        consumer,
        count: 256,
        blockMs: o.blockMs ?? 100,
      });
      for (const e of entries) assembler.add(e.record, e.entryId);
      o.onLag?.(assembler.size);
    }
    o.onWait?.(now() - waitStarted);
    if (!running()) break;
    const started = now();
    const version = o.trainer.version;
    const groups = assembler.take(o.batchSize);
    const isStale = (g: (typeof groups)[number]) =>
      version - Math.min(...g.episodes.flat().map((r) => r.weightVersion)) > o.maxStaleness;
    const fresh = groups.filter((g) => !isStale(g));
    const stale = groups.filter(isStale);
    const batch = buildSamples(
      fresh.map((g) => g.episodes),
      version,
      o.advantages,
    );
    const { samples, stats } = batch;
    const dropped = {
      stale: stale.flatMap((g) => g.episodes.flat().map((r) => r.trajectoryId)),
      no_signal: [...batch.use.noSignal, ...batch.use.greedy],
      truncated: batch.use.truncated,
      non_finite: batch.use.nonFinite,
    };
    const use: StepUse = { entryIds: groups.flatMap((g) => g.entryIds), trained: batch.use.trained, dropped };
    if (samples.length === 0 && o.skipEmptySteps) {
      o.ledger.recordStep(use);
      o.gate.refundStep();
      o.onEmptyBatch?.({
        turns: groups.reduce((n, g) => n + g.episodes.flat().length, 0),
        stale: dropped.stale.length,
        noSignal: dropped.no_signal.length,
        truncated: dropped.truncated.length,
        nonFinite: dropped.non_finite.length,
      });
      continue;
    }
    let result: GroupStepResult | undefined;
    // Without a learning signal (every group's rewards equal) the weights stay as they are.
    if (samples.length > 0) {
      result = await o.trainer.step(samples, { method: 'rl' }, o.signal);
      if (result.skipped) {
        dropped.non_finite.push(...use.trained);
        use.trained = [];
        o.onSkippedStep?.({ step: step + 1, loss: result.loss, samples: samples.length });
        if (o.skipEmptySteps) {
          o.ledger.recordStep(use);
          o.gate.refundStep();
          continue;
        }
      } else unpublished = true;
    }
    if (unpublished && (await o.publish(!more(step + 1)))) unpublished = false;
    step++;
    // The gate counts in steps: it opens for the step whose weights the engines now serve.
    if (!unpublished) o.gate.advance(step);
    o.ledger.recordStep(use);
    await o.afterStep({
      step,
      skipped: result?.skipped ?? false,
      ...stats,
      loss: result?.loss ?? 0,
      seconds: (now() - started) / 1000,
      staleGroups: stale.length,
      mismatch: result?.mismatch ?? null,
      policyLag: result?.policyLag ?? null,
      policyLagVersions: result?.policyLagVersions ?? null,
      ...(result?.tisWeight !== undefined ? { tisWeight: result.tisWeight } : {}),
      ...(result?.distillLoss !== undefined ? { distillLoss: result.distillLoss } : {}),
      greedy: batch.use.greedy.length,
      nonFinite: batch.use.nonFinite.length,
    });
  }
  return step;
}
