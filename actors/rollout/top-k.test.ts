import { describe, expect, it } from 'vitest';
import { appendTopK, everything, largest } from './top-k.js';

describe('appendTopK', () => {
  const top = (row: number[], k: number) => {
    const ids: number[] = [];
    const values: number[] = [];
    appendTopK(row, k, ids, values);
    return { ids, values };
  };

  it('keeps the k largest, descending, equal values in index order (as a stable sort)', () => {
    const row = [0.1, 0.5, -2, 0.5, 3, 0.5, -1];
    expect(top(row, 3)).toEqual({ ids: [4, 1, 3], values: [3, 0.5, 0.5] });
    expect(top(row, 1)).toEqual({ ids: [4], values: [3] });
    const sorted = [...row.keys()].sort((a, b) => row[b] - row[a]);
    expect(top(row, 7).ids).toEqual(sorted);
  });

  it('gives the whole row when k exceeds it, nothing for k 0, and appends to what is there', () => {
    expect(top([2, 1], 5)).toEqual({ ids: [0, 1], values: [2, 1] });
    expect(top([2, 1], 0)).toEqual({ ids: [], values: [] });
    const ids = [9];
    const values = [9];
    appendTopK([1, 2], 1, ids, values);
    expect(ids).toEqual([9, 1]);
    expect(values).toEqual([9, 2]);
  });

  it('agrees with a full sort on a long random row', () => {
    let seed = 7;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const row = Array.from({ length: 5_000 }, () => Math.round(rand() * 1_000) / 10);
    const sorted = [...row.keys()].sort((a, b) => row[b] - row[a] || a - b).slice(0, 50);
    expect(top(row, 50).ids).toEqual(sorted);
  });
});

describe('largest', () => {
  const plain = ({ ids, values }: { ids: Int32Array; values: Float64Array }) => ({
    ids: [...ids],
    values: [...values],
  });

  it('gathers every entry at or above the k-th largest value, ties included, in index order', () => {
    const row = [0.1, 0.5, -2, 0.5, 3, 0.5, Number.NEGATIVE_INFINITY];
    expect(plain(largest(row, 1))).toEqual({ ids: [4], values: [3] });
    expect(plain(largest(row, 2))).toEqual({ ids: [1, 3, 4, 5], values: [0.5, 0.5, 3, 0.5] });
    expect(plain(largest(row, 5))).toEqual({ ids: [0, 1, 3, 4, 5], values: [0.1, 0.5, 0.5, 3, 0.5] });
    expect(plain(largest(row, 7))).toEqual(plain(everything(row)));
  });

  it('agrees with a full sort on long random rows', () => {
    let seed = 3;
    const rand = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let trial = 0; trial < 20; trial++) {
      const row = Array.from({ length: 3_000 }, () => Math.round(rand() * 300) / 10);
      const sorted = [...row].sort((a, b) => b - a);
      for (const k of [1, 7, 64, 1_000, 3_000]) {
        const cutoff = sorted[k - 1];
        const want = [...row.keys()].filter((i) => row[i] >= cutoff);
        expect([...largest(row, k).ids]).toEqual(want);
      }
    }
  });
});
