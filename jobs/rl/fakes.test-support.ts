/**
 * In-process fakes for the RL loops' unit tests: judged records of whole groups, and a trainer
 * that counts versions. The buffers in those tests are the real in-memory implementation.
 */
import type { TrajectoryRecord } from '../buffer/types.js';
import type { GroupStepResult } from './trainer-group.js';

/** One group of `size` single-turn episodes with the given rewards, as judged records. */
export function judgedGroup(
  group: number,
  rewards: number[],
  o: { weightVersion?: number; prefix?: string } = {},
): TrajectoryRecord[] {
  return rewards.map((reward, i) => {
    const id = `${o.prefix ?? 'job'}-g${group}-e${i}-t0`;
    return {
      trajectoryId: id,
      sessionId: `${o.prefix ?? 'job'}-g${group}-e${i}`,
      turn: 0,
      messages: [{ role: 'user', content: `task ${group}` }],
      promptTokenIds: [1, 2, 3],
      tokenIds: [4, 5],
      logprobs: [-0.5, -0.7],
      nextState: null,
      votes: [],
      score: reward,
      hint: null,
      weightVersion: o.weightVersion ?? 0,
      createdAtMs: 0,
      extra: {
        group: `g${group}`,
        groupSize: rewards.length,
        episode: `${o.prefix ?? 'job'}-g${group}-e${i}`,
        turns: 1,
        reward,
      },
    };
  });
}

export class FakeTrainer {
  version = 0;
  readonly batches: number[] = [];

  constructor(
    private readonly failOn?: (step: number) => Error | undefined,
    /** Steps (by the version they would make) whose loss is not finite: skipped, as the real trainer does. */
    private readonly nonFiniteOn?: (step: number) => boolean,
  ) {}

  async step(samples: unknown[]): Promise<GroupStepResult> {
    const err = this.failOn?.(this.version + 1);
    if (err) throw err;
    this.batches.push(samples.length);
    const drift = { mismatch: 0, policyLag: null, policyLagVersions: null };
    if (this.nonFiniteOn?.(this.version + 1)) return { skipped: true, loss: Number.NaN, ...drift };
    this.version++;
    return { skipped: false, loss: 0.5, ...drift };
  }
}
