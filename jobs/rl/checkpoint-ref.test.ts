import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CheckpointManager } from '../../actors/trainer/checkpoint.js';
import { ConfigError } from '../../common/errors.js';
import { checkpointBase, findSubmission } from './checkpoint-ref.js';
import { resolveEvalTarget } from './eval-target.js';
import { type CheckpointBase, type DriverState, JobStateStore } from './job-state.js';
import { emptyLedgerState } from './trajectory-ledger.js';

describe('a checkpoint by path or submission id, with the base model its job recorded', () => {
  let home: string;
  let base: string;
  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'clawray-checkpoint-ref-'));
    base = join(home, 'models', 'templated-1');
    mkdirSync(base, { recursive: true });
    writeFileSync(join(base, 'config.json'), '{}');
  });
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  /** A job's submission under the default root: trainer checkpoints at `steps`, each with its driver state. */
  function submission(job: string, id: string, steps: number[], model?: CheckpointBase): string {
    const store = new JobStateStore(join(home, 'checkpoints', job), id, 5);
    const ckpt = new CheckpointManager({ dir: store.dir, keepLast: 5 });
    for (const s of steps) {
      ckpt.save({ step: s, weights: new Map([['w', new Float32Array([s])]]) });
      const state: DriverState = {
        format: 'clawray-driver-state',
        submissionId: id,
        jobName: job,
        step: s - 500,
        warmupDone: 500,
        trainerStep: s,
        evals: [],
        history: [],
        ledger: emptyLedgerState(),
        ...(model ? { model } : {}),
        savedAtMs: Date.now(),
      };
      store.save(state);
    }
    return store.dir;
  }

  it('finds SUB and SUB/step-N under $CLAWRAY_HOME/checkpoints/<job>/ and nothing else', () => {
    const dir = submission('toolcall-grpo', 'job-1', [540, 560], { dir: base });
    expect(findSubmission('job-1', home)).toBe(dir);
    expect(findSubmission('job-1/step-540', home)).toBe(join(dir, 'step-540'));
    expect(findSubmission('job-2', home)).toBeUndefined();
    expect(findSubmission('../job-1', home)).toBeUndefined();
    expect(findSubmission('/abs', home)).toBeUndefined();
    // What `clawray serve --model job-1` resolves: the newest checkpoint, named by its job step.
    const target = resolveEvalTarget('job-1', { cwd: '/nonexistent', home, verb: 'serve' });
    expect(target).toMatchObject({ kind: 'checkpoint', trainerStep: 560, state: { step: 60 } });
    expect(() => resolveEvalTarget('job-9', { cwd: '/nonexistent', home })).toThrow(
      /no such model directory or checkpoint \(nor a submission id under .*\/checkpoints\/<job>\/\)/,
    );
  });

  it('takes the base model and LoRA settings the job recorded, or the one given instead', () => {
    const lora = { rank: 4, alpha: 8, dropout: 0, targetModules: ['q_proj'] };
    submission('toolcall-grpo', 'job-1', [540, 560], { dir: base, name: 'agent', lora });
    const target = resolveEvalTarget('job-1/step-540', { cwd: '/', home });
    if (target.kind !== 'checkpoint') throw new Error('expected a checkpoint');
    expect(checkpointBase(target, { flag: '--base' })).toEqual({
      dir: base,
      name: 'agent',
      lora,
      job: 'toolcall-grpo',
    });
    const other = join(home, 'other');
    mkdirSync(other);
    expect(() => checkpointBase(target, { flag: '--base', override: other })).toThrow(
      `--base ${other}: no model there (no config.json)`,
    );
    writeFileSync(join(other, 'config.json'), '{}');
    expect(checkpointBase(target, { flag: '--base', override: other })).toMatchObject({ dir: other, lora });
  });

  it('refuses, naming the flag, a checkpoint whose base is unknown or gone', () => {
    submission('old-job', 'job-old', [10]);
    const old = resolveEvalTarget('job-old', { cwd: '/', home });
    if (old.kind !== 'checkpoint') throw new Error('expected a checkpoint');
    expect(() => checkpointBase(old, { flag: '--base' })).toThrow(ConfigError);
    expect(() => checkpointBase(old, { flag: '--base' })).toThrow(
      /did not record its base model.*pass --base BASE_MODEL_DIR/,
    );
    submission('toolcall-grpo', 'job-3', [560], { dir: join(home, 'gone') });
    const gone = resolveEvalTarget('job-3', { cwd: '/', home });
    if (gone.kind !== 'checkpoint') throw new Error('expected a checkpoint');
    expect(() => checkpointBase(gone, { flag: '--base' })).toThrow(
      /its base model .*gone, recorded by its job, is gone/,
    );
  });
});
