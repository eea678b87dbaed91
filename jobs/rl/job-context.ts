/**
 * One run of an RL job as its phases see it (bring-up → warm start → RL → final eval →
 * summary): the manifest, where its log and metrics go, a clock, and `JobRun`, the progress and
 * records every phase reads and moves. The driver makes one per run; a phase's unit test makes
 * one with `jobContext` and fakes for the rest.
 */
import type { RLJobSpec } from '../manifest/schema.js';
import { JobMetrics } from './job-metrics.js';
import type { EvalRecord, StepRecord } from './job-state.js';
import type { StalenessGate } from './staleness-gate.js';
import type { TrajectoryCounts } from './trajectory-ledger.js';

export type DriverPhase = 'starting' | 'warmup' | 'training' | 'evaluating' | 'stopping' | 'done';

/** Where a running job is, for `job status` (see `RLDriver.progress`). */
export interface DriverProgress {
  phase: DriverPhase;
  /** RL (or SFT) steps done, of `steps` (null: runs until stopped). */
  step: number;
  steps: number | null;
  /** Warm-start SFT steps done (0 without `train.warmup`). */
  warmupStep: number;
  runtime: string | null;
  /** Steps the trainer skipped: their loss or gradients were not finite. */
  skippedSteps: number;
}

/** What a run has done so far: the phases move it, the summary and the checkpoints read it. */
export class JobRun {
  phase: DriverPhase = 'starting';
  /** What the actors compute on, as the `runtime:` log line says it (once they are ready). */
  runtime: string | null = null;
  /** RL (or SFT) steps done. */
  step = 0;
  /** Warm-start SFT steps done. */
  warmupDone = 0;
  /** Steps the trainer skipped (non-finite loss or gradients), over the whole submission. */
  skippedSteps = 0;
  readonly history: StepRecord[] = [];
  readonly evals: EvalRecord[] = [];
  startedAt: number;
  rlStartedAt = 0;
  samplesTrained = 0;
  /** Each RL step's mismatch, policy lag and its version gap in this run (for the summary's means). */
  readonly drift = { mismatch: [] as number[], policyLag: [] as number[], versions: [] as number[] };
  trainerWaitMs = 0;
  /** The RL phase's staleness gate (closed by a stop). */
  gate?: StalenessGate;
  rolloutSlots = 1;
  teacherTurns = 0;
  /** The step this run resumed from (null: it started afresh). */
  resumedFrom: number | null = null;
  stopRequested = false;
  /** Aborted when the job fails (or its training finished): the loops end at once. */
  readonly failed = new AbortController();

  constructor(now: number) {
    this.startedAt = now;
  }
}

export interface JobContext {
  readonly spec: RLJobSpec;
  /** The job's name (metadata.name). */
  readonly job: string;
  readonly submissionId: string;
  readonly run: JobRun;
  readonly metrics: JobMetrics;
  /** One human-readable line per event (the job's log). */
  log(line: string): void;
  /** Milliseconds, for rates and durations. */
  now(): number;
}

export function jobContext(o: {
  spec: RLJobSpec;
  job: string;
  submissionId: string;
  log(line: string): void;
  metrics?: JobMetrics;
  now?: () => number;
}): JobContext {
  const now = o.now ?? (() => performance.now());
  return {
    spec: o.spec,
    job: o.job,
    submissionId: o.submissionId,
    run: new JobRun(now()),
    metrics: o.metrics ?? new JobMetrics(),
    log: o.log,
    now,
  };
}

/** True while the job has steps to take after `step` (always, for a live job without train.steps). */
export function stepsLeft(ctx: JobContext, step: number): boolean {
  return ctx.spec.train.steps === undefined || step < ctx.spec.train.steps;
}

/** Where the job is now (reported to the head for `job status`). */
export function progressOf(ctx: JobContext): DriverProgress {
  const { run } = ctx;
  return {
    phase: run.phase,
    step: run.step,
    steps: ctx.spec.train.steps ?? null,
    warmupStep: run.warmupDone,
    runtime: run.runtime,
    skippedSteps: run.skippedSteps,
  };
}

/** Trained samples per second and the idle ratios, since training started. */
export function rates(ctx: JobContext) {
  const { run } = ctx;
  const rlElapsed = run.rlStartedAt ? (ctx.now() - run.rlStartedAt) / 1000 : 0;
  const idle = (ms: number, slots = 1) => (rlElapsed > 0 ? Math.min(1, ms / 1000 / (rlElapsed * slots)) : 0);
  return {
    samplesPerSecond: rlElapsed > 0 ? run.samplesTrained / rlElapsed : 0,
    trainerIdleRatio: idle(run.trainerWaitMs),
    rolloutIdleRatio: run.gate ? idle(run.gate.waitedMs, run.rolloutSlots) : 0,
  };
}

/**
 * A step the trainer did not take: its loss or summed gradients were not finite (a judge that
 * returned NaN, an overflow). Logged and counted; the last good weights keep serving.
 */
export function noteSkipped(ctx: JobContext, what: string, loss: number): void {
  ctx.run.skippedSteps++;
  ctx.metrics.skippedSteps.inc({ job: ctx.job });
  ctx.log(
    `${what} skipped: its loss (${loss}) or gradients were not finite, so no weight changed and nothing was published (${ctx.run.skippedSteps} skipped step(s) so far)`,
  );
}

export function setTrajectoryMetrics(ctx: JobContext, t: TrajectoryCounts): void {
  const set = (state: string, v: number) => ctx.metrics.trajectories.set({ job: ctx.job, state }, v);
  set('produced', t.produced);
  set('judged', t.judged);
  set('trained', t.trained);
  for (const [reason, n] of Object.entries(t.dropped)) if (reason !== 'total') set(`dropped_${reason}`, n);
  set('lost', t.lost);
  set('duplicated', t.duplicated);
}
