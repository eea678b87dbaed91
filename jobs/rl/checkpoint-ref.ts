/**
 * A checkpoint a job wrote, named the ways a user has at hand after `clawray job submit`: its
 * path, its submission's directory, or the submission id alone (`SUB` or `SUB/step-N`, looked
 * up under the default checkpoint roots, `$CLAWRAY_HOME/checkpoints/<job name>/`), and the
 * base model its weights go into, which the job saved with its driver state. `clawray serve`
 * and `clawray eval` resolve what they are given through here, so both accept the same names.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CONFIG_FILE } from '../../actors/models/model-dir.js';
import { ConfigError } from '../../common/errors.js';
import { defaultCheckpointDir } from '../manifest/defaults.js';
import type { CheckpointBase, DriverState } from './job-state.js';

const SUBMISSION_REF = /^[A-Za-z0-9][A-Za-z0-9._-]*(\/step-\d+)?$/;

/** The default checkpoint root of every job name: `$CLAWRAY_HOME/checkpoints`. */
export function checkpointsHome(home: string): string {
  return resolve(home, defaultCheckpointDir('x'), '..');
}

/**
 * `SUB` or `SUB/step-N` under a default checkpoint root (`<home>/checkpoints/<job>/SUB`), or
 * undefined when `ref` is no such name or nothing there holds it.
 */
export function findSubmission(ref: string, home: string): string | undefined {
  if (!SUBMISSION_REF.test(ref)) return undefined;
  const root = checkpointsHome(home);
  if (!existsSync(root)) return undefined;
  for (const job of readdirSync(root).sort()) {
    const dir = join(root, job, ref);
    if (existsSync(dir)) return dir;
  }
  return undefined;
}

/**
 * A checkpoint target's base model: `o.override` (a directory), else the one its job saved
 * with it. `o.flag` is the option that overrides it, named when the base cannot be found.
 */
export function checkpointBase(
  /** A trainer checkpoint (an EvalTarget of kind 'checkpoint'). */
  target: { dir: string; submissionDir: string; state: DriverState | null },
  o: { flag: string; override?: string },
): CheckpointBase & { job?: string } {
  const saved = target.state?.model ? target.state : newestState(target.submissionDir);
  const job = saved?.jobName;
  if (o.override !== undefined) {
    if (!existsSync(join(o.override, CONFIG_FILE))) {
      throw new ConfigError(`${o.flag} ${o.override}: no model there (no ${CONFIG_FILE})`, {
        fields: { path: o.override },
      });
    }
    return { ...saved?.model, dir: o.override, job };
  }
  const model = saved?.model;
  if (!model) {
    throw new ConfigError(
      `${target.dir} is a trainer checkpoint whose job did not record its base model (a job of an older clawray): its weights go into the model the job trained: pass ${o.flag} BASE_MODEL_DIR`,
      { fields: { path: target.dir } },
    );
  }
  if (!existsSync(join(model.dir, CONFIG_FILE))) {
    throw new ConfigError(
      `${target.dir}: its base model ${model.dir}, recorded by its job, is gone: pass ${o.flag} BASE_MODEL_DIR with the model the job trained`,
      { fields: { path: target.dir, base: model.dir } },
    );
  }
  return { ...model, job };
}

/** The submission's newest driver state (any of its checkpoints records the same base model). */
function newestState(submissionDir: string): DriverState | null {
  const file = join(submissionDir, 'driver-state.json');
  if (!existsSync(file)) return null;
  try {
    const state = JSON.parse(readFileSync(file, 'utf8')) as DriverState;
    return state.format === 'clawray-driver-state' ? state : null;
  } catch {
    return null;
  }
}
