import { describe, expect, it } from 'vitest';
import { splitGpus } from './local-cluster.js';

describe('GPU ids of the workers of a local cluster', () => {
  it('gives each worker its own ids when the count per worker is given', () => {
    expect(splitGpus(2, 1, [])).toEqual([[0], [1]]);
    expect(splitGpus(3, 2, [0, 1, 2, 3, 4, 5, 6, 7])).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
    ]);
    expect(splitGpus(2, 0, [0, 1])).toEqual([[], []]);
  });

  it("splits the machine's GPUs evenly by default, none without any", () => {
    expect(splitGpus(2, undefined, [0, 1, 2, 3, 4, 5, 6, 7])).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
    ]);
    expect(splitGpus(3, undefined, [7, 6, 5, 4, 3, 2, 1, 0])).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
    ]);
    expect(splitGpus(2, undefined, [])).toEqual([[], []]);
  });
});
