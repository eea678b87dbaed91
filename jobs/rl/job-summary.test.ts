import { describe, expect, it } from 'vitest';
import type { JobCurves } from './curves.js';
import { testContext, testSpec } from './fakes.test-support.js';
import type { StepRecord } from './job-state.js';
import { jobSummary, type SummaryParts } from './job-summary.js';

const step = (n: number, rewardMean: number): StepRecord => ({
  step: n,
  rewardMean,
  successRate: rewardMean,
  staleness: 0,
  episodes: 8,
  samples: 8,
  loss: 0.1,
  seconds: 1,
});

const curves: JobCurves = { heldout: [], reward: [], svg: null };
const parts: SummaryParts = {
  checkpointDir: '/ckpt/m-1',
  checkpoint: { path: '/ckpt/m-1/step-13', step: 3, trainerStep: 13 },
  recoveries: { engines: 1, trainers: 0 },
  runtime: { rollout: ['onnxruntime/cpu'], trainer: ['tfjs/cpu on CPU'] },
  curves: () => curves,
};

describe('jobSummary', () => {
  it("sums up a run from its history, evaluations, drift and rates, in the summary line's order", () => {
    const { ctx, clock } = testContext(testSpec('  train: { steps: 3, warmup: { steps: 10 } }\n'));
    const { run } = ctx;
    run.history.push(step(1, 0.2), step(2, 0.4), step(3, 0.6));
    run.evals.push(
      { step: 0, success: 0.1, rewardMean: 0, episodes: 4, seconds: 1 },
      { step: 0, success: 0.3, rewardMean: 0, episodes: 4, seconds: 1, afterWarmup: true },
      { step: 3, success: 0.5, rewardMean: 0, episodes: 4, seconds: 1 },
    );
    run.step = 3;
    run.warmupDone = 10;
    run.samplesTrained = 24;
    run.trainerWaitMs = 3000;
    run.drift.mismatch.push(1e-4, 3e-4);
    run.drift.policyLag.push(0.2);
    run.drift.versions.push(1);
    run.resumedFrom = 1;
    run.rlStartedAt = 1000;
    clock.ms = 13_000;
    const s = jobSummary(ctx, 'completed', null, parts);
    expect(Object.keys(s)).toEqual([
      'submissionId',
      'job',
      'track',
      'method',
      'status',
      'steps',
      'warmupSteps',
      'skippedSteps',
      'metric',
      'heldout',
      'samplesPerSecond',
      'trainerIdleRatio',
      'rolloutIdleRatio',
      'elapsedSeconds',
      'resumedFromStep',
      'checkpointDir',
      'checkpoint',
      'trajectories',
      'recoveries',
      'runtime',
      'mismatch',
      'policyLag',
      'policyLagVersions',
      'curves',
      'evals',
      'history',
    ]);
    expect(s).toMatchObject({
      submissionId: 'm-1',
      job: 'm',
      track: 'toolcall',
      method: 'rl',
      status: 'completed',
      steps: 3,
      warmupSteps: 10,
      metric: 'heldout_success',
      heldout: { start: 0.1, afterWarmup: 0.3, end: 0.5 },
      samplesPerSecond: 2,
      trainerIdleRatio: 0.25,
      rolloutIdleRatio: 0,
      elapsedSeconds: 13,
      resumedFromStep: 1,
      checkpoint: parts.checkpoint,
      recoveries: { engines: 1, trainers: 0 },
      policyLag: 0.2,
      policyLagVersions: 1,
      curves,
    });
    expect(s.mismatch).toBeCloseTo(2e-4, 12);
    expect(s.history).toHaveLength(3);
  });

  it('names the teacher of opd and combine; a run with no step has null means and no rates', () => {
    const { ctx } = testContext(testSpec('  judge: { teacher: frozen }\n', { method: 'opd' }));
    ctx.run.teacherTurns = 7;
    const s = jobSummary(ctx, 'failed', null, { ...parts, checkpoint: null });
    expect(s).toMatchObject({
      status: 'failed',
      steps: 0,
      teacher: { kind: 'frozen', turns: 7 },
      mismatch: null,
      policyLag: null,
      policyLagVersions: null,
      samplesPerSecond: 0,
      heldout: { start: null, afterWarmup: null, end: null },
      checkpoint: null,
    });
    const sft = testContext(testSpec('  train: { steps: 2 }\n', { method: 'sft' })).ctx;
    sft.run.warmupDone = 4;
    expect(jobSummary(sft, 'completed', null, parts).warmupSteps).toBe(0);
  });
});
