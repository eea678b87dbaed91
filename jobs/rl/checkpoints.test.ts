import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { PublishedWeights } from '../../actors/trainer/weight-publisher.js';
import { MemoryTrajectoryBuffer } from '../buffer/memory-buffer.js';
import { JobCheckpoints } from './checkpoints.js';
import { FakeTrainerGroup, testContext, testSpec } from './fakes.test-support.js';
import { JobStateStore } from './job-state.js';
import { TrajectoryLedger } from './trajectory-ledger.js';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

const spec = testSpec('  train: { steps: 4, warmup: { steps: 3 } }\n  checkpoint: { everySteps: 2 }\n');

function setup(root = mkdtempSync(join(tmpdir(), 'clawray-ckpt-'))) {
  cleanup.push(() => rmSync(root, { recursive: true, force: true }));
  const rollouts = new MemoryTrajectoryBuffer({ name: 'rollouts' });
  const judged = new MemoryTrajectoryBuffer({ name: 'judged' });
  cleanup.push(
    () => rollouts.close(),
    () => judged.close(),
  );
  const t = testContext(spec);
  const checkpoints = new JobCheckpoints(t.ctx, new JobStateStore(root, 'm-1', 3));
  const published: number[] = [];
  const engines = {
    publish: async (version: number, _weights: PublishedWeights) => {
      published.push(version);
    },
  };
  return {
    ...t,
    root,
    checkpoints,
    trainer: new FakeTrainerGroup(),
    ledger: new TrajectoryLedger(rollouts, judged),
    engines,
    published,
  };
}

describe('JobCheckpoints', () => {
  it('names each checkpoint by job step or warm-start step, and says when only the driver state is new', async () => {
    const t = setup();
    const { run } = t.ctx;
    t.trainer.version = 3;
    run.warmupDone = 3;
    await t.checkpoints.save(t.trainer, t.ledger);
    t.trainer.version = 5;
    run.step = 2;
    run.history.push({
      step: 2,
      rewardMean: 1,
      successRate: 1,
      staleness: 0,
      episodes: 4,
      samples: 4,
      loss: 0.5,
      seconds: 1,
    });
    await t.checkpoints.saveIfDue(t.trainer, t.ledger);
    await t.checkpoints.save(t.trainer, t.ledger);
    run.step = 3;
    await t.checkpoints.saveIfDue(t.trainer, t.ledger);
    expect(t.trainer.calls).toEqual(['save 3', 'save 5']);
    expect(t.lines.filter((l) => !l.startsWith('warning'))).toEqual([
      'checkpoint after the warm start: /ckpt/step-3',
      'checkpoint at step 2: /ckpt/step-5 (optimizer step 5: 3 warm-start + 2 RL)',
      'driver state saved again at the end of step 2 (the weights in /ckpt/step-5 are unchanged)',
    ]);
    expect(t.checkpoints.latest()).toEqual({ path: '/ckpt/step-5', step: 2, trainerStep: 5 });
    expect(existsSync(join(t.root, 'm-1', 'driver-state.json'))).toBe(true);
    expect(existsSync(join(t.root, 'm-1', 'learning-curves.svg'))).toBe(true);
  });

  it('a restarted driver continues its submission from the newest checkpoint', async () => {
    const first = setup();
    first.trainer.version = 5;
    first.ctx.run.step = 2;
    first.ctx.run.warmupDone = 3;
    first.ctx.run.skippedSteps = 1;
    first.ctx.run.evals.push({ step: 2, success: 0.5, rewardMean: 0, episodes: 4, seconds: 1 });
    await first.checkpoints.save(first.trainer, first.ledger);

    const again = setup(first.root);
    expect(await again.checkpoints.restore(again.trainer, again.engines, again.ledger, undefined)).toBe(2);
    expect(again.trainer.calls).toEqual(['resume 5']);
    expect(again.published).toEqual([5]);
    expect(again.ctx.run).toMatchObject({ step: 2, warmupDone: 3, skippedSteps: 1 });
    expect(again.ctx.run.evals).toEqual(first.ctx.run.evals);
    expect(again.checkpoints.latest()).toEqual({
      path: join(first.root, 'm-1', 'step-5'),
      step: 2,
      trainerStep: 5,
    });
    expect(again.lines).toEqual([
      'continuing submission m-1 from its checkpoint at step 2',
      `resumed from ${join(first.root, 'm-1')} at step 2 (trainer checkpoint step-5)`,
    ]);
  });

  it('starts afresh with nothing to continue or resume', async () => {
    const t = setup();
    expect(await t.checkpoints.restore(t.trainer, t.engines, t.ledger, undefined)).toBeNull();
    expect(await t.checkpoints.restore(t.trainer, t.engines, t.ledger, '')).toBeNull();
    expect(t.lines).toEqual([`no earlier run of m in ${t.root}; starting from scratch`]);
    expect(t.trainer.calls).toEqual([]);
    expect(t.checkpoints.latest()).toBeNull();
  });
});
