import { describe, expect, it } from 'vitest';
import { heldoutSummary } from './driver.js';
import type { EvalRecord } from './job-state.js';

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
