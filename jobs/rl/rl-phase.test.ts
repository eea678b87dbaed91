import { afterEach, describe, expect, it } from 'vitest';
import { MemoryTrajectoryBuffer } from '../buffer/memory-buffer.js';
import type { TrajectoryRecord } from '../buffer/types.js';
import { FakeTrainer, judgedGroup, testContext, testSpec } from './fakes.test-support.js';
import { type RlPhasePorts, runRlPhase } from './rl-phase.js';
import type { RolloutSource } from './rollout-source.js';
import { TRAIN_GROUP, TrajectoryLedger } from './trajectory-ledger.js';

let buffers: MemoryTrajectoryBuffer[] = [];
afterEach(async () => {
  await Promise.all(buffers.map((b) => b.close()));
  buffers = [];
});

/** A source that plays each group the gate admits as two one-turn episodes rewarded 1 and −1. */
function groupSource(o: { failAt?: number } = {}): RolloutSource {
  return {
    slots: 1,
    async run(c) {
      for (let g = await c.gate.acquire(); g !== undefined && !c.signal.aborted; g = await c.gate.acquire()) {
        if (g === o.failAt) throw new Error('the env died');
        await c.append(judgedGroup(g, [1, -1], { weightVersion: c.gate.version }));
      }
    },
  };
}

function setup(
  spec = testSpec(
    '  rollout: { batchSize: 2, samplesPerPrompt: 2 }\n  train: { steps: 3 }\n  eval: { everySteps: 2 }\n  checkpoint: { everySteps: 1 }\n',
  ),
  source = groupSource(),
) {
  const rollouts = new MemoryTrajectoryBuffer({ name: 'rollouts' });
  const judged = new MemoryTrajectoryBuffer({ name: 'judged' });
  buffers.push(rollouts, judged);
  const t = testContext(spec);
  const trainer = new FakeTrainer();
  const ledger = new TrajectoryLedger(rollouts, judged);
  const events: string[] = [];
  const judgedTurns: string[] = [];
  const ports: RlPhasePorts = {
    buffers: { rollouts, judged },
    trainer,
    ledger,
    publish: async (force) => {
      events.push(`publish ${trainer.version}${force ? ' forced' : ''}`);
      return true;
    },
    wire: async () => {
      events.push('wire');
      return {
        source,
        judge: () => async (turns: TrajectoryRecord[]) => {
          judgedTurns.push(...turns.map((r) => r.trajectoryId));
          return turns;
        },
      };
    },
    evaluate: async () => {
      events.push(`evaluate ${t.ctx.run.step}`);
    },
    checkpointIfDue: async () => {
      events.push(`checkpoint ${t.ctx.run.step}`);
    },
    blockMs: 2,
  };
  return { ...t, rollouts, judged, trainer, ledger, events, judgedTurns, ports };
}

describe('runRlPhase', () => {
  it('trains train.steps steps from judged groups, publishing and checkpointing after each', async () => {
    const t = setup();
    await runRlPhase(t.ctx, t.ports);
    expect(t.trainer.batches).toEqual([4, 4, 4]);
    expect(t.events).toEqual([
      'wire',
      'publish 1',
      'checkpoint 1',
      'publish 2',
      'evaluate 2',
      'checkpoint 2',
      'publish 3 forced',
      'checkpoint 3',
    ]);
    expect(t.ctx.run).toMatchObject({ step: 3, phase: 'training', samplesTrained: 12, rolloutSlots: 1 });
    expect(t.ctx.run.history.map((h) => [h.step, h.rewardMean, h.loss, h.episodes])).toEqual([
      [1, 0, 0.5, 4],
      [2, 0, 0.5, 4],
      [3, 0, 0.5, 4],
    ]);
    expect(t.ctx.run.drift.mismatch).toEqual([0, 0, 0]);
    const steps = t.lines.filter((l) => l.startsWith('step '));
    expect(steps).toHaveLength(3);
    expect(steps[0]).toMatch(
      /^step 1\/3: reward 0\.000, success 0\.500, 4 samples of 4 episodes, staleness 0\.\d\d, loss 0\.5000, mismatch 0\.00e\+0, \d+\.\d\d samples\/s$/,
    );
    // Every group the train loop took was judged; the phase stops the source and the judge.
    expect(t.judgedTurns.length).toBeGreaterThanOrEqual(12);
    expect(t.ctx.run.failed.signal.reason).toMatchObject({ message: 'training finished' });
    expect((await t.judged.pending(TRAIN_GROUP)).length).toBeGreaterThanOrEqual(12);
  });

  it('ends at once for method sft, with no step left, or when stopped before it began', async () => {
    const sft = setup(testSpec('  train: { steps: 2 }\n', { method: 'sft' }));
    const done = setup();
    done.ctx.run.step = 3;
    const stopped = setup();
    stopped.ctx.run.stopRequested = true;
    for (const t of [sft, done, stopped]) {
      await runRlPhase(t.ctx, t.ports);
      expect(t.events).toEqual([]);
      expect(t.ctx.run.gate).toBeUndefined();
    }
  });

  it('a stop finishes the step in progress and ends', async () => {
    const t = setup();
    const checkpointIfDue = t.ports.checkpointIfDue;
    t.ports.checkpointIfDue = async () => {
      await checkpointIfDue();
      t.ctx.run.stopRequested = true;
    };
    await runRlPhase(t.ctx, t.ports);
    expect(t.ctx.run.step).toBe(1);
    expect(t.trainer.batches).toEqual([4]);
  });

  it('a failing source fails the phase: logged once, the loops stopped, the error rethrown', async () => {
    const t = setup(undefined, groupSource({ failAt: 2 }));
    await expect(runRlPhase(t.ctx, t.ports)).rejects.toThrow('the env died');
    expect(t.lines.filter((l) => l.startsWith('failed: '))).toEqual(['failed: the env died']);
    expect(t.ctx.run.step).toBeLessThan(3);
  });
});
