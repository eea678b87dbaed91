/**
 * A job's durable state on disk. Checkpoints belong to a submission:
 *
 *   <checkpoint.dir>/<submission-id>/step-<N>/          trainer checkpoints (CheckpointManager)
 *   <checkpoint.dir>/<submission-id>/driver/step-<N>.json  the driver's state at that checkpoint
 *   <checkpoint.dir>/<submission-id>/driver-state.json  the newest of those (written last)
 *
 * so two runs of one job never mix weights or driver state. A restarted driver continues its own
 * submission; `--resume` starts a new submission from another's checkpoint (the newest run of the
 * job's name unless told a submission id or a step), linking its files into the new directory.
 * Every JSON file is written to a temp file, fsynced and renamed: a crash leaves the old file or
 * the new one, never half of one.
 */
import {
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import { join } from 'node:path';
import type { LoraConfig } from '../../actors/trainer/lora.js';
import { writeFileAtomic } from '../../common/atomic-file.js';
import { ConfigError, NotFoundError } from '../../common/errors.js';
import type { EvalResult } from './evaluation.js';
import { emptyLedgerState, type LedgerState } from './trajectory-ledger.js';

export interface StepRecord {
  step: number;
  rewardMean: number;
  successRate: number;
  staleness: number;
  episodes: number;
  samples: number;
  /** null: the trainer skipped the step, its loss or gradients were not finite (`skipped`). */
  loss: number | null;
  seconds: number;
  skipped?: true;
}

export interface EvalRecord extends EvalResult {
  step: number;
  /** The evaluation that ended the SFT warm start (train.warmup): RL's starting point. */
  afterWarmup?: boolean;
}

export interface DriverState {
  format: 'clawray-driver-state';
  submissionId: string;
  jobName: string;
  /** RL (or SFT) steps done. */
  step: number;
  warmupDone: number;
  /** The trainer checkpoint that holds this state's weights (its optimizer step). */
  trainerStep: number;
  evals: EvalRecord[];
  history: StepRecord[];
  ledger: LedgerState;
  /** Steps the trainer skipped (non-finite loss or gradients), SFT and RL. Absent in older files: 0. */
  skippedSteps?: number;
  savedAtMs: number;
  /** The submission (and its trainer checkpoint) this run was started from with `--resume`. */
  resumedFrom?: string;
  /**
   * The model the trainer's checkpoints go into: the directory the job's engines served (its
   * chat template in place), `spec.model.name`, and `spec.train.lora` (a LoRA checkpoint holds
   * adapters only). `clawray serve` and `clawray eval` read it to serve a checkpoint by itself.
   * Absent in files of older jobs.
   */
  model?: CheckpointBase;
}

export interface CheckpointBase {
  dir: string;
  name?: string;
  lora?: LoraConfig;
}

const STATE_FILE = 'driver-state.json';
const DRIVER_DIR = 'driver';

/**
 * Refuses a `--resume` reference that is not SUBMISSION_ID or SUBMISSION_ID/step-N (a path,
 * say), which would otherwise split into an empty id, read as "the newest run", and start
 * afresh. '' (plain `--resume`) passes. Returns the reference.
 */
export function checkResumeRef(
  ref: string,
  root = "the manifest's checkpoint.dir",
  flag = '--resume',
): string {
  if (ref !== '' && !/^[A-Za-z0-9][A-Za-z0-9._-]*(\/[^/]+)?$/.test(ref)) {
    throw new ConfigError(
      `${flag} ${ref}: expected SUBMISSION_ID or SUBMISSION_ID/step-N (looked up in ${root}), not a path`,
      { fields: { ref } },
    );
  }
  return ref;
}

export class JobStateStore {
  /** This submission's directory (trainer checkpoints go here too). */
  readonly dir: string;

  constructor(
    /** `spec.checkpoint.dir`, resolved. */
    readonly root: string,
    readonly submissionId: string,
    private readonly keep: number,
  ) {
    this.dir = join(root, submissionId);
  }

  /** The newest saved state of this submission, or null. */
  latest(): DriverState | null {
    return readState(join(this.dir, STATE_FILE));
  }

  save(state: DriverState): void {
    const text = JSON.stringify(state);
    writeFileAtomic(join(this.dir, DRIVER_DIR, `step-${state.trainerStep}.json`), text);
    writeFileAtomic(join(this.dir, STATE_FILE), text);
    this.prune();
  }

  /**
   * Brings another submission's checkpoint into this one: `ref` is '' (the newest run of
   * `jobName` other than this one), `SUBMISSION_ID`, or `SUBMISSION_ID/step-N` (a trainer
   * checkpoint step). Returns the state resumed, or null when there is nothing to resume.
   */
  adopt(jobName: string, ref: string): DriverState | null {
    checkResumeRef(ref, this.root);
    const [sourceId, stepPart] = ref.split('/');
    let source: string | undefined = sourceId;
    if (!source) {
      const runs = this.runsOf(jobName).filter((r) => r.submissionId !== this.submissionId);
      if (runs.length === 0) return null;
      source = runs[0].submissionId;
    }
    const sourceDir = join(this.root, source);
    let state: DriverState | null;
    if (stepPart) {
      const m = /^step-(\d+)$/.exec(stepPart);
      if (!m) throw new ConfigError(`--resume ${ref}: expected SUBMISSION_ID/step-N`, { fields: { ref } });
      state = readState(join(sourceDir, DRIVER_DIR, `step-${m[1]}.json`));
      if (!state)
        throw new NotFoundError(`--resume ${ref}: no driver state for step-${m[1]} in ${sourceDir}`, {
          fields: { ref },
        });
    } else {
      state = readState(join(sourceDir, STATE_FILE));
      if (!state)
        throw new NotFoundError(`--resume ${ref}: no checkpoint in ${sourceDir}`, { fields: { ref } });
    }
    const ckpt = join(sourceDir, `step-${state.trainerStep}`);
    if (!existsSync(ckpt)) throw new NotFoundError(`--resume ${ref}: ${ckpt} is gone`, { fields: { ref } });
    linkTree(ckpt, join(this.dir, `step-${state.trainerStep}`));
    // The new run's streams are new: the source's trajectory accounting does not carry over.
    const adopted: DriverState = {
      ...state,
      submissionId: this.submissionId,
      ledger: emptyLedgerState(),
      resumedFrom: `${source}/step-${state.trainerStep}`,
    };
    this.save(adopted);
    return adopted;
  }

  /** Runs of a job name under the root, newest first. */
  runsOf(jobName: string): Array<{ submissionId: string; savedAtMs: number }> {
    if (!existsSync(this.root)) return [];
    const runs: Array<{ submissionId: string; savedAtMs: number }> = [];
    for (const name of readdirSync(this.root)) {
      const state = readState(join(this.root, name, STATE_FILE));
      if (state && state.jobName === jobName) runs.push({ submissionId: name, savedAtMs: state.savedAtMs });
    }
    return runs.sort((a, b) => b.savedAtMs - a.savedAtMs);
  }

  private prune(): void {
    const dir = join(this.dir, DRIVER_DIR);
    const steps = readdirSync(dir)
      .map((f) => /^step-(\d+)\.json$/.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    for (const s of steps.slice(0, Math.max(0, steps.length - this.keep)))
      rmSync(join(dir, `step-${s}.json`), { force: true });
  }
}

function readState(file: string): DriverState | null {
  if (!existsSync(file)) return null;
  const state = JSON.parse(readFileSync(file, 'utf8')) as DriverState;
  return state.format === 'clawray-driver-state' ? state : null;
}

/** Hard-links every file of `from` into `to` (copies where links cannot cross filesystems). */
function linkTree(from: string, to: string): void {
  if (existsSync(to)) return;
  const tmp = `${to}.tmp-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  for (const name of readdirSync(from)) {
    const src = join(from, name);
    if (statSync(src).isDirectory()) {
      linkTree(src, join(tmp, name));
      continue;
    }
    try {
      linkSync(src, join(tmp, name));
    } catch {
      copyFileSync(src, join(tmp, name));
    }
  }
  renameSync(tmp, to);
}
