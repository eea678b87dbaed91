import { describe, expect, it } from 'vitest';
import {
  broadcastPerSample,
  combineAdvantages,
  grpoAdvantages,
  opdAdvantages,
  padRows,
} from './advantages.js';

function close(actual: number[], expected: number[], digits = 6): void {
  expect(actual).toHaveLength(expected.length);
  for (const [i, v] of actual.entries()) expect(v).toBeCloseTo(expected[i], digits);
}

describe('grpoAdvantages', () => {
  // group 0 = [1, 0, 0, 1]: mean 0.5, deviations ±0.5
  //   unbiased var = 4·0.25 / 3 = 1/3, std = 0.5773503; 0.5 / (0.5773503 + 1e-6) = 0.8660239
  // group 1 = [1, 1, 1, 1]: constant, mean 1, std 0 → 0 / (0 + eps) = 0
  const rewards = [1, 0, 0, 1, 1, 1, 1, 1];

  it('subtracts the group mean and divides by the (Bessel) std', () => {
    const r = grpoAdvantages(rewards, 4);
    const a = 0.5 / (Math.sqrt(1 / 3) + 1e-6);
    close(r.advantages, [a, -a, -a, a, 0, 0, 0, 0]);
    expect(a).toBeCloseTo(0.8660239, 6);
    close(r.groupMeans, [0.5, 1]);
    close(r.groupStds, [Math.sqrt(1 / 3), 0]);
    expect(r.constantGroups).toEqual([1]);
    expect(r.dropped).toEqual(new Array(8).fill(false));
    expect(r.keptIndices).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('population std when unbiasedStd is false', () => {
    // population var = 4·0.25 / 4 = 0.25, std 0.5 → 0.5 / 0.500001 = 0.999998
    const r = grpoAdvantages([1, 0, 0, 1], 4, { unbiasedStd: false });
    close(r.advantages, [0.999998, -0.999998, -0.999998, 0.999998]);
  });

  it('without std normalisation (OpenClaw-RL binary RL): reward − group mean', () => {
    // binary ±1 rewards [1, −1, −1, −1]: mean −0.5 → [1.5, −0.5, −0.5, −0.5]
    const r = grpoAdvantages([1, -1, -1, -1, 1, 0, 0, 1], 4, { normalizeStd: false });
    close(r.advantages, [1.5, -0.5, -0.5, -0.5, 0.5, -0.5, -0.5, 0.5]);
  });

  it('with neither mean nor std normalisation the advantage is the reward (groups of one)', () => {
    const r = grpoAdvantages([1, -1, 0], 1, { subtractMean: false, normalizeStd: false });
    close(r.advantages, [1, -1, 0]);
    // groups of one: mean subtraction would zero every advantage
    close(grpoAdvantages([1, -1, 0], 1, { normalizeStd: false }).advantages, [0, 0, 0]);
  });

  it('drops constant-reward groups when asked', () => {
    // groups [0,0] constant, [1,-1] mean 0 (no std: ±1), [1,1] constant
    const r = grpoAdvantages([0, 0, 1, -1, 1, 1], 2, { normalizeStd: false, dropConstantGroups: true });
    close(r.advantages, [0, 0, 1, -1, 0, 0]);
    expect(r.dropped).toEqual([true, true, false, false, true, true]);
    expect(r.keptIndices).toEqual([2, 3]);
    expect(r.constantGroups).toEqual([0, 2]);
  });

  it('rejects bad layouts', () => {
    expect(() => grpoAdvantages([1, 2, 3], 2)).toThrow(RangeError);
    expect(() => grpoAdvantages([1, 2], 0)).toThrow(RangeError);
    expect(() => grpoAdvantages([1, Number.NaN], 2)).toThrow(RangeError);
  });
});

describe('opdAdvantages', () => {
  it('teacher − student per token, ragged rows and a flat row', () => {
    // [−0.5 − (−1.0), −2.0 − (−0.5)] = [0.5, −1.5]; [−0.1 − (−0.3)] = [0.2]
    const a = opdAdvantages([[-0.5, -2.0], [-0.1]], [[-1.0, -0.5], [-0.3]]);
    close(a[0], [0.5, -1.5]);
    close(a[1], [0.2]);
    close(opdAdvantages([-1, -2], [-3, -1]), [2, -1]);
    expect(() => opdAdvantages([[-1, -2]], [[-1]])).toThrow(RangeError);
  });
});

describe('combineAdvantages', () => {
  it('wOpd·(teacher − old) + wRl·reward, reward broadcast over the tokens', () => {
    // sample 0: teacher [−1, −2], old [−1.5, −1], r = 1, wOpd 0.5, wRl 2:
    //   0.5·(0.5) + 2 = 2.25; 0.5·(−1) + 2 = 1.5
    // sample 1: no teacher, r = −1: 2·(−1) = −2 on each of its 3 tokens
    const a = combineAdvantages({
      teacher: [[-1, -2], null],
      old: [
        [-1.5, -1],
        [-0.2, -0.3, -0.4],
      ],
      reward: [1, -1],
      wOpd: 0.5,
      wRl: 2,
    });
    close(a[0], [2.25, 1.5]);
    close(a[1], [-2, -2, -2]);
  });

  it('defaults to weights 1 and 1', () => {
    // (−0.5 − (−1)) + 0 = 0.5; (−3 − (−2)) + 0 = −1
    close(combineAdvantages({ teacher: [[-0.5, -3]], old: [[-1, -2]], reward: [0] })[0], [0.5, -1]);
    expect(() => combineAdvantages({ teacher: [[-1]], old: [[-1, -2]], reward: [0] })).toThrow(RangeError);
    expect(() => combineAdvantages({ teacher: [null], old: [[-1]], reward: [] })).toThrow(RangeError);
  });
});

describe('helpers', () => {
  it('broadcastPerSample and padRows', () => {
    expect(broadcastPerSample([1, -1], [2, 3])).toEqual([
      [1, 1],
      [-1, -1, -1],
    ]);
    expect(padRows([[1, 2, 3], [4]])).toEqual({
      values: [
        [1, 2, 3],
        [4, 0, 0],
      ],
      mask: [
        [1, 1, 1],
        [1, 0, 0],
      ],
    });
    expect(padRows([[1]], 2, -9).values).toEqual([[1, -9]]);
    expect(() => padRows([[1, 2]], 1)).toThrow(RangeError);
  });
});
