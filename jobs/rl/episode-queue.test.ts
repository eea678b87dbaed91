import { describe, expect, it } from 'vitest';
import { EpisodeQueue } from './episode-queue.js';
import { StalenessGate } from './staleness-gate.js';

/** Resolves what has settled by the next macrotask; pending promises stay pending. */
const settled = <T>(p: Promise<T>) =>
  Promise.race([p.then((v) => ({ v })), new Promise<'pending'>((r) => setTimeout(() => r('pending'), 20))]);

describe('EpisodeQueue over a StalenessGate', () => {
  it('starts every episode of the admitted groups at once, one slot each', async () => {
    // Synchronous RL: 2 groups per step, 4 samples per group; version 0 admits step 0 only.
    const queue = new EpisodeQueue(new StalenessGate(2, 0), 4);
    const slots = Array.from({ length: 9 }, () => queue.take());
    const first8 = await Promise.all(slots.slice(0, 8));
    expect(first8).toEqual([0, 1].flatMap((group) => [0, 1, 2, 3].map((index) => ({ group, index }))));
    expect(await settled(slots[8])).toBe('pending');
  });

  it('admits the next step once the policy version moves, and frees waiting slots on close', async () => {
    const gate = new StalenessGate(1, 1);
    const queue = new EpisodeQueue(gate, 2);
    // maxStaleness 1: version 0 admits the groups of steps 0 and 1.
    const admitted = await Promise.all(Array.from({ length: 4 }, () => queue.take()));
    expect(admitted.map((t) => t?.group)).toEqual([0, 0, 1, 1]);
    const waiting = [queue.take(), queue.take(), queue.take()];
    expect(await settled(waiting[0])).toBe('pending');
    gate.advance(1);
    expect(await Promise.all(waiting.slice(0, 2))).toEqual([
      { group: 2, index: 0 },
      { group: 2, index: 1 },
    ]);
    expect(await settled(waiting[2])).toBe('pending');
    gate.close();
    expect(await waiting[2]).toBeUndefined();
    expect(await queue.take()).toBeUndefined();
  });
});
