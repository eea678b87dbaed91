/**
 * The job's checkpoints: the commit protocol that writes one (trainer checkpoint → driver state
 * naming what it commits → mark trained → ack; see trajectory-ledger.ts), the learning curves
 * drawn beside it, and the way back from one (a restarted driver continues its submission;
 * `--resume` adopts another's).
 */
import { join } from 'node:path';
import type { PublishedWeights } from '../../actors/trainer/weight-publisher.js';
import { curvesFrom, type JobCurves, noRewardNote, writeCurves } from './curves.js';
import { type JobContext, setTrajectoryMetrics } from './job-context.js';
import type { CheckpointBase, DriverState, JobStateStore } from './job-state.js';
import type { TrainerGroup } from './trainer-group.js';
import type { TrajectoryLedger } from './trajectory-ledger.js';

/** What a checkpoint needs of the trainer group. */
export type CheckpointTrainer = Pick<TrainerGroup, 'version' | 'saveCheckpoint' | 'resume' | 'readWeights'>;
/** What a checkpoint needs of the trajectory ledger. */
export type CheckpointLedger = Pick<
  TrajectoryLedger,
  'prepareCommit' | 'finishCommit' | 'counts' | 'restore'
>;
/** Where the driver state goes (a JobStateStore). */
export type DriverStateStore = Pick<JobStateStore, 'dir' | 'root' | 'save' | 'latest' | 'adopt'>;

export class JobCheckpoints {
  /** The trainer (optimizer) step of the newest checkpoint of this run; null until there is one. */
  trainerStep: number | null = null;
  /** The job step of that checkpoint. */
  jobStep: number | null = null;
  /** Where this run last saved the trainer's weights (null until it has). */
  path: string | null = null;
  /** The model the trainer's checkpoints go into (saved with them for `clawray serve` and `eval`). */
  baseModel?: CheckpointBase;
  /** Whether a failed write of the curves' SVG was logged (once is enough). */
  private curvesWarned = false;

  constructor(
    private readonly ctx: JobContext,
    readonly store: DriverStateStore,
  ) {}

  /** This submission's checkpoint directory. */
  get dir(): string {
    return this.store.dir;
  }

  /** The newest checkpoint, as the summary reports it. */
  latest(): { path: string; step: number; trainerStep: number } | null {
    return this.path !== null && this.trainerStep !== null
      ? { path: this.path, step: this.jobStep ?? this.ctx.run.step, trainerStep: this.trainerStep }
      : null;
  }

  /** Writes a checkpoint of the job where it is. */
  async save(trainers: CheckpointTrainer, ledger: CheckpointLedger): Promise<void> {
    const { ctx } = this;
    const { run } = ctx;
    // The end of a job whose last step was just checkpointed: the weights and optimizer state
    // on disk are current, so only the driver state (evals, ledger) is written again.
    const unchanged = this.path !== null && this.trainerStep === trainers.version;
    const path = unchanged ? this.path! : await trainers.saveCheckpoint(run.step);
    // The same job step checkpointed again (the end, after its final evaluation or a stop):
    // only the driver state is new, and the log must not announce the checkpoint twice.
    const again = unchanged && this.jobStep === run.step;
    this.path = path;
    const ledgerState = ledger.prepareCommit();
    this.store.save({
      format: 'clawray-driver-state',
      submissionId: ctx.submissionId,
      jobName: ctx.job,
      step: run.step,
      warmupDone: run.warmupDone,
      trainerStep: trainers.version,
      evals: run.evals,
      history: run.history,
      ledger: ledgerState,
      skippedSteps: run.skippedSteps,
      ...(this.baseModel ? { model: this.baseModel } : {}),
      savedAtMs: Date.now(),
    });
    this.trainerStep = trainers.version;
    this.jobStep = run.step;
    // The curves beside the checkpoint, so a running (or crashed) job's can be looked at too.
    this.drawCurves();
    await ledger.finishCommit();
    setTrajectoryMetrics(ctx, await ledger.counts());
    ctx.log(
      again
        ? `driver state saved again at the end of step ${run.step} (the weights in ${path} are unchanged)`
        : `${this.name()}: ${path}${parenthesis([
            checkpointNaming(run.step, this.sftJob ? 0 : run.warmupDone, trainers.version),
            unchanged ? 'weights unchanged; driver state saved' : '',
          ])}`,
    );
  }

