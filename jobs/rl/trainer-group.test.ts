import { describe, expect, it } from 'vitest';
import { PolicyTrainer, type TrainSample } from '../../actors/trainer/policy-trainer.js';
import { ActorError, ActorUnavailableError } from '../../common/errors.js';
import {
  TrainerGroup,
  type TrainerShardRef,
  TrainerStateLostError,
  TrainerStepFailedError,
} from './trainer-group.js';

/**
 * A shard with an optimizer step and weights (a number), a shared checkpoint dir (a map), and
 * a ring that breaks when any member is down.
 */
class World {
  readonly checkpoints = new Map<number, number>();
  readonly shards: FakeShard[] = [];
  rings = 0;
}

class FakeShard {
  alive = true;
  step = 0;
  weights = 0;
  /** Die during the next trainStep, after (true) or before (false) the update. */
  dieInStep?: 'before' | 'after';
  /** Every trainStep kills it (a batch the shard cannot survive). */
  poisoned = false;

  constructor(private readonly world: World) {
    world.shards.push(this);
  }

  async call(method: string, ...args: unknown[]): Promise<unknown> {
    if (!this.alive) throw new ActorUnavailableError('restarting');
    switch (method) {
      case 'ready':
        return { step: this.step };
      case 'trainStep': {
        if (this.dieInStep === 'before' || this.poisoned) return this.crash();
        if (this.world.shards.some((s) => !s.alive))
          throw new ActorError('collective failed', { remoteName: 'CollectiveError', remoteStack: '' });
        this.step++;
        const batch = args[0] as TrainSample[];
        this.weights += batch.length;
        if (this.dieInStep === 'after') return this.crash();
        // Each shard's mismatch is its first sample's last token id / 1000, over its tokens; a
        // shard whose first sample names a weight version reports it stale by two versions,
        // its policy lag ten times its mismatch.
        const tokens = PolicyTrainer.countTokens(batch);
        const x = batch[0].tokenIds.at(-1)! / 1000;
        const stale = typeof batch[0].weightVersion === 'number';
        return {
          step: this.step,
          loss: 1,
          tokens,
          mismatch: x,
          mismatchTokens: tokens,
          policyLag: stale ? 10 * x : null,
          policyLagTokens: stale ? tokens : 0,
          policyLagVersions: stale ? 2 : null,
          ...(batch[0].temperature === 0.5 ? { tisWeight: batch[0].tokenIds.at(-1)! } : {}),
        };
      }
      case 'saveCheckpoint':
        this.world.checkpoints.set(this.step, this.weights);
        return `step-${this.step}`;
      case 'resume': {
        const step = (args[0] as number | undefined) ?? Math.max(...this.world.checkpoints.keys());
        const w = this.world.checkpoints.get(step);
        if (w === undefined) throw new Error(`no checkpoint ${step}`);
        this.step = step;
        this.weights = w;
        return step;
      }
      default:
        throw new Error(method);
    }
  }

  private crash(): never {
    this.dieInStep = undefined;
    this.alive = false;
    // The runtime restarts it shortly, with its initial weights.
    setTimeout(() => {
      this.alive = true;
      this.step = 0;
      this.weights = 0;
    }, 10);
    throw new ActorUnavailableError('the shard died');
  }
}

const sample = (n: number): TrainSample => ({ tokenIds: [1, 2, n], responseStart: 1 });

function group(world: World, n: number, lastCheckpoint: () => number | null = () => null) {
  for (let i = 0; i < n; i++) new FakeShard(world);
  return new TrainerGroup(world.shards as unknown as TrainerShardRef[], {
    rebuildRing: async () => {
      world.rings++;
    },
    lastCheckpointStep: lastCheckpoint,
    probeIntervalMs: 5,
  });
}

