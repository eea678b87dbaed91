import { describe, expect, it, vi } from 'vitest';
import type { TrackTask } from '../../actors/envs/track.js';
import { ActorDiedError } from '../../common/errors.js';
import type { TrajectoryRecord } from '../buffer/types.js';
import { EpisodeSource } from './episode-source.js';
import { judgedGroup } from './fakes.test-support.js';
import { StalenessGate } from './staleness-gate.js';

const tasks = [{ id: 't0' }, { id: 't1' }] as unknown as TrackTask[];

function context(gate: StalenessGate, abort = new AbortController()) {
  const appended: TrajectoryRecord[] = [];
  const lines: string[] = [];
  return {
    appended,
    lines,
    ctx: {
      gate,
      signal: abort.signal,
      log: (l: string) => lines.push(l),
      append: async (r: TrajectoryRecord[]) => {
        appended.push(...r);
      },
    },
  };
}

describe('EpisodeSource', () => {
  it('plays every episode of each admitted group, again when its engine died, and stops with the gate', async () => {
    const gate = new StalenessGate(2, 0);
    let deaths = 0;
    const source = new EpisodeSource({
      tasks,
      samplesPerGroup: 2,
      slots: 3,
      retryDelayMs: 1,
      play: async (ticket) => {
        if (ticket.group === 1 && ticket.index === 1 && deaths++ === 0)
          throw new ActorDiedError('engine 0 died');
        return judgedGroup(ticket.group, [0, 0]).slice(ticket.index, ticket.index + 1);
      },
    });
    const { ctx, appended, lines } = context(gate);
    const run = source.run(ctx);
    // Under load the retry may take a while: wait for the four episodes, then a little more so that
    // a fifth (which the gate must hold back) would show.
    await vi.waitFor(() => expect(appended).toHaveLength(4), { timeout: 10_000 });
    await new Promise((r) => setTimeout(r, 20));
    // maxStaleness 0: only step 0's two groups start before the first publish.
    expect(appended.map((r) => r.trajectoryId).sort()).toEqual([
      'job-g0-e0-t0',
      'job-g0-e1-t0',
      'job-g1-e0-t0',
      'job-g1-e1-t0',
    ]);
    expect(lines.some((l) => l.includes('lost a peer'))).toBe(true);
    gate.close();
    await run;
  });

  it('fails the job after a few attempts when the episode itself fails', async () => {
    const gate = new StalenessGate(1, 0);
    let attempts = 0;
    const source = new EpisodeSource({
      tasks,
      samplesPerGroup: 1,
      slots: 1,
      play: async () => {
        attempts++;
        throw new SyntaxError('the rollout plugin is broken');
      },
    });
    await expect(source.run(context(gate).ctx)).rejects.toThrow('broken');
    expect(attempts).toBe(3);
  });
});
