import { describe, expect, it } from 'vitest';
import { parseManifest } from '../manifest/load.js';
import { checkpointNaming } from './checkpoints.js';
import { evalProgress } from './job-evaluator.js';
import type { EvalRecord } from './job-state.js';
import { heldoutSummary } from './job-summary.js';
import { warmupLr } from './warm-start.js';

const at = (step: number, success: number, afterWarmup?: boolean): EvalRecord => ({
  step,
  success,
  rewardMean: 2 * success - 1,
  episodes: 10,
  seconds: 1,
  ...(afterWarmup ? { afterWarmup } : {}),
});

describe('heldoutSummary', () => {
  it('start before any training, afterWarmup where RL started, end last', () => {
    expect(heldoutSummary([at(0, 0), at(0, 0.2, true), at(10, 0.5), at(20, 0.9)])).toEqual({
      start: 0,
      afterWarmup: 0.2,
      end: 0.9,
    });
  });
  it('no warm start: afterWarmup is null; no evaluation: all null', () => {
    expect(heldoutSummary([at(0, 0.1), at(20, 0.4)])).toEqual({ start: 0.1, afterWarmup: null, end: 0.4 });
    expect(heldoutSummary([])).toEqual({ start: null, afterWarmup: null, end: null });
  });
});

describe('warmupLr', () => {
  const spec = (warmup: string) =>
    parseManifest(
      `apiVersion: clawray.dev/v1\nkind: RLJob\nmetadata: { name: m }\nspec:\n  track: toolcall\n  method: rl\n  model: { path: ./m }\n  train: { lr: 5.0e-4, warmup: ${warmup} }\n`,
      'j',
    ).spec;

  it('is warmup.lr throughout by default, and train.lr without one', () => {
    expect(warmupLr(spec('{ steps: 10, lr: 1.0e-2 }'), 0)).toBe(1e-2);
    expect(warmupLr(spec('{ steps: 10, lr: 1.0e-2 }'), 9)).toBe(1e-2);
    expect(warmupLr(spec('{ steps: 10 }'), 3)).toBe(5e-4);
  });

  it('decays from warmup.lr to warmup.minLr over the warm start with a cosine schedule', () => {
    const s = spec('{ steps: 400, lr: 1.0e-2, schedule: cosine, minLr: 1.0e-3 }');
    expect(warmupLr(s, 0)).toBeCloseTo(1e-2, 12);
    expect(warmupLr(s, 200)).toBeCloseTo(5.5e-3, 12);
    expect(warmupLr(s, 400)).toBeCloseTo(1e-3, 12);
  });
});

describe('checkpointNaming', () => {
  it('says why step-N differs from the job step: optimizer steps, warm start included', () => {
    expect(checkpointNaming(60, 500, 560)).toBe('optimizer step 560: 500 warm-start + 60 RL');
    // RL steps that trained nothing leave the optimizer where it was.
    expect(checkpointNaming(4, 120, 120)).toBe('optimizer step 120: 120 warm-start + 0 RL');
    expect(checkpointNaming(5, 0, 3)).toBe('optimizer step 3');
  });
  it('says nothing where the names agree: no warm start, or the warm start itself', () => {
    expect(checkpointNaming(20, 0, 20)).toBe('');
    expect(checkpointNaming(0, 500, 500)).toBe('');
  });
});

describe('evalProgress', () => {
  it('logs the start, then at most one line every 2 s, never the last (the result line follows)', () => {
    let ms = 0;
    const lines: string[] = [];
    const p = evalProgress(
      5,
      'held-out tasks',
      (l) => lines.push(l),
      () => ms,
    );
    p.advance();
    ms = 2500;
    p.advance();
    p.advance();
    ms = 6000;
    p.advance();
    p.advance();
    expect(lines).toEqual(['0/5 held-out tasks', '2/5 held-out tasks', '4/5 held-out tasks']);
    const none: string[] = [];
    evalProgress(0, 'held-out tasks', (l) => none.push(l)).advance();
    expect(none).toEqual([]);
  });
});