describe('TrainerGroup', () => {
  it('redoes a step whose shard died before updating, from a survivor at the last good step', async () => {
    const world = new World();
    const g = group(world, 2);
    await g.step([sample(1), sample(2)], { method: 'rl' });
    world.shards[1].dieInStep = 'before';
    await g.step([sample(1), sample(2)], { method: 'rl' });
    expect(g.version).toBe(2);
    expect(world.shards.map((s) => s.step)).toEqual([2, 2]);
    expect(world.shards[0].weights).toBe(world.shards[1].weights);
    expect(g.recoveries).toBe(1);
    expect(world.rings).toBe(1);
  });

  it('does not redo a step that finished on the survivors', async () => {
    const world = new World();
    const g = group(world, 2);
    world.shards[1].dieInStep = 'after';
    await g.step([sample(1), sample(2)], { method: 'rl' });
    expect(g.version).toBe(1);
    expect(world.shards.map((s) => s.step)).toEqual([1, 1]);
    expect(world.shards[0].weights).toBe(world.shards[1].weights);
  });

  it('falls back to the last checkpoint when no rank survived, and refuses to guess past it', async () => {
    const world = new World();
    let ckpt: number | null = null;
    const g = group(world, 1, () => ckpt);
    await g.step([sample(1)], { method: 'rl' });
    await g.saveCheckpoint(1);
    ckpt = 1;
    world.shards[0].dieInStep = 'before';
    await g.step([sample(1)], { method: 'rl' });
    expect(g.version).toBe(2);
    world.shards[0].dieInStep = 'before';
    // Version 2 is in no checkpoint: the driver must resume from step 1 and replay.
    await expect(g.step([sample(1)], { method: 'rl' })).rejects.toBeInstanceOf(TrainerStateLostError);
  });

  it('gives up on a step that kills its shard after every recovery', async () => {
    const world = new World();
    const g = group(world, 1, () => 1);
    await g.step([sample(1)], { method: 'rl' });
    await g.saveCheckpoint(1);
    world.shards[0].poisoned = true;
    const err = await g.step([sample(1)], { method: 'rl' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TrainerStepFailedError);
    expect((err as TrainerStepFailedError).fields).toMatchObject({ step: 2, attempts: 4 });
    // Three recoveries were tried, each back at the last good step.
    expect(g.recoveries).toBe(3);
    expect(g.version).toBe(1);
  });

  it("reports the batch's mismatch, policy lag and TIS weight as token-weighted means over the ranks that trained", async () => {
    const world = new World();
    const g = group(world, 3);
    // Two samples on three ranks: the third joins the all-reduce with a filler and is left out.
    const long: TrainSample = { tokenIds: [1, 2, 3, 4, 2], responseStart: 1, temperature: 0.5 };
    const short: TrainSample = { tokenIds: [1, 2, 4], responseStart: 1, temperature: 0.5 };
    const r = await g.step([long, short], { method: 'rl' });
    expect(r.loss).toBe(3);
    // (4 tokens · 0.002 + 2 tokens · 0.004) / 6 tokens; weights (4 · 2 + 2 · 4) / 6.
    expect(r.mismatch).toBeCloseTo(0.016 / 6, 12);
    expect(r.policyLag).toBeNull();
    expect(r.policyLagVersions).toBeNull();
    expect(r.tisWeight).toBeCloseTo(16 / 6, 12);
    const plain = await g.step([sample(5)], { method: 'rl' });
    expect(plain.mismatch).toBeCloseTo(0.005, 12);
    expect(plain.tisWeight).toBeUndefined();
    // Only the long sample is stale: the lag covers its 4 tokens, the mismatch all 6.
    const mixed = await g.step([{ ...long, weightVersion: 0 }, short], { method: 'rl' });
    expect(mixed.mismatch).toBeCloseTo(0.016 / 6, 12);
    expect(mixed.policyLag).toBeCloseTo(0.02, 12);
    expect(mixed.policyLagVersions).toBe(2);
  });

  it('passes on a failure that is not a lost peer', async () => {
    const world = new World();
    const g = group(world, 1);
    world.shards[0].call = async () => {
      throw new TypeError('NaN in the loss');
    };
    await expect(g.step([sample(1)], { method: 'rl' })).rejects.toThrow('NaN in the loss');
  });
});
