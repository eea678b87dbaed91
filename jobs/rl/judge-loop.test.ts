import { afterEach, describe, expect, it } from 'vitest';
import { ActorUnavailableError } from '../../common/errors.js';
import { MemoryTrajectoryBuffer } from '../buffer/memory-buffer.js';
import type { TrajectoryRecord } from '../buffer/types.js';
import { judgedGroup } from './fakes.test-support.js';
import { runJudgeLoop } from './judge-loop.js';
import { JUDGE_GROUP } from './trajectory-ledger.js';

let buffers: MemoryTrajectoryBuffer[] = [];
afterEach(async () => {
  await Promise.all(buffers.map((b) => b.close()));
  buffers = [];
});

/** A two-turn episode's rollout records. */
function episode(n: number): TrajectoryRecord[] {
  return [0, 1].map((turn) => ({
    ...judgedGroup(n, [0])[0],
    trajectoryId: `ep${n}-t${turn}`,
    turn,
    group: { id: `g${n}`, size: 1, index: 0 },
    episode: { id: `ep${n}`, turns: 2, finalMessages: null },
  }));
}

function setup() {
  const rollouts = new MemoryTrajectoryBuffer({ name: 'r' });
  const judged = new MemoryTrajectoryBuffer({ name: 'j' });
  buffers.push(rollouts, judged);
  return { rollouts, judged, abort: new AbortController() };
}

const score = async (turns: TrajectoryRecord[]) => turns.map((t) => ({ ...t, score: 1 }));

describe('runJudgeLoop', () => {
  it('judges whole episodes and acks their rollout entries only after the judged append', async () => {
    const t = setup();
    await t.rollouts.append([...episode(1), episode(2)[0]]);
    let done = false;
    const seen: string[][] = [];
    const loop = runJudgeLoop({
      ...t,
      signal: t.abort.signal,
      rolloutsDone: () => done,
      blockMs: 5,
      judge: async (turns) => {
        seen.push(turns.map((r) => r.trajectoryId));
        return score(turns);
      },
    });
    await new Promise((r) => setTimeout(r, 30));
    // Episode 2 is incomplete: not judged, its entry still pending.
    expect(seen).toEqual([['ep1-t0', 'ep1-t1']]);
    expect((await t.rollouts.pending(JUDGE_GROUP)).length).toBe(1);
    await t.rollouts.append([episode(2)[1]]);
    done = true;
    await loop;
    expect(seen).toHaveLength(2);
    expect(await t.judged.length()).toBe(4);
    expect(await t.rollouts.pending(JUDGE_GROUP)).toEqual([]);
  });

  it('retries an episode whose judge died, and fails on a judge that is broken', async () => {
    const t = setup();
    await t.rollouts.append(episode(1));
    let calls = 0;
    await runJudgeLoop({
      ...t,
      signal: t.abort.signal,
      rolloutsDone: () => true,
      retryDelayMs: 1,
      judge: async (turns) => {
        if (++calls < 3) throw new ActorUnavailableError('voter restarting');
        return score(turns);
      },
    });
    expect(calls).toBe(3);
    expect(await t.judged.length()).toBe(2);

    const u = setup();
    await u.rollouts.append(episode(2));
    await expect(
      runJudgeLoop({
        ...u,
        signal: u.abort.signal,
        rolloutsDone: () => true,
        judge: async () => {
          throw new RangeError('bad prompt');
        },
      }),
    ).rejects.toThrow('bad prompt');
    // Nothing acked: a resumed driver judges it again.
    expect((await u.rollouts.pending(JUDGE_GROUP)).length).toBe(2);
  });

  it('a restarted driver first judges what the dead one held, once', async () => {
    const t = setup();
    await t.rollouts.append([...episode(1), ...episode(2)]);
    // The dead driver had read episode 1 (and judged it into the stream) but not acked.
    await t.rollouts.read({ group: JUDGE_GROUP, consumer: 'driver', count: 2 });
    await t.judged.append(await score(episode(1)));
    await runJudgeLoop({ ...t, signal: t.abort.signal, rolloutsDone: () => true, judge: score });
    expect(await t.judged.length()).toBe(4);
    expect(await t.rollouts.pending(JUDGE_GROUP)).toEqual([]);
    expect((await t.judged.stats()).duplicates).toBe(2);
  });

  it('stops when the job is aborted', async () => {
    const t = setup();
    const loop = runJudgeLoop({
      ...t,
      signal: t.abort.signal,
      rolloutsDone: () => false,
      blockMs: 5,
      judge: score,
    });
    await new Promise((r) => setTimeout(r, 15));
    t.abort.abort();
    await loop;
  });
});
