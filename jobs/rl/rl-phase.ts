/**
 * The RL phase: the rollout source, the judge loop and the train loop over the job's two
 * streams, until train.steps (or a stop, or a failure):
 *
 *   source ──append──▶ rollouts stream ──judge loop──▶ judged stream ──train loop──▶ trainer
 *      ▲                                                                   │
 *      └──────────── staleness gate ◀── published weights ◀────────────────┘
 *
 * After each step it records the step (history, metrics, the step line), evaluates and
 * checkpoints when due. A failure of any loop ends all three and is rethrown.
 */
import type { TrajectoryBuffer } from '../buffer/types.js';
import { type JobContext, noteSkipped, rates, stepsLeft } from './job-context.js';
import type { StepRecord } from './job-state.js';
import { runJudgeLoop } from './judge-loop.js';
import type { RlWiring } from './rl-wiring.js';
import { StalenessGate } from './staleness-gate.js';
import { runTrainLoop, type TrainLoopTrainer, type TrainStepRecord } from './train-loop.js';
import type { TrajectoryLedger } from './trajectory-ledger.js';

export interface RlPhasePorts {
  buffers: { rollouts: TrajectoryBuffer; judged: TrajectoryBuffer };
  trainer: TrainLoopTrainer;
  ledger: TrajectoryLedger;
  /** Publishes the trainer's weights when due (every `updateWeightsEvery` versions) or forced; true if it did. */
  publish(force: boolean): Promise<boolean>;
  /** The source and the judge (rl-wiring.ts), made once the gate is up. */
  wire(): Promise<RlWiring>;
  evaluate(): Promise<void>;
  /** A checkpoint if the job step is due one. */
  checkpointIfDue(): Promise<void>;
  /** How long the loops wait on an empty stream per read (default theirs). */
  blockMs?: number;
}

/** Trains until train.steps, a stop or a failure; nothing for method sft or when no step is left. */
export async function runRlPhase(ctx: JobContext, p: RlPhasePorts): Promise<void> {
  const { spec, run } = ctx;
  if (spec.method === 'sft' || !stepsLeft(ctx, run.step) || run.stopRequested) return;
  run.phase = 'training';
  const personal = spec.track === 'personal';
  const B = spec.rollout.batchSize;
  const G = spec.rollout.samplesPerPrompt;
  const maxStaleness = spec.train.async ? spec.train.maxStaleness : 0;
  // Units the gate counts: prompt groups (env tracks) or simulated sessions (personal).
  const unitsPerStep = personal ? Math.max(1, Math.ceil(B / (spec.user?.turnsPerSession ?? 1))) : B;
  const gate = new StalenessGate(unitsPerStep, maxStaleness, {
    version: run.step,
    group: run.step * unitsPerStep,
  });
  run.gate = gate;
  if (run.stopRequested) gate.close();
  run.rlStartedAt = ctx.now();
  const failed = run.failed;
  const fail = (err: Error) => {
    if (!failed.signal.aborted) {
      ctx.log(`failed: ${err.message}`);
      failed.abort(err);
    }
    gate.close();
  };
  const blockMs = p.blockMs === undefined ? {} : { blockMs: p.blockMs };

  const { source, judge } = await p.wire();
  run.rolloutSlots = source.slots;
  let rolloutsDone = false;
  const rolloutLoop = source
    .run({
      gate,
      append: async (records) => {
        await p.buffers.rollouts.append(records);
      },
      signal: failed.signal,
      log: ctx.log,
    })
    .catch(fail)
    .finally(() => {
      rolloutsDone = true;
    });

  const judgeLoop = runJudgeLoop({
    rollouts: p.buffers.rollouts,
    judged: p.buffers.judged,
    rolloutsDone: () => rolloutsDone,
    signal: failed.signal,
    log: ctx.log,
    onWaiting: (n) => ctx.metrics.bufferLag.set({ job: ctx.job, stage: 'judge' }, n),
    judge: judge(),
    ...blockMs,
  }).catch(fail);

  try {
    await runTrainLoop({
      judged: p.buffers.judged,
      trainer: p.trainer,
      publish: (force) => p.publish(force),
      ledger: p.ledger,
      gate,
      startStep: run.step,
      totalSteps: spec.train.steps,
      // Live sessions: a batch with nothing to train is not a step (OpenClaw-RL waits for
      // trainable samples). Simulated users (spec.user) measure interactions, as env tracks
      // measure episodes: there it is a step, so train.steps bounds the interactions, and a
      // policy that already pleases every user still ends its job.
      skipEmptySteps: personal && !spec.user,
      onSkippedStep: (r) =>
        noteSkipped(
          ctx,
          `step ${r.step}${personal && !spec.user ? ` (a batch of ${r.samples} turn(s), not counted as a step)` : ''}`,
          r.loss,
        ),
      onEmptyBatch: (b) =>
        ctx.log(
          `a batch of ${b.turns} turn(s) had nothing to train on (${b.noSignal} without signal, ${b.stale} stale, ${b.truncated} empty${b.nonFinite > 0 ? `, ${b.nonFinite} with a reward that is not a finite number` : ''}): not a step`,
        ),
      batchSize: B,
      maxStaleness,
      advantages: {
        method: spec.method as 'rl' | 'opd' | 'combine',
        samplesPerPrompt: G,
        combine: spec.train.combine,
        distillOn: spec.train.distillOn,
      },
      stopRequested: () => run.stopRequested,
      signal: failed.signal,
      onWait: (ms) => {
        run.trainerWaitMs += ms;
      },
      onLag: (n) => ctx.metrics.bufferLag.set({ job: ctx.job, stage: 'train' }, n),
      afterStep: (r) => afterRlStep(ctx, r, p),
      ...blockMs,
    });
  } catch (err) {
    fail(err as Error);
  }
  // Training is over (or failed): the source and the judge stop where they are; what they
  // hold stays in the streams, unacked.
  gate.close();
  if (!failed.signal.aborted) failed.abort(new Error('training finished'));
  await rolloutLoop;
  await judgeLoop;
  const reason = failed.signal.reason as Error | undefined;
  if (reason && reason.message !== 'training finished') throw reason;
}

