import { describe, expect, it } from 'vitest';
import type { RLJobSummary } from './rljob-submit.js';
import { shellWord } from './rljob-submit.js';
import { humanSummary, type SummaryContext } from './rljob-summary.js';

const CKPT = '/h/checkpoints/toolcall-grpo/job-1/step-560';
const SVG = '/h/checkpoints/toolcall-grpo/job-1/learning-curves.svg';

const summary = (over: Partial<RLJobSummary> = {}): RLJobSummary => ({
  submissionId: 'job-1',
  job: 'toolcall-grpo',
  track: 'toolcall',
  method: 'rl',
  status: 'completed',
  steps: 60,
  warmupSteps: 500,
  skippedSteps: 0,
  metric: 'heldout_success',
  heldout: { start: 0, afterWarmup: 0.045, end: 0.806 },
  samplesPerSecond: 3.514,
  trainerIdleRatio: 0.1,
  rolloutIdleRatio: 0.2,
  elapsedSeconds: 129.4,
  resumedFromStep: null,
  checkpointDir: '/h/checkpoints/toolcall-grpo/job-1',
  checkpoint: { path: CKPT, step: 60, trainerStep: 560 },
  trajectories: {
    produced: 2048,
    judged: 2040,
    trained: 1920,
    dropped: { stale: 6, no_signal: 90, truncated: 0, non_finite: 0, total: 96 },
    lost: 0,
    duplicated: 0,
  },
  recoveries: { engines: 0, trainers: 0 },
  runtime: { rollout: ['onnxruntime/cpu'], trainer: ['tfjs/wasm'] },
  mismatch: 1.2e-7,
  policyLag: 0.031,
  policyLagVersions: 0.5,
  curves: {
    heldout: [
      { step: 0, value: 0, phase: 'start' },
      { step: 0, value: 0.045, phase: 'warmup' },
      { step: 60, value: 0.806, phase: 'rl' },
    ],
    reward: [{ step: 1, mean: -0.5 }],
    svg: SVG,
  },
  ...over,
});

const context = (over: Partial<SummaryContext> = {}): SummaryContext => ({
  manifest: 'examples/toolcall/rl.yaml',
  set: [],
  logFile: '/h/logs/rljobs/job-1.log',
  cli: 'npx clawray',
  exists: () => true,
  quote: shellWord,
  ...over,
});

describe('job submit MANIFEST: the summary a person reads at the end', () => {
  it('says what the job reached, how fast, where its checkpoint and log are, and what to run next', () => {
    expect(humanSummary('SUCCEEDED', summary(), 'job-1', context())).toEqual([
      'toolcall-grpo (job-1) completed: 60 RL steps after a 500-step warm start in 2m09s',
      '  held-out success  0.000 at the start → 0.045 after the warm start → 0.806 at the end (RL +0.761)',
      '  rollouts          3.51 samples/s; trajectories 2048 produced, 1920 trained, 96 dropped (stale 6, no_signal 90), 0 lost',
      '  logprobs          mismatch 1.2e-7; policy lag 3.1e-2 over 0.50 versions',
      `  checkpoint        ${CKPT} (step 60; optimizer step 560: 500 warm-start + 60 RL)`,
      `  curves            ${SVG}`,
      '  job log           /h/logs/rljobs/job-1.log',
      `  serve it          npx clawray serve --model ${CKPT}`,
      `  evaluate it       npx clawray eval ${CKPT} --manifest examples/toolcall/rl.yaml`,
    ]);
  });

  it('names skipped steps, keeps the --set overrides evaluation depends on, and says where a remote checkpoint is', () => {
    const lines = humanSummary(
      'SUCCEEDED',
      summary({ skippedSteps: 2, warmupSteps: 0, heldout: { start: 0.1, afterWarmup: null, end: 0.4 } }),
      'job-1',
      context({
        cli: 'clawray',
        manifest: 'my jobs/rl.yaml',
        set: ['spec.train.steps=4', 'spec.env.tasks=./few tasks.jsonl', 'spec.eval.split=train'],
        exists: () => false,
      }),
    );
    expect(lines[0]).toBe('toolcall-grpo (job-1) completed: 60 RL steps in 2m09s');
    expect(lines[1]).toBe('  held-out success  0.100 at the start → 0.400 at the end (+0.300)');
    expect(lines).toContain(
      '  skipped steps     2 (loss or gradients not finite: the weights stayed as they were)',
    );
    // A synchronous job has no policy lag; a mismatch above the goal says what it means.
    const sync = humanSummary('SUCCEEDED', summary({ mismatch: 0.02, policyLag: null }), 'job-1', context());
    expect(sync).toContain(
      '  logprobs          mismatch 2.0e-2 (above the 1e-3 goal: trainer and engines compute apart)',
    );
    expect(lines).toContain(
      `  checkpoint        ${CKPT} (step 60; optimizer step 560) (on the cluster node that ran the driver)`,
    );
    expect(lines).toContain(`  curves            ${SVG} (on the cluster node that ran the driver)`);
    expect(lines.at(-1)).toBe(
      `  evaluate it       clawray eval ${CKPT} --manifest 'my jobs/rl.yaml' --set 'spec.env.tasks=./few tasks.jsonl' --set spec.eval.split=train`,
    );
  });

  it('a stopped or failed job: what it did until then, its last checkpoint and how to resume', () => {
    const failed = humanSummary(
      'FAILED',
      summary({
        status: 'failed',
        steps: 12,
        error: 'trainer shard lost',
        heldout: { start: 0, afterWarmup: 0.045, end: 0.045 },
      }),
      'job-1',
      context(),
    );
    expect(failed[0]).toBe('toolcall-grpo (job-1) failed at step 12: trainer shard lost');
    expect(failed.at(-1)).toBe(
      '  resume it         npx clawray job submit examples/toolcall/rl.yaml --resume-from job-1',
    );
    // Nothing drawn (no evaluation, no step): no curves row.
    const undrawn = humanSummary(
      'FAILED',
      summary({ curves: { heldout: [], reward: [], svg: null } }),
      'job-1',
      context(),
    );
    expect(undrawn.some((l) => l.startsWith('  curves'))).toBe(false);
    const none = humanSummary('FAILED', null, 'job-2', context({ logFile: '/h/logs/rljobs/job-2.log' }));
    expect(none).toEqual([
      'job-2 FAILED: the driver wrote no summary (see its log)',
      '  job log           /h/logs/rljobs/job-2.log',
    ]);
  });

  it('an SFT job counts SFT steps and has no rollouts', () => {
    const lines = humanSummary(
      'SUCCEEDED',
      summary({
        method: 'sft',
        mismatch: null,
        policyLag: null,
        policyLagVersions: null,
        steps: 80,
        warmupSteps: 0,
        heldout: { start: 0, afterWarmup: null, end: 1 },
        checkpoint: { path: '/h/c/s/step-80', step: 80, trainerStep: 80 },
      }),
      's',
      context(),
    );
    expect(lines.slice(0, 4)).toEqual([
      'toolcall-grpo (s) completed: 80 SFT steps in 2m09s',
      '  held-out success  0.000 at the start → 1.000 at the end (+1.000)',
      '  training          3.51 samples/s',
      '  checkpoint        /h/c/s/step-80 (step 80)',
    ]);
  });
});
