import { describe, expect, it } from 'vitest';
import type { TrainSample } from '../../actors/trainer/policy-trainer.js';
import { FakeTrainerGroup, testContext, testSpec } from './fakes.test-support.js';
import { runWarmStart, type WarmStartPorts, warmupLr } from './warm-start.js';

const traces: TrainSample[] = Array.from({ length: 6 }, (_, i) => ({
  tokenIds: [i, i + 1],
  responseStart: 1,
}));

/** Ports over a fake trainer group; `events` says in order what the warm start asked for. */
function ports(trainer: FakeTrainerGroup, events: string[]): WarmStartPorts {
  return {
    trainer,
    traces: async (o) => {
      events.push(`traces ${o.what} seed ${o.seed}`);
      return traces;
    },
    oracleTasks: 3,
    publish: async (force) => {
      events.push(`publish ${trainer.version}${force ? ' forced' : ''}`);
      return true;
    },
    checkpoint: async () => {
      events.push(`checkpoint ${trainer.version}`);
    },
    checkpointIfDue: async () => {
      events.push('checkpoint if due');
    },
    evaluate: async (afterWarmup) => {
      events.push(`evaluate${afterWarmup ? ' after warm start' : ''}`);
    },
  };
}

describe('runWarmStart', () => {
  const warmup =
    '  train: { seed: 7, warmup: { steps: 3, lr: 1.0e-2, schedule: cosine, minLr: 1.0e-3, batchSize: 2 } }\n';

  it('takes warmup.steps SFT steps at warmupLr, then resets, publishes, checkpoints and evaluates once', async () => {
    const spec = testSpec(warmup);
    const { ctx, lines } = testContext(spec);
    const trainer = new FakeTrainerGroup();
    const events: string[] = [];
    await runWarmStart(ctx, ports(trainer, events));
    expect(trainer.batches).toEqual([2, 2, 2]);
    expect(trainer.lrs).toEqual([0, 1, 2].map((s) => warmupLr(spec, s)));
    expect(trainer.lrs[0]).toBeCloseTo(1e-2, 12);
    expect(trainer.calls).toEqual(['reset']);
    expect(events).toEqual([
      'traces spec.train.warmup seed 8',
      'publish 3 forced',
      'checkpoint 3',
      'evaluate after warm start',
    ]);
    expect(ctx.run).toMatchObject({ warmupDone: 3, step: 0, phase: 'warmup' });
    expect(ctx.run.history).toEqual([]);
    expect(lines).toEqual([
      'oracle traces: 6 samples from 3 tasks',
      'warmup step 1/3: sft loss 0.5000',
      'warmup step 2/3: sft loss 0.5000',
      'warmup step 3/3: sft loss 0.5000',
    ]);
  });

  it('continues a resumed warm start where it was, and does nothing once it is done or stopped', async () => {
    const spec = testSpec(warmup);
    const resumed = testContext(spec);
    resumed.ctx.run.warmupDone = 2;
    const trainer = new FakeTrainerGroup();
    await runWarmStart(resumed.ctx, ports(trainer, []));
    expect(trainer.batches).toEqual([2]);
    expect(resumed.lines.at(-1)).toBe('warmup step 3/3: sft loss 0.5000');

    const done = testContext(spec);
    done.ctx.run.warmupDone = 3;
    const stopped = testContext(spec);
    stopped.ctx.run.stopRequested = true;
    const none = testContext(testSpec(''));
    for (const t of [done, stopped, none]) {
      const events: string[] = [];
      await runWarmStart(t.ctx, ports(new FakeTrainerGroup(), events));
      expect(events).toEqual([]);
      expect(t.ctx.run.phase).toBe('starting');
    }
  });

  it('keeps the optimizer with resetOptimizer false, and counts a step whose loss was not finite', async () => {
    const spec = testSpec('  train: { warmup: { steps: 2, resetOptimizer: false } }\n');
    const { ctx, lines } = testContext(spec);
    let calls = 0;
    const trainer = new FakeTrainerGroup(undefined, () => ++calls === 1);
    await runWarmStart(ctx, ports(trainer, []));
    expect(trainer.calls).toEqual([]);
    expect(ctx.run.skippedSteps).toBe(1);
    expect(lines.slice(1)).toEqual([
      'warmup step 1 skipped: its loss (NaN) or gradients were not finite, so no weight changed and nothing was published (1 skipped step(s) so far)',
      'warmup step 1/2: sft loss NaN',
      'warmup step 2/2: sft loss 0.5000',
    ]);
  });

  it('is the whole job for method sft: its steps are job steps, evaluated and checkpointed when due', async () => {
    const spec = testSpec('  train: { steps: 4 }\n  eval: { everySteps: 2 }\n', { method: 'sft' });
    const { ctx, lines } = testContext(spec);
    const trainer = new FakeTrainerGroup();
    const events: string[] = [];
    await runWarmStart(ctx, ports(trainer, events));
    expect(trainer.lrs).toEqual([undefined, undefined, undefined, undefined]);
    expect(ctx.run).toMatchObject({ step: 4, warmupDone: 0, phase: 'training', samplesTrained: 24 });
    expect(ctx.run.history.map((h) => [h.step, h.loss, h.samples])).toEqual([
      [1, 0.5, 6],
      [2, 0.5, 6],
      [3, 0.5, 6],
      [4, 0.5, 6],
    ]);
    expect(events).toEqual([
      'traces spec.method sft seed 1',
      'checkpoint if due',
      'publish 2 forced',
      'evaluate',
      'checkpoint if due',
      'checkpoint if due',
      'publish 4 forced',
      'evaluate',
      'checkpoint if due',
    ]);
    expect(lines.at(-1)).toBe('step 4/4: sft loss 0.5000');
    expect(await ctx.metrics.steps.get()).toMatchObject({ values: [{ value: 4 }] });
  });
});
