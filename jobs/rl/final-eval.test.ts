import { describe, expect, it } from 'vitest';
import type { EvalResult } from './evaluation.js';
import { testContext, testSpec } from './fakes.test-support.js';
import { runFinalEval } from './final-eval.js';
import { jobEvaluator } from './job-evaluator.js';

const result: EvalResult = {
  success: 0.75,
  rewardMean: 0.5,
  episodes: 4,
  seconds: 1.25,
  sample: 'assistant: hi',
};

/** A job context whose evaluator plays `taskCount` fake tasks and returns `result`. */
function setup(spec = testSpec('  eval: { everySteps: 5 }\n')) {
  const t = testContext(spec);
  const checkpoints: number[] = [];
  let played = 0;
  const evaluate = jobEvaluator(t.ctx, {
    taskCount: 4,
    heldOut: async (advance) => {
      played++;
      expect(t.ctx.run.phase).toBe('evaluating');
      for (let i = 0; i < 4; i++) advance();
      return result;
    },
  });
  const ports = {
    evaluate: () => evaluate(),
    checkpoint: async () => {
      checkpoints.push(t.ctx.run.step);
    },
  };
  return { ...t, checkpoints, ports, evaluate, played: () => played };
}

describe('runFinalEval', () => {
  it('evaluates the last step, records the result, then writes the final checkpoint', async () => {
    const t = setup();
    t.ctx.run.step = 7;
    t.ctx.run.phase = 'training';
    await runFinalEval(t.ctx, t.ports);
    expect(t.ctx.run.evals).toEqual([{ step: 7, ...result }]);
    expect(t.checkpoints).toEqual([7]);
    expect(t.ctx.run.phase).toBe('done');
    expect(t.lines).toEqual([
      'eval step 7: 0/4 held-out tasks',
      'eval step 7: held-out success 0.750 (4 tasks, mean reward 0.500, 1.3 s)',
      'eval sample: assistant: hi',
    ]);
    expect(await t.ctx.metrics.success.get()).toMatchObject({
      values: [{ labels: { job: 'm', split: 'heldout' }, value: 0.75 }],
    });
  });

  it('does not evaluate a step already evaluated, nor after a stop; checkpoints either way', async () => {
    const evaluated = setup();
    evaluated.ctx.run.step = 5;
    await evaluated.evaluate();
    await runFinalEval(evaluated.ctx, evaluated.ports);
    expect(evaluated.played()).toBe(1);
    expect(evaluated.checkpoints).toEqual([5]);

    const stopped = setup();
    stopped.ctx.run.step = 3;
    stopped.ctx.run.stopRequested = true;
    await runFinalEval(stopped.ctx, stopped.ports);
    expect(stopped.played()).toBe(0);
    expect(stopped.ctx.run.evals).toEqual([]);
    expect(stopped.checkpoints).toEqual([3]);
  });

  it('records nothing without evaluations (eval.everySteps 0)', async () => {
    const t = setup(testSpec('  eval: { everySteps: 0 }\n'));
    await runFinalEval(t.ctx, t.ports);
    expect(t.played()).toBe(0);
    expect(t.ctx.run.evals).toEqual([]);
    expect(t.checkpoints).toEqual([0]);
  });
});

describe('jobEvaluator', () => {
  it('marks the evaluation that ends the warm start and restores the phase it interrupted', async () => {
    const t = setup();
    t.ctx.run.phase = 'warmup';
    await t.evaluate(true);
    expect(t.ctx.run.evals).toEqual([{ step: 0, ...result, afterWarmup: true }]);
    expect(t.ctx.run.phase).toBe('warmup');
    expect(t.lines[1]).toBe(
      'eval after the warm start: held-out success 0.750 (4 tasks, mean reward 0.500, 1.3 s)',
    );
  });
});
