/**
 * The job's summary (`summary {JSON}`, the last line of its log, and `job submit`'s report):
 * what the run did — its steps, held-out figures, rates, drift, checkpoint, trajectories and
 * curves — whether it completed, stopped or failed.
 */
import type { JobCurves } from './curves.js';
import { type JobContext, rates } from './job-context.js';
import type { EvalRecord, StepRecord } from './job-state.js';
import type { TrajectoryCounts } from './trajectory-ledger.js';

export interface RLJobSummary {
  submissionId: string;
  job: string;
  track: string;
  method: string;
  /** failed: the summary of a job that failed, up to its failure (`error`). */
  status: 'completed' | 'stopped' | 'failed';
  error?: string;
  steps: number;
  /** Steps the trainer skipped because their loss or gradients were not finite (weights unchanged). */
  skippedSteps: number;
  /** What `heldout` measures: solved share of held-out tasks, or the simulated user's preference score. */
  metric: 'heldout_success' | 'preference_score';
  /**
   * The held-out figure before any training, after the SFT warm start (train.warmup: where RL
   * starts; null without one), and at the end; end − afterWarmup is what RL itself added.
   */
  heldout: { start: number | null; afterWarmup: number | null; end: number | null };
  samplesPerSecond: number;
  trainerIdleRatio: number;
  rolloutIdleRatio: number;
  elapsedSeconds: number;
  resumedFromStep: number | null;
  checkpointDir: string;
  /**
   * The newest checkpoint of the job: its directory (`step-N`, named by the trainer's optimizer
   * step: warm-start steps included), the job step it holds, and that optimizer step.
   */
  checkpoint: { path: string; step: number; trainerStep: number } | null;
  /** Warm-start SFT steps done (train.warmup; 0 without one and for method sft). */
  warmupSteps: number;
  /** null when a failed job could not read its streams' counts. */
  trajectories: TrajectoryCounts | null;
  recoveries: { engines: number; trainers: number };
  /** What each rollout engine and trainer shard computed on (see ActorSet.runtime). */
  runtime: { rollout: string[]; trainer: string[] };
  /**
   * The train–inference mismatch: mean over this run's RL steps of each step's mean |trainer −
   * rollout logprob| on tokens the trainer scored with the weights that drew them (both at the
   * sampling temperature; goal ≤ 1e-3); null when no step scored such a token.
   */
  mismatch: number | null;
  /**
   * The policy lag: mean over this run's RL steps with stale samples of their mean |trainer −
   * rollout logprob| under the newer weights (how far the policy moved since they were drawn);
   * null when no sample was stale (synchronous training).
   */
  policyLag: number | null;
  /** The mean version gap of those stale samples' tokens; null with `policyLag`. */
  policyLagVersions: number | null;
  /**
   * opd/combine: whose logprobs taught, and how many turns they scored (turns with a hint; with
   * hintSelect topk-overlap each candidate hint of a turn counts once).
   */
  teacher?: { kind: 'frozen' | 'tracking'; turns: number };
  /**
   * The learning curves: every held-out evaluation (`start` before training, `warmup` after the
   * warm start, `rl` during training, by job step) and each RL step's mean reward, and the SVG
   * drawn from them beside the checkpoints (`<checkpointDir>/learning-curves.svg`; null when
   * there was nothing to draw or it could not be written). See curves.ts.
   */
  curves: JobCurves;
  evals: EvalRecord[];
  history: StepRecord[];
}

/** What the summary reads besides the run: the job's parts and its checkpoints. */
export interface SummaryParts {
  checkpointDir: string;
  checkpoint: RLJobSummary['checkpoint'];
  recoveries: RLJobSummary['recoveries'];
  runtime: RLJobSummary['runtime'];
  /** The curves so far, drawn beside the checkpoints. */
  curves(): JobCurves;
}

/** The summary of the run so far. */
export function jobSummary(
  ctx: JobContext,
  status: RLJobSummary['status'],
  trajectories: TrajectoryCounts | null,
  parts: SummaryParts,
): RLJobSummary {
  const { spec, run } = ctx;
  const p = rates(ctx);
  return {
    submissionId: ctx.submissionId,
    job: ctx.job,
    track: spec.track,
    method: spec.method,
    status,
    steps: run.step,
    warmupSteps: spec.method === 'sft' ? 0 : run.warmupDone,
    skippedSteps: run.skippedSteps,
    metric: spec.track === 'personal' ? 'preference_score' : 'heldout_success',
    heldout: heldoutSummary(run.evals),
    samplesPerSecond: p.samplesPerSecond,
    trainerIdleRatio: p.trainerIdleRatio,
    rolloutIdleRatio: p.rolloutIdleRatio,
    elapsedSeconds: (ctx.now() - run.startedAt) / 1000,
    resumedFromStep: run.resumedFrom,
    checkpointDir: parts.checkpointDir,
    checkpoint: parts.checkpoint,
    trajectories,
    recoveries: parts.recoveries,
    runtime: parts.runtime,
    mismatch: meanOrNull(run.drift.mismatch),
    policyLag: meanOrNull(run.drift.policyLag),
    policyLagVersions: meanOrNull(run.drift.versions),
    ...(spec.method === 'opd' || spec.method === 'combine'
      ? { teacher: { kind: spec.judge.teacher, turns: run.teacherTurns } }
      : {}),
    curves: parts.curves(),
    evals: run.evals,
    history: run.history,
  };
}

/**
 * The summary's held-out figures from a job's evaluations: the first (before any training), the
 * one that ended the warm start, and the last.
 */
export function heldoutSummary(evals: readonly EvalRecord[]): RLJobSummary['heldout'] {
  return {
    start: evals[0]?.success ?? null,
    afterWarmup: evals.find((e) => e.afterWarmup)?.success ?? null,
    end: evals.at(-1)?.success ?? null,
  };
}

/** The mean of a run's per-step figures; null when no step had one. */
function meanOrNull(values: readonly number[]): number | null {
  return values.length > 0 ? values.reduce((a, b) => a + b, 0) / values.length : null;
}
