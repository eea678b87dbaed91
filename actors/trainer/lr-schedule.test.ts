import { describe, expect, it } from 'vitest';
import { lrAt } from './lr-schedule.js';

describe('lrAt', () => {
  const base = { baseLr: 1e-3, warmupSteps: 10, totalSteps: 110, minLr: 1e-4 };

  it('warms up linearly from 0', () => {
    for (const schedule of ['constant', 'cosine', 'linear'] as const) {
      expect(lrAt(0, { ...base, schedule })).toBe(0);
      expect(lrAt(5, { ...base, schedule })).toBeCloseTo(5e-4, 12);
      expect(lrAt(10, { ...base, schedule })).toBeCloseTo(1e-3, 12);
    }
  });

  it('constant stays at baseLr', () => {
    expect(lrAt(10_000, { ...base, schedule: 'constant' })).toBe(1e-3);
    expect(lrAt(3, { baseLr: 0.5 })).toBe(0.5);
  });

  it('cosine reaches the midpoint halfway and minLr at the end', () => {
    const o = { ...base, schedule: 'cosine' as const };
    expect(lrAt(60, o)).toBeCloseTo((1e-3 + 1e-4) / 2, 12); // progress 0.5: cos = 0
    expect(lrAt(35, o)).toBeCloseTo(1e-4 + 9e-4 * 0.5 * (1 + Math.SQRT1_2), 12); // progress 0.25
    expect(lrAt(110, o)).toBe(1e-4);
    expect(lrAt(500, o)).toBe(1e-4);
  });

  it('linear decays to minLr', () => {
    const o = { ...base, schedule: 'linear' as const };
    expect(lrAt(60, o)).toBeCloseTo(5.5e-4, 12);
    expect(lrAt(85, o)).toBeCloseTo(1e-4 + 9e-4 * 0.25, 12);
    expect(lrAt(110, o)).toBe(1e-4);
    expect(lrAt(0, { baseLr: 1, totalSteps: 4, schedule: 'linear' })).toBe(1);
    expect(lrAt(2, { baseLr: 1, totalSteps: 4, schedule: 'linear' })).toBe(0.5);
  });

  it('rejects bad options, naming them', () => {
    expect(() => lrAt(0, { baseLr: 1, schedule: 'cosine' })).toThrow(/needs totalSteps/);
    expect(() => lrAt(0, { baseLr: 1, warmupSteps: 5, totalSteps: 4, schedule: 'linear' })).toThrow(
      /warmupSteps/,
    );
    expect(() => lrAt(0, { baseLr: 1, minLr: 2 })).toThrow(/minLr/);
    expect(() => lrAt(-1, { baseLr: 1 })).toThrow(/step/);
    // @ts-expect-error: an unknown schedule
    expect(() => lrAt(0, { baseLr: 1, schedule: 'step' })).toThrow(/schedule must be one of/);
  });
});
