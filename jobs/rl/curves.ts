/**
 * A job's learning curves: every held-out evaluation it made and each RL step's mean reward,
 * as the summary carries them (`RLJobSummary.curves`) and as a picture beside its checkpoints
 * (`learning-curves.svg`, drawn by curve-svg.ts) that a person opens in a browser.
 *
 * They are read off the driver state's `evals` and `history`, which every checkpoint persists,
 * so a restarted driver and a `--resume`d submission keep the points from before.
 */
import { join } from 'node:path';
import { writeFileAtomic } from '../../common/atomic-file.js';
import { type CurveLabels, curvesSvg } from './curve-svg.js';
import type { EvalRecord, StepRecord } from './job-state.js';

/** What the reward panel says for a method without a reward. */
export function noRewardNote(method: string): string | undefined {
  if (method === 'sft') return 'no reward: sft trains on demonstrations';
  if (method === 'opd') return "no reward: opd trains on the teacher's hints";
  return undefined;
}

/** The file the curves are drawn into, in the submission's checkpoint directory. */
export const CURVES_FILE = 'learning-curves.svg';

/**
 * start: before any training (job step 0); warmup: the one that ended the SFT warm start (also
 * at job step 0: RL's starting point); rl: every later one (the steps of a method-sft job too).
 */
export type HeldoutPhase = 'start' | 'warmup' | 'rl';

export interface HeldoutPoint {
  step: number;
  value: number;
  phase: HeldoutPhase;
}

export interface RewardPoint {
  step: number;
  mean: number;
}

export interface JobCurves {
  /** Every held-out evaluation, in the order the job made them (its metric: 0..1). */
  heldout: HeldoutPoint[];
  /** Each RL step's mean reward over the episodes (turns, personal) of its batch. */
  reward: RewardPoint[];
  /** The SVG's absolute path; null when there was nothing to draw or it could not be written. */
  svg: string | null;
}

/**
 * The curves of a job's evaluations and step records. Steps the trainer skipped (their loss or
 * gradients were not finite: nothing was trained) and non-finite figures are left out, and
 * methods without a reward have no reward curve: sft (its steps are SFT on demonstrations) and
 * opd (it trains on the teacher's hints; OpenClaw-RL's OPD judges no scalar reward).
 */
export function curvesFrom(
  evals: readonly EvalRecord[],
  history: readonly StepRecord[],
  method: string,
): Omit<JobCurves, 'svg'> {
  const heldout = evals
    .filter((e) => Number.isFinite(e.success) && Number.isFinite(e.step))
    .map(
      (e, i): HeldoutPoint => ({
        step: e.step,
        value: e.success,
        phase: e.afterWarmup ? 'warmup' : i === 0 && e.step === 0 ? 'start' : 'rl',
      }),
    );
  const reward =
    method === 'sft' || method === 'opd'
      ? []
      : history
          .filter((r) => !r.skipped && Number.isFinite(r.rewardMean) && Number.isFinite(r.step))
          .map((r) => ({ step: r.step, mean: r.rewardMean }));
  return { heldout, reward };
}

/**
 * Draws `curves` into `dir`/CURVES_FILE (atomically: a reader never sees half a picture) and
 * returns its path; null when there is no point to draw. A failed write throws.
 */
export function writeCurves(dir: string, curves: Omit<JobCurves, 'svg'>, labels: CurveLabels): string | null {
  if (curves.heldout.length === 0 && curves.reward.length === 0) return null;
  const file = join(dir, CURVES_FILE);
  writeFileAtomic(file, curvesSvg(curves, labels));
  return file;
}
