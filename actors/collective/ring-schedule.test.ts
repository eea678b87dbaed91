import { describe, expect, it } from 'vitest';
import { allReduceSchedule, broadcastSchedule, type RingSchedule, sendOrder } from './ring-schedule.js';

const frames = (s: RingSchedule['receives']) =>
  s.map(({ step, sub, start, end, kind, forward }) => [step, sub, start, end, kind, forward]);

/** What crosses the link from rank r to rank r+1: (step, sub, elements) of each frame, in order. */
const wire = (xs: Array<{ step: number; sub: number; start: number; end: number }>) =>
  xs.map(({ step, sub, start, end }) => `${step}/${sub}:${start}-${end}`);

describe('ring schedule', () => {
  it('all-reduce over 3 ranks, an uneven buffer of 10 in sub-chunks of 2: the exact sequence', () => {
    // Chunks [0,3) [3,6) [6,10). Rank 0 sends chunk 0, then sums chunks 2 and 1 (1 is its own:
    // the last addition), then gathers chunks 0 and 2.
    const s = allReduceSchedule(0, 3, 10, 2);
    expect(wire(s.initial)).toEqual(['0/0:0-2', '0/1:2-3']);
    expect(frames(s.receives)).toEqual([
      [0, 0, 6, 8, 'reduce', 1],
      [0, 1, 8, 10, 'reduce', 1],
      [1, 0, 3, 5, 'reduce-last', 2],
      [1, 1, 5, 6, 'reduce-last', 2],
      [2, 0, 0, 2, 'copy', 3],
      [2, 1, 2, 3, 'copy', 3],
      [3, 0, 6, 8, 'copy', -1],
      [3, 1, 8, 10, 'copy', -1],
    ]);
    expect(s.sends).toBe(8);
    expect(wire(sendOrder(s))).toEqual([
      '0/0:0-2',
      '0/1:2-3',
      '1/0:6-8',
      '1/1:8-10',
      '2/0:3-5',
      '2/1:5-6',
      '3/0:0-2',
      '3/1:2-3',
    ]);
    // Rank 1 owns chunk 2, rank 2 chunk 0.
    expect(allReduceSchedule(1, 3, 10, 2).receives.filter((r) => r.kind === 'reduce-last')[0]!.start).toBe(6);
    expect(allReduceSchedule(2, 3, 10, 2).receives.filter((r) => r.kind === 'reduce-last')[0]!.start).toBe(0);
  });

  it('every rank expects exactly what the previous rank sends, and ends with every element', () => {
    for (const n of [2, 3, 4, 5]) {
      for (const length of [0, 1, n - 1, 10, 37, 1000]) {
        for (const sub of [1, 3, 64]) {
          const schedules = Array.from({ length: n }, (_, r) => allReduceSchedule(r, n, length, sub));
          for (let r = 0; r < n; r++) {
            const s = schedules[r]!;
            expect(wire(sendOrder(schedules[(r + n - 1) % n]!))).toEqual(wire(s.receives));
            expect(s.sends).toBe(sendOrder(s).length);
            // The chunk it finishes summing plus the chunks it gathers cover the buffer once.
            const covered = new Array<number>(length).fill(0);
            for (const f of s.receives)
              if (f.kind !== 'reduce') for (let i = f.start; i < f.end; i++) covered[i]!++;
            expect(covered.every((c) => c === 1)).toBe(true);
            expect([...s.initial, ...s.receives].every((f) => f.end - f.start <= sub)).toBe(true);
          }
        }
      }
    }
  });

  it('broadcast: the root sends, every other rank receives in place and passes on but the last', () => {
    const at = (rank: number) => broadcastSchedule(rank, 3, 5, 2, 1);
    expect(wire(at(1).initial)).toEqual(['0/0:0-2', '0/1:2-4', '0/2:4-5']);
    expect(at(1).receives).toEqual([]);
    expect(frames(at(2).receives)).toEqual([
      [0, 0, 0, 2, 'copy', 0],
      [0, 1, 2, 4, 'copy', 0],
      [0, 2, 4, 5, 'copy', 0],
    ]);
    expect(at(2).sends).toBe(3);
    expect(at(0).receives.every((r) => r.forward === -1)).toBe(true);
    expect(at(0).sends).toBe(0);
    expect(wire(sendOrder(at(1)))).toEqual(wire(at(2).receives));
    expect(wire(sendOrder(at(2)))).toEqual(wire(at(0).receives));
    // An empty buffer still moves one (empty) frame, so every rank knows it is done.
    expect(wire(broadcastSchedule(0, 2, 0, 4, 0).initial)).toEqual(['0/0:0-0']);
    expect(wire(broadcastSchedule(1, 2, 0, 4, 0).receives)).toEqual(['0/0:0-0']);
  });
});
