/**
 * What `clawray eval` evaluates, from the path a user gives it:
 *
 *   MODEL_DIR                          a model directory (config.json): served as it is
 *   <checkpoint.dir>/<sub>/step-N/     a trainer checkpoint: its weights go into the base model
 *   <checkpoint.dir>/<sub>             a submission: its newest complete trainer checkpoint
 *
 * With a manifest, a path that does not exist is also looked up under the manifest's
 * checkpoint root (`SUBMISSION_ID` or `SUBMISSION_ID/step-N`), and no path at all means the
 * newest run of the manifest's job. A checkpoint's driver state (`driver/step-N.json`) names
 * the job step it belongs to and what the job's own evaluations measured.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { CONFIG_FILE } from '../../actors/models/model-dir.js';
import { CheckpointManager, MODEL_FILE, TRAINER_STATE_FILE } from '../../actors/trainer/checkpoint.js';
import { ConfigError } from '../../common/errors.js';
import { checkpointsHome, findSubmission } from './checkpoint-ref.js';
import { type DriverState, JobStateStore } from './job-state.js';

export type EvalTarget =
  | { kind: 'model'; dir: string }
  | {
      kind: 'checkpoint';
      /** The trainer checkpoint directory (`…/step-N`). */
      dir: string;
      submissionDir: string;
      /** N of `step-N`: the trainer's optimizer step. */
      trainerStep: number;
      /** The driver's state saved with it (absent for a trainer checkpoint made outside a job). */
      state: DriverState | null;
    };

const STEP_DIR = /^step-(\d+)$/;

/**
 * Resolves `path` (relative to `cwd`); `checkpointRoot` is the manifest's, when there is one;
 * with `home`, a submission id (`SUB[/step-N]`) is also looked up under the default checkpoint
 * roots (`<home>/checkpoints/<job>/`).
 */
export function resolveEvalTarget(
  path: string,
  o: { cwd: string; checkpointRoot?: string; home?: string; verb?: string },
): EvalTarget {
  const direct = resolve(o.cwd, path);
  const verb = o.verb ?? 'evaluate';
  if (existsSync(direct)) return targetAt(direct, verb);
  const found = o.home === undefined ? undefined : findSubmission(path, o.home);
  if (o.checkpointRoot) {
    const under = resolve(o.checkpointRoot, path);
    if (existsSync(under)) return targetAt(under, verb);
    if (found) return targetAt(found, verb);
    throw new ConfigError(
      `${path}: no such model or checkpoint (looked at ${direct} and, under the manifest's checkpoint root, ${under})`,
      { fields: { path } },
    );
  }
  if (found) return targetAt(found, verb);
  const where = o.home === undefined ? '' : ` (nor a submission id under ${checkpointsHome(o.home)}/<job>/)`;
  throw new ConfigError(`${direct}: no such model directory or checkpoint${where}`, {
    fields: { path: direct },
  });
}

/** The newest checkpoint of the newest run of `jobName` under `root` (no path given). */
export function newestRunTarget(root: string, jobName: string): EvalTarget {
  const runs = new JobStateStore(root, '', 1).runsOf(jobName);
  if (runs.length === 0) {
    throw new ConfigError(
      `no run of job '${jobName}' has a checkpoint under ${root}: give a MODEL_DIR or CHECKPOINT to evaluate`,
      { fields: { root, job: jobName } },
    );
  }
  return targetAt(join(root, runs[0].submissionId));
}

function targetAt(dir: string, verb = 'evaluate'): EvalTarget {
  if (!statSync(dir).isDirectory()) {
    throw new ConfigError(`${dir}: not a directory: expected a model directory or a checkpoint`, {
      fields: { path: dir },
    });
  }
  if (existsSync(join(dir, CONFIG_FILE))) return { kind: 'model', dir };
  const m = STEP_DIR.exec(basename(dir));
  if (m && existsSync(join(dir, MODEL_FILE))) {
    if (!existsSync(join(dir, TRAINER_STATE_FILE))) {
      throw new ConfigError(`${dir}: an incomplete trainer checkpoint (no ${TRAINER_STATE_FILE})`, {
        fields: { path: dir },
      });
    }
    return checkpointTarget(dirname(dir), Number(m[1]));
  }
  const newest = new CheckpointManager({ dir }).latest();
  if (newest === null) {
    throw new ConfigError(
      `${dir}: nothing to ${verb} here: no model (${CONFIG_FILE}), no trainer checkpoint (step-N/ with ${MODEL_FILE} and ${TRAINER_STATE_FILE}), and no complete step-N/ checkpoint inside`,
      { fields: { path: dir } },
    );
  }
  return checkpointTarget(dir, newest);
}

function checkpointTarget(submissionDir: string, trainerStep: number): EvalTarget {
  return {
    kind: 'checkpoint',
    dir: join(submissionDir, `step-${trainerStep}`),
    submissionDir,
    trainerStep,
    state: driverStateFor(submissionDir, trainerStep),
  };
}

/** The driver state saved with trainer checkpoint `trainerStep`, if the job wrote one. */
function driverStateFor(submissionDir: string, trainerStep: number): DriverState | null {
  for (const file of [
    join(submissionDir, 'driver', `step-${trainerStep}.json`),
    join(submissionDir, 'driver-state.json'),
  ]) {
    if (!existsSync(file)) continue;
    try {
      const state = JSON.parse(readFileSync(file, 'utf8')) as DriverState;
      if (state.format === 'clawray-driver-state' && state.trainerStep === trainerStep) return state;
    } catch {
      // A driver state that does not parse only costs the job step and the recorded figure.
    }
  }
  return null;
}

/** The job's own evaluation of this checkpoint's weights (the last one at its step), if any. */
export function recordedEval(target: EvalTarget): DriverState['evals'][number] | undefined {
  if (target.kind !== 'checkpoint' || !target.state) return undefined;
  const { state } = target;
  return state.evals.filter((e) => e.step === state.step).at(-1);
}
