/**
 * A safe arithmetic evaluator for the `calculator` tool: a tokenizer and a recursive-descent
 * parser, no eval/Function. Grammar (lowest precedence first):
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/') unary)*
 *   unary   := ('+' | '-') unary | power
 *   power   := primary (('^' | '**') unary)?        right-associative; -2^2 = -4, 2^-1 = 0.5
 *   primary := number | '(' expr ')'
 *
 * Accepts × · ÷ − as * * / -, decimals like `3.`, `.5`, `1e3`, and whitespace. Anything else
 * (names, commas, `%`, unbalanced parentheses, division by zero, non-finite results, inputs over
 * MAX_EXPRESSION_LENGTH or nested deeper than MAX_DEPTH) is a CalculatorError.
 */

import { ClawrayError, registerErrorClass } from '../../../common/errors.js';

export const MAX_EXPRESSION_LENGTH = 1000;
export const MAX_DEPTH = 100;

export class CalculatorError extends ClawrayError {}
registerErrorClass(CalculatorError);

type Token = { kind: 'num'; value: number; pos: number } | { kind: 'op'; value: string; pos: number };

const OP_ALIASES: Record<string, string> = {
  '+': '+',
  '-': '-',
  '\u2212': '-',
  '*': '*',
  '\u00d7': '*',
  '\u00b7': '*',
  '/': '/',
  '\u00f7': '/',
  '^': '^',
  '(': '(',
  ')': ')',
};

function tokenize(src: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i];
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch === '*' && src[i + 1] === '*') {
      tokens.push({ kind: 'op', value: '^', pos: i });
      i += 2;
      continue;
    }
    const op = OP_ALIASES[ch];
    if (op) {
      tokens.push({ kind: 'op', value: op, pos: i });
      i++;
      continue;
    }
    const m = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i));
    if (m) {
      tokens.push({ kind: 'num', value: Number(m[0]), pos: i });
      i += m[0].length;
      continue;
    }
    throw new CalculatorError(`unexpected character '${ch}' at position ${i}`);
  }
  return tokens;
}

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  parse(): number {
    if (this.tokens.length === 0) throw new CalculatorError('empty expression');
    const value = this.expr();
    const rest = this.tokens[this.i];
    if (rest) throw new CalculatorError(`unexpected '${this.show(rest)}' at position ${rest.pos}`);
    return value;
  }

  private show(t: Token): string {
    return t.kind === 'num' ? String(t.value) : t.value;
  }

  private peekOp(...ops: string[]): string | undefined {
    const t = this.tokens[this.i];
    return t?.kind === 'op' && ops.includes(t.value) ? t.value : undefined;
  }

  private enter(): void {
    if (++this.depth > MAX_DEPTH) throw new CalculatorError(`expression nested deeper than ${MAX_DEPTH}`);
  }

  private expr(): number {
    let value = this.term();
    for (let op = this.peekOp('+', '-'); op; op = this.peekOp('+', '-')) {
      this.i++;
      const rhs = this.term();
      value = op === '+' ? value + rhs : value - rhs;
    }
    return value;
  }

  private term(): number {
    let value = this.unary();
    for (let op = this.peekOp('*', '/'); op; op = this.peekOp('*', '/')) {
      this.i++;
      const rhs = this.unary();
      if (op === '/') {
        if (rhs === 0) throw new CalculatorError('division by zero');
        value /= rhs;
      } else {
        value *= rhs;
      }
    }
    return value;
  }

  private unary(): number {
    const op = this.peekOp('+', '-');
    if (op) {
      this.i++;
      this.enter();
      const v = this.unary();
      this.depth--;
      return op === '-' ? -v : v;
    }
    return this.power();
  }

  private power(): number {
    const base = this.primary();
    if (this.peekOp('^')) {
      this.i++;
      this.enter();
      const exp = this.unary();
      this.depth--;
      if (base === 0 && exp < 0) throw new CalculatorError('division by zero');
      if (base < 0 && !Number.isInteger(exp)) {
        throw new CalculatorError('a negative number to a fractional power is not real');
      }
      return base ** exp;
    }
    return base;
  }

  private primary(): number {
    const t = this.tokens[this.i];
    if (!t) throw new CalculatorError('unexpected end of expression');
    if (t.kind === 'num') {
      this.i++;
      return t.value;
    }
    if (t.value === '(') {
      this.i++;
      this.enter();
      const v = this.expr();
      this.depth--;
      if (!this.peekOp(')')) throw new CalculatorError(`missing ')' for '(' at position ${t.pos}`);
      this.i++;
      return v;
    }
    throw new CalculatorError(`unexpected '${t.value}' at position ${t.pos}`);
  }
}

/** The value of an arithmetic expression; throws CalculatorError on anything else. */
export function evaluateExpression(expression: string): number {
  if (typeof expression !== 'string') throw new CalculatorError('expression must be a string');
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new CalculatorError(`expression longer than ${MAX_EXPRESSION_LENGTH} characters`);
  }
  const value = new Parser(tokenize(expression)).parse();
  if (!Number.isFinite(value)) throw new CalculatorError('result is not a finite number');
  return value;
}

/**
 * A number as the calculator prints it: 12 significant digits, so float noise is rounded away
 * (0.1 + 0.2 → "0.3"), integers in full up to 2^53, no "-0".
 */
export function formatNumber(value: number): string {
  if (Object.is(value, -0)) return '0';
  if (Number.isInteger(value) && Math.abs(value) <= Number.MAX_SAFE_INTEGER) return String(value);
  const rounded = Number(value.toPrecision(12));
  return String(Object.is(rounded, -0) ? 0 : rounded);
}

/** evaluateExpression then formatNumber. */
export function calculate(expression: string): string {
  return formatNumber(evaluateExpression(expression));
}
