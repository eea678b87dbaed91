import { describe, expect, it } from 'vitest';
import { CalculatorError, calculate, evaluateExpression, MAX_DEPTH } from './calculator.js';

describe('calculator', () => {
  it.each([
    ['1 + 2 * 3', '7'],
    ['(1 + 2) * 3', '9'],
    ['2 ^ 3 ^ 2', '512'],
    ['2 ** 10', '1024'],
    ['-2 ^ 2', '-4'],
    ['(-2) ^ 2', '4'],
    ['2 ^ -1', '0.5'],
    ['--3', '3'],
    ['-(-(4))', '4'],
    ['+5 - -5', '10'],
    ['3 × 4 ÷ 6 − 1', '1'],
    ['0.1 + 0.2', '0.3'],
    ['.5 * 4', '2'],
    ['3. + 1', '4'],
    ['1e3 / 8', '125'],
    ['10 / 4', '2.5'],
    ['8 / 2 / 2', '2'],
    ['10 - 3 - 2', '5'],
    ['1 / 3', '0.333333333333'],
    ['  ( ( 7 ) )  ', '7'],
    ['-0', '0'],
    ['9007199254740991 + 0', '9007199254740991'],
    ['4 ^ 0.5', '2'],
  ])('%s = %s', (expr, want) => {
    expect(calculate(expr)).toBe(want);
  });

  it.each([
    [''],
    ['   '],
    ['1 +'],
    ['(1 + 2'],
    ['1 + 2)'],
    ['()'],
    ['2 3'],
    ['1 / 0'],
    ['1 / (2 - 2)'],
    ['0 ^ -1'],
    ['(-8) ^ (1/3)'],
    ['10 ^ 400'],
    ['abs(3)'],
    ['Math.PI'],
    ['process.exit()'],
    ['1; 2'],
    ['5 % 2'],
    ['1,000 + 1'],
    ['2 * * 3'],
    ['1..2'],
    ['x + 1'],
    ['"1" + 1'],
  ])('rejects %j', (expr) => {
    expect(() => evaluateExpression(expr)).toThrow(CalculatorError);
  });

  it('rejects over-deep nesting and over-long input without blowing the stack', () => {
    const deep = `${'('.repeat(MAX_DEPTH + 1)}1${')'.repeat(MAX_DEPTH + 1)}`;
    expect(() => evaluateExpression(deep)).toThrow(/nested/);
    expect(() => evaluateExpression('-'.repeat(500) + '1')).toThrow(/nested/);
    expect(() => evaluateExpression('1+'.repeat(600) + '1')).toThrow(/longer/);
    expect(calculate(`${'('.repeat(50)}1${')'.repeat(50)}`)).toBe('1');
  });
});
