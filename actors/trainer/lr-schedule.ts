/**
 * Learning-rate schedules: linear warmup from 0, then constant, cosine or linear decay to
 * `minLr` at `totalSteps` (and `minLr` after it). The conventions are those of Hugging Face
 * `get_{constant,cosine,linear}_schedule_with_warmup`: `step` is the number of optimizer steps
 * already taken (0-based), so during warmup lr = baseLr · step / warmupSteps.
 */
import { ConfigError } from '../../common/errors.js';

export type LrScheduleKind = 'constant' | 'cosine' | 'linear';
export const LR_SCHEDULES: readonly LrScheduleKind[] = ['constant', 'cosine', 'linear'];

export interface LrScheduleOptions {
  baseLr: number;
  /** Steps of linear warmup from 0 to baseLr. Default 0. */
  warmupSteps?: number;
  /** Where the decay ends (needed by 'cosine' and 'linear'). */
  totalSteps?: number;
  /** Default 'constant'. */
  schedule?: LrScheduleKind;
  /** The floor the decay ends at. Default 0. */
  minLr?: number;
}

function bad(what: string): never {
  throw new ConfigError(`lr schedule: ${what}`);
}

/** Throws a ConfigError naming the first bad option. */
export function validateLrSchedule(o: LrScheduleOptions): void {
  const { baseLr, warmupSteps = 0, totalSteps, schedule = 'constant', minLr = 0 } = o;
  if (!Number.isFinite(baseLr) || baseLr < 0)
    bad(`baseLr must be a finite number ≥ 0, got ${String(baseLr)}`);
  if (!Number.isFinite(minLr) || minLr < 0 || minLr > baseLr) {
    bad(`minLr must be a finite number in [0, baseLr=${baseLr}], got ${String(minLr)}`);
  }
  if (!Number.isSafeInteger(warmupSteps) || warmupSteps < 0) {
    bad(`warmupSteps must be a whole number ≥ 0, got ${String(warmupSteps)}`);
  }
  if (!LR_SCHEDULES.includes(schedule)) {
    bad(`schedule must be one of ${LR_SCHEDULES.join(', ')}, got ${JSON.stringify(schedule)}`);
  }
  if (totalSteps !== undefined && (!Number.isSafeInteger(totalSteps) || totalSteps < 0)) {
    bad(`totalSteps must be a whole number ≥ 0, got ${String(totalSteps)}`);
  }
  if (schedule !== 'constant') {
    if (totalSteps === undefined) bad(`schedule '${schedule}' needs totalSteps`);
    if (totalSteps < warmupSteps) bad(`totalSteps (${totalSteps}) is less than warmupSteps (${warmupSteps})`);
  }
}

/** The learning rate for the update that follows `step` optimizer steps already taken. */
export function lrAt(step: number, options: LrScheduleOptions): number {
  validateLrSchedule(options);
  if (!Number.isSafeInteger(step) || step < 0) bad(`step must be a whole number ≥ 0, got ${String(step)}`);
  const { baseLr, warmupSteps = 0, schedule = 'constant', minLr = 0 } = options;
  if (step < warmupSteps) return (baseLr * step) / warmupSteps;
  if (schedule === 'constant') return baseLr;
  const total = options.totalSteps!;
  if (step >= total) return minLr;
  const progress = (step - warmupSteps) / (total - warmupSteps);
  const factor = schedule === 'cosine' ? 0.5 * (1 + Math.cos(Math.PI * progress)) : 1 - progress;
  return minLr + (baseLr - minLr) * factor;
}
