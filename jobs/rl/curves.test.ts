import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CURVES_FILE, curvesFrom, writeCurves } from './curves.js';
import type { EvalRecord, StepRecord } from './job-state.js';

const evalAt = (step: number, success: number, afterWarmup?: boolean): EvalRecord => ({
  step,
  success,
  rewardMean: 0,
  episodes: 10,
  seconds: 1,
  ...(afterWarmup ? { afterWarmup } : {}),
});

const stepAt = (step: number, rewardMean: number, skipped = false): StepRecord => ({
  step,
  rewardMean,
  successRate: 0,
  staleness: 0,
  episodes: 4,
  samples: 8,
  ...(skipped ? { loss: null, skipped: true as const } : { loss: 0.1 }),
  seconds: 1,
});

describe('curvesFrom', () => {
  it('names the start, the warm start and the RL evaluations, and takes each RL step’s mean reward', () => {
    const curves = curvesFrom(
      [evalAt(0, 0), evalAt(0, 0.05, true), evalAt(20, 0.4), evalAt(60, 0.8)],
      [stepAt(1, -0.5), stepAt(2, Number.NaN), stepAt(3, 0.2, true), stepAt(4, 0.5)],
      'rl',
    );
    expect(curves.heldout).toEqual([
      { step: 0, value: 0, phase: 'start' },
      { step: 0, value: 0.05, phase: 'warmup' },
      { step: 20, value: 0.4, phase: 'rl' },
      { step: 60, value: 0.8, phase: 'rl' },
    ]);
    // A non-finite mean and a step the trainer skipped are left out.
    expect(curves.reward).toEqual([
      { step: 1, mean: -0.5 },
      { step: 4, mean: 0.5 },
    ]);
  });

  it('a resumed job’s records continue its curves; sft and opd jobs have no reward curve', () => {
    // After --resume from step 20: the earlier evaluations come first, as the state kept them.
    const resumed = curvesFrom([evalAt(0, 0.1), evalAt(20, 0.3), evalAt(40, 0.6)], [stepAt(21, 0)], 'opd');
    expect(resumed.heldout.map((p) => p.phase)).toEqual(['start', 'rl', 'rl']);
    expect(curvesFrom([evalAt(0, 0), evalAt(10, 1)], [stepAt(1, 0)], 'sft').reward).toEqual([]);
    // OPD judges no scalar reward (every turn's is 0): a flat line would say nothing.
    expect(curvesFrom([evalAt(0, 0)], [stepAt(1, 0)], 'opd').reward).toEqual([]);
    expect(curvesFrom([evalAt(0, 0)], [stepAt(1, 0)], 'combine').reward).toHaveLength(1);
  });
});

describe('writeCurves', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('writes the SVG into the submission’s directory and returns its path; nothing to draw: null', () => {
    dir = mkdtempSync(join(tmpdir(), 'clawray-curves-'));
    const sub = join(dir, 'job-1');
    const labels = { title: 'tc (job-1)', heldout: 'held-out success' };
    expect(writeCurves(sub, { heldout: [], reward: [] }, labels)).toBeNull();
    const file = writeCurves(sub, { heldout: [{ step: 0, value: 0.5, phase: 'start' }], reward: [] }, labels);
    expect(file).toBe(join(sub, CURVES_FILE));
    expect(readFileSync(file!, 'utf8')).toMatch(/^<svg [^>]*>[\s\S]*tc \(job-1\)[\s\S]*<\/svg>\n$/);
  });

  it('throws when the directory cannot be written (the driver logs it and goes on)', () => {
    dir = mkdtempSync(join(tmpdir(), 'clawray-curves-'));
    const blocker = join(dir, 'a-file');
    writeFileSync(blocker, '');
    expect(() =>
      writeCurves(
        join(blocker, 'job-1'),
        { heldout: [{ step: 0, value: 0, phase: 'start' }], reward: [] },
        { title: 't', heldout: 'h' },
      ),
    ).toThrow();
  });
});
