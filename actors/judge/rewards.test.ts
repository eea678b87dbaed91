import { describe, expect, it } from 'vitest';
import { applyRule, boxedAnswerVerifier, testsPassedReward } from './rule-verifiers.js';
import { combineStepRewards } from './step-rewards.js';

describe('boxedAnswerVerifier', () => {
  const v = boxedAnswerVerifier(' 42 ');
  it('matches the last boxed answer exactly after trimming', () => {
    expect(v('The answer is \\boxed{42}.')).toBe(1);
    expect(v('\\boxed{ 42 }')).toBe(1);
    expect(v('\\boxed{42} wait, no: \\boxed{41}')).toBe(-1);
    expect(v('\\boxed{41} wait, no: \\boxed{42}')).toBe(1);
    expect(v('42')).toBe(-1);
    expect(v('\\boxed{42.0}')).toBe(-1);
  });
  it('supports nested braces in the expected answer', () => {
    expect(boxedAnswerVerifier('\\frac{1}{2}')('so \\boxed{\\frac{1}{2}}')).toBe(1);
  });
});

describe('testsPassedReward', () => {
  it('maps the pass rate to [-1, 1]', () => {
    expect(testsPassedReward(0, 4)).toBe(-1);
    expect(testsPassedReward(4, 4)).toBe(1);
    expect(testsPassedReward(1, 4)).toBe(-0.5);
    expect(testsPassedReward(2, 4)).toBe(0);
  });
  it('rejects invalid counts', () => {
    expect(() => testsPassedReward(0, 0)).toThrow(RangeError);
    expect(() => testsPassedReward(5, 4)).toThrow(RangeError);
    expect(() => testsPassedReward(-1, 4)).toThrow(RangeError);
  });
});

describe('combineStepRewards', () => {
  it('final = outcome + coef * mean(step scores), with per-step spans', () => {
    const r = combineStepRewards(
      1,
      [
        { score: 1, span: [0, 10] },
        { score: -1, span: [10, 25] },
        { score: 1, span: [25, 30] },
      ],
      0.3,
    );
    expect(r.stepMean).toBeCloseTo(1 / 3);
    expect(r.final).toBeCloseTo(1.1);
    expect(r.stepScoresWithOutcome.map((x) => Number(x.toFixed(6)))).toEqual([1.3, 0.7, 1.3]);
    expect(r.stepIndices).toEqual([0, 1, 2]);
    expect(r.stepTokenSpans).toEqual([
      [0, 10],
      [10, 25],
      [25, 30],
    ]);
  });
  it('no steps: final = outcome', () => {
    expect(combineStepRewards(-1, [], 0.5)).toMatchObject({ final: -1, stepMean: 0, stepTokenSpans: [] });
  });
  it('rejects bad inputs', () => {
    expect(() => combineStepRewards(1, [{ score: Number.NaN, span: [0, 1] }], 1)).toThrow(RangeError);
    expect(() => combineStepRewards(1, [{ score: 1, span: [5, 2] }], 1)).toThrow(RangeError);
    expect(() => combineStepRewards(Number.POSITIVE_INFINITY, [], 1)).toThrow(RangeError);
  });
});

describe('applyRule', () => {
  it('gives the vote (sign) and the continuous reward of each track outcome', () => {
    expect(applyRule('boxed-answer', 'so \\boxed{42}', { answer: '42' })).toEqual({ score: 1, reward: 1 });
    expect(applyRule('tests-passed', '', { testsPassed: 1, testsTotal: 4 })).toEqual({
      score: -1,
      reward: -0.5,
    });
    expect(applyRule('env-reward', '', { reward: 0.25 })).toEqual({ score: 1, reward: 0.25 });
    expect(applyRule('env-reward', '', { reward: 0 })).toEqual({ score: 0, reward: 0 });
  });
  it('names the reference field it lacks', () => {
    expect(() => applyRule('boxed-answer', '\\boxed{1}')).toThrow('boxed-answer needs reference.answer');
    expect(() => applyRule('tests-passed', '', { testsPassed: 1 })).toThrow(/reference\.testsTotal/);
    expect(() => applyRule('env-reward', '', { reward: Number.NaN })).toThrow(/finite reference\.reward/);
  });
});
