import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointManager } from '../../actors/trainer/checkpoint.js';
import { ConfigError } from '../../common/errors.js';
import { newestRunTarget, recordedEval, resolveEvalTarget } from './eval-target.js';
import { type DriverState, JobStateStore } from './job-state.js';
import { emptyLedgerState } from './trajectory-ledger.js';

const evalAt = (step: number, success: number) => ({
  step,
  success,
  rewardMean: success * 2 - 1,
  episodes: 4,
  seconds: 1,
});

function driverState(submissionId: string, step: number, trainerStep: number): DriverState {
  return {
    format: 'clawray-driver-state',
    submissionId,
    jobName: 'job-a',
    step,
    warmupDone: 0,
    trainerStep,
    evals: [evalAt(0, 0.1), evalAt(step, 0.5), evalAt(step, 0.75)],
    history: [],
    ledger: emptyLedgerState(),
    savedAtMs: Date.now() + trainerStep,
  };
}

describe('resolveEvalTarget: what `clawray eval PATH` evaluates', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'clawray-eval-target-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** A submission with trainer checkpoints at `steps` and the driver state of each. */
  function submission(id: string, steps: number[]): string {
    const store = new JobStateStore(root, id, 5);
    const ckpt = new CheckpointManager({ dir: store.dir, keepLast: 5 });
    for (const s of steps) {
      ckpt.save({ step: s, weights: new Map([['w', new Float32Array([s])]]) });
      store.save(driverState(id, s / 10, s));
    }
    return store.dir;
  }

  it('takes a directory with config.json as a model dir', () => {
    const dir = join(root, 'model');
    mkdirSync(dir);
    writeFileSync(join(dir, 'config.json'), '{}');
    expect(resolveEvalTarget('model', { cwd: root })).toEqual({ kind: 'model', dir });
  });

  it("takes a submission dir as its newest complete checkpoint, with that step's driver state", () => {
    const dir = submission('sub-1', [10, 30]);
    // A save that crashed half way is not a checkpoint.
    mkdirSync(join(dir, 'step-50'));
    const target = resolveEvalTarget(dir, { cwd: '/' });
    expect(target).toMatchObject({ kind: 'checkpoint', dir: join(dir, 'step-30'), trainerStep: 30 });
    if (target.kind !== 'checkpoint') throw new Error('expected a checkpoint');
    expect(target.state?.step).toBe(3);
    // The job's own evaluation of these weights: the last one at the checkpoint's job step.
    expect(recordedEval(target)).toMatchObject({ step: 3, success: 0.75 });
  });

  it('takes a step dir as that checkpoint and finds its driver state among the older ones', () => {
    const dir = submission('sub-1', [10, 30]);
    const target = resolveEvalTarget(join(dir, 'step-10'), { cwd: '/' });
    expect(target).toMatchObject({ kind: 'checkpoint', trainerStep: 10, state: { step: 1 } });
  });

  it('looks a path up under the manifest checkpoint root, and names both places when absent', () => {
    submission('sub-2', [20]);
    expect(resolveEvalTarget('sub-2/step-20', { cwd: '/nonexistent', checkpointRoot: root })).toMatchObject({
      kind: 'checkpoint',
      trainerStep: 20,
    });
    expect(() => resolveEvalTarget('sub-9', { cwd: '/nonexistent', checkpointRoot: root })).toThrow(
      /sub-9: no such model or checkpoint \(looked at \/nonexistent\/sub-9 and, under the manifest's checkpoint root, .*sub-9\)/,
    );
  });

  it('refuses a directory with nothing to evaluate, naming it', () => {
    const empty = join(root, 'empty');
    mkdirSync(empty);
    const attempt = () => resolveEvalTarget(empty, { cwd: '/' });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(`${empty}: nothing to evaluate here`);
    expect(() => resolveEvalTarget(join(root, 'nope'), { cwd: '/' })).toThrow(
      `${join(root, 'nope')}: no such model directory or checkpoint`,
    );
  });

  it("finds the newest run of a job's name, or says there is none", () => {
    submission('older', [10]);
    const newer = submission('newer', [40]);
    expect(newestRunTarget(root, 'job-a')).toMatchObject({ dir: join(newer, 'step-40') });
    expect(() => newestRunTarget(root, 'job-b')).toThrow(/no run of job 'job-b' has a checkpoint under/);
  });
});