  /** A checkpoint when the job step is due one (checkpoint.everySteps). */
  saveIfDue(trainers: CheckpointTrainer, ledger: CheckpointLedger): Promise<void> {
    const every = this.ctx.spec.checkpoint.everySteps;
    return every > 0 && this.ctx.run.step % every === 0 ? this.save(trainers, ledger) : Promise.resolve();
  }

  /**
   * Continues this submission (a restarted driver), or adopts another's checkpoint (`resume`:
   * `--resume [REF]`, '' for the newest run of the job's name). Returns the step resumed at,
   * null when the job starts afresh.
   */
  async restore(
    trainers: CheckpointTrainer,
    engines: { publish(version: number, weights: PublishedWeights): Promise<void> },
    ledger: CheckpointLedger,
    resume: string | undefined,
  ): Promise<number | null> {
    const { ctx, store } = this;
    const { run } = ctx;
    let state: DriverState | null = store.latest();
    if (state) {
      ctx.log(`continuing submission ${ctx.submissionId} from its checkpoint at step ${state.step}`);
    } else if (resume !== undefined) {
      state = store.adopt(ctx.job, resume);
      if (!state) ctx.log(`no earlier run of ${ctx.job} in ${store.root}; starting from scratch`);
    }
    if (!state) return null;
    await trainers.resume(state.trainerStep);
    this.trainerStep = state.trainerStep;
    this.jobStep = state.step;
    this.path = join(store.dir, `step-${state.trainerStep}`);
    run.step = state.step;
    run.warmupDone = state.warmupDone;
    run.skippedSteps = state.skippedSteps ?? 0;
    run.history.push(...state.history);
    run.evals.push(...state.evals);
    await ledger.restore(state.ledger);
    await engines.publish(trainers.version, await trainers.readWeights());
    ctx.log(`resumed from ${store.dir} at step ${run.step} (trainer checkpoint step-${state.trainerStep})`);
    return run.step;
  }

  /**
   * The job's curves so far, drawn into its checkpoint directory. A picture that cannot be
   * written is a warning in the log (once), never the job's failure.
   */
  drawCurves(): JobCurves {
    const { ctx } = this;
    const curves = curvesFrom(ctx.run.evals, ctx.run.history, ctx.spec.method);
    let svg: string | null = null;
    try {
      svg = writeCurves(this.store.dir, curves, {
        title: `${ctx.job} (${ctx.submissionId})`,
        heldout: ctx.spec.track === 'personal' ? 'preference score' : 'held-out success',
        noReward: noRewardNote(ctx.spec.method),
      });
    } catch (err) {
      if (!this.curvesWarned) {
        this.curvesWarned = true;
        ctx.log(
          `warning: the learning curves were not drawn in ${this.store.dir}: ${(err as Error).message}`,
        );
      }
    }
    return { ...curves, svg };
  }

  /** What the log calls the checkpoint being written: by job step, or by warm-start step. */
  private name(): string {
    const { run, spec } = this.ctx;
    const warmup = spec.train.warmup?.steps ?? 0;
    if (this.sftJob || run.step > 0 || run.warmupDone === 0) return `checkpoint at step ${run.step}`;
    return run.warmupDone >= warmup
      ? 'checkpoint after the warm start'
      : `checkpoint at warm-start step ${run.warmupDone}/${warmup}`;
  }

  private get sftJob(): boolean {
    return this.ctx.spec.method === 'sft';
  }
}

/**
 * Why a checkpoint of job step `step` is named `step-${trainerStep}`: trainer checkpoints count
 * optimizer steps, warm-start SFT steps included (and RL steps that trained nothing excluded).
 * Empty when the two agree.
 */
export function checkpointNaming(step: number, warmupDone: number, trainerStep: number): string {
  if (trainerStep === step + warmupDone && (warmupDone === 0 || step === 0)) return '';
  if (warmupDone > 0 && trainerStep >= warmupDone) {
    return `optimizer step ${trainerStep}: ${warmupDone} warm-start + ${trainerStep - warmupDone} RL`;
  }
  return `optimizer step ${trainerStep}`;
}

/** ' (a; b)' of the parts that say something, '' when none does. */
function parenthesis(parts: string[]): string {
  const said = parts.filter(Boolean);
  return said.length > 0 ? ` (${said.join('; ')})` : '';
}