/** One RL step done: recorded, measured, logged; then an evaluation and a checkpoint when due. */
async function afterRlStep(
  ctx: JobContext,
  r: TrainStepRecord,
  p: Pick<RlPhasePorts, 'evaluate' | 'checkpointIfDue'>,
): Promise<void> {
  const { spec, run, metrics } = ctx;
  const job = { job: ctx.job };
  run.step = r.step;
  run.samplesTrained += r.episodes;
  const record: StepRecord = {
    step: r.step,
    rewardMean: r.rewardMean,
    successRate: r.successRate,
    staleness: r.staleness,
    episodes: r.episodes,
    samples: r.samples,
    ...(r.skipped ? { loss: null, skipped: true as const } : { loss: r.loss }),
    seconds: r.seconds,
  };
  run.history.push(record);
  recordMetrics(ctx, record);
  if (r.mismatch !== null && Number.isFinite(r.mismatch)) {
    run.drift.mismatch.push(r.mismatch);
    metrics.mismatch.set(job, r.mismatch);
  }
  if (r.policyLag !== null && Number.isFinite(r.policyLag)) {
    run.drift.policyLag.push(r.policyLag);
    run.drift.versions.push(r.policyLagVersions ?? 0);
    metrics.policyLag.set(job, r.policyLag);
  }
  if (r.tisWeight !== undefined) metrics.tisWeight.set(job, r.tisWeight);
  if (r.distillLoss !== undefined) metrics.distillKl.set(job, r.distillLoss);
  const rate = rates(ctx);
  const of = spec.train.steps === undefined ? '' : `/${spec.train.steps}`;
  if (r.skipped) {
    ctx.log(
      `step ${r.step}${of}: skipped (loss or gradients not finite), ${r.samples} samples dropped, ${rate.samplesPerSecond.toFixed(2)} samples/s${nonFinite(r.nonFinite)}`,
    );
    await p.checkpointIfDue();
    return;
  }
  const drift = `${r.mismatch === null ? '' : `, mismatch ${r.mismatch.toExponential(2)}`}${r.policyLag === null ? '' : `, policy lag ${r.policyLag.toExponential(2)} (${(r.policyLagVersions ?? 0).toFixed(2)} versions)`}`;
  const tis = r.tisWeight === undefined ? '' : `, tis weight ${r.tisWeight.toFixed(3)}`;
  const distill = r.distillLoss === undefined ? '' : `, distill KL ${r.distillLoss.toFixed(4)}`;
  ctx.log(
    `step ${r.step}${of}: reward ${r.rewardMean.toFixed(3)}, success ${r.successRate.toFixed(3)}, ${r.samples} samples of ${r.episodes} episodes, staleness ${r.staleness.toFixed(2)}, loss ${r.loss.toFixed(4)}${drift}${tis}${distill}, ${rate.samplesPerSecond.toFixed(2)} samples/s${r.staleGroups > 0 ? `, ${r.staleGroups} stale group(s) dropped` : ''}${r.greedy > 0 ? `, ${r.greedy} greedy (temperature 0) turn(s) not trained` : ''}${nonFinite(r.nonFinite)}`,
  );
  const every = spec.eval.everySteps;
  if (every > 0 && r.step % every === 0 && stepsLeft(ctx, r.step)) await p.evaluate();
  await p.checkpointIfDue();
}

function recordMetrics(ctx: JobContext, r: StepRecord): void {
  const { metrics } = ctx;
  const job = { job: ctx.job };
  const rate = rates(ctx);
  metrics.steps.inc(job);
  metrics.samples.inc(job, r.episodes);
  metrics.reward.set(job, r.rewardMean);
  metrics.success.set({ ...job, split: 'train' }, r.successRate);
  metrics.staleness.set(job, r.staleness);
  metrics.samplesPerSecond.set(job, rate.samplesPerSecond);
  metrics.trainerIdle.set(job, rate.trainerIdleRatio);
  metrics.rolloutIdle.set(job, rate.rolloutIdleRatio);
}

/** The step line's note on turns whose judge gave a NaN or infinite reward (dropped, counted as non_finite). */
function nonFinite(turns: number): string {
  return turns > 0 ? `, ${turns} turn(s) dropped: their judge's reward was not a finite number` : '';
}
