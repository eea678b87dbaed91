/**
 * The warm start (`train.warmup`): SFT on the oracle traces before RL, at the warm start's
 * learning rate, ending with a fresh optimizer, the weights published, a checkpoint and an
 * evaluation (RL's starting point). For `method: sft` the same loop is the whole job: its steps
 * are the job's steps, recorded, evaluated and checkpointed as RL's are.
 */

import { lrAt } from '../../actors/trainer/lr-schedule.js';
import type { TrainSample } from '../../actors/trainer/policy-trainer.js';
import type { RLJobSpec } from '../manifest/schema.js';
import { type JobContext, noteSkipped } from './job-context.js';
import { runSft } from './sft.js';

export interface WarmStartTrainer {
  /** The policy version (optimizer steps taken). */
  readonly version: number;
  step(
    batch: TrainSample[],
    options: { method: 'sft'; lr?: number },
    signal?: AbortSignal,
  ): Promise<{ skipped: boolean; loss: number }>;
  resetOptimizer(): Promise<void>;
}

export interface WarmStartPorts {
  trainer: WarmStartTrainer;
  /** The oracle traces to imitate (`oracleSamples`); read only when there are steps to take. */
  traces(o: { seed: number; what: string }): Promise<TrainSample[]>;
  /** Training tasks with an oracle trace (for the log). */
  oracleTasks: number;
  /** Publishes the trainer's weights (forced: the engines need them now). */
  publish(force: boolean): Promise<boolean>;
  checkpoint(): Promise<void>;
  /** A checkpoint if the job step is due one. */
  checkpointIfDue(): Promise<void>;
  evaluate(afterWarmup?: boolean): Promise<void>;
}

/** Takes the warm start's SFT steps left (all of a method-sft job's); nothing without any. */
export async function runWarmStart(ctx: JobContext, p: WarmStartPorts): Promise<void> {
  const { spec, run } = ctx;
  const sft = spec.method === 'sft';
  // Method sft is refused on the personal track, the only one where steps may be open-ended.
  const sftSteps = (sft ? spec.train.steps : spec.train.warmup?.steps) ?? 0;
  const sftDone = sft ? run.step : run.warmupDone;
  if (!(sftSteps > sftDone && !run.stopRequested)) return;
  const traces = await p.traces({
    seed: spec.train.seed + 1,
    what: sft ? 'spec.method sft' : 'spec.train.warmup',
  });
  ctx.log(`oracle traces: ${traces.length} samples from ${p.oracleTasks} tasks`);
  run.phase = sft ? 'training' : 'warmup';
  run.rlStartedAt = ctx.now();
  const what = sft ? 'step' : 'warmup step';
  await runSft({
    traces,
    batchSize:
      (sft ? undefined : spec.train.warmup?.batchSize) ??
      spec.rollout.batchSize * spec.rollout.samplesPerPrompt,
    done: sftDone,
    total: sftSteps,
    lr: sft ? undefined : (step) => warmupLr(spec, step),
    step: async (batch, lr) => {
      const r = await p.trainer.step(batch, { method: 'sft', lr }, run.failed.signal);
      if (r.skipped) noteSkipped(ctx, `${what} ${p.trainer.version + 1}`, r.loss);
      return r.loss;
    },
    stopRequested: () => run.stopRequested,
    afterStep: async (s, loss, samples, seconds) => {
      ctx.log(`${what} ${s}/${sftSteps}: sft loss ${loss.toFixed(4)}`);
      if (!sft) {
        run.warmupDone = s;
        if (s === sftSteps) {
          // RL starts with a fresh AdamW (train.warmup.resetOptimizer), before the
          // checkpoint, so a resume from it continues with RL's optimizer.
          if (spec.train.warmup?.resetOptimizer !== false) await p.trainer.resetOptimizer();
          await p.publish(true);
          await p.checkpoint();
          await p.evaluate(true);
        }
        return;
      }
      run.step = s;
      run.samplesTrained += samples;
      run.history.push({
        step: s,
        rewardMean: 0,
        successRate: 0,
        staleness: 0,
        episodes: 0,
        samples,
        ...(Number.isFinite(loss) ? { loss } : { loss: null, skipped: true as const }),
        seconds,
      });
      ctx.metrics.steps.inc({ job: ctx.job });
      ctx.metrics.samples.inc({ job: ctx.job }, samples);
      const every = spec.eval.everySteps;
      // SFT needs no rollouts, so the engines get the weights only when something reads them.
      const evalDue = every > 0 && (s % every === 0 || s === sftSteps);
      if (evalDue || s === sftSteps) await p.publish(true);
      if (evalDue) await p.evaluate();
      await p.checkpointIfDue();
    },
  });
}

/** The warm start's learning rate after `step` of its steps (train.warmup's schedule). */
export function warmupLr(spec: RLJobSpec, step: number): number | undefined {
  const w = spec.train.warmup;
  return w && lrAt(step, { baseLr: w.lr, schedule: w.schedule, totalSteps: w.steps, minLr: w.minLr });
}
