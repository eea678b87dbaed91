import { describe, expect, it } from 'vitest';
import {
  boxedContents,
  extractHint,
  hintCandidates,
  type JudgeVote,
  majority,
  parseBoxedScore,
  selectHint,
  tallyVotes,
} from './votes.js';

describe('parseBoxedScore', () => {
  it('reads 1, -1, 0 and +1 with spaces', () => {
    expect(parseBoxedScore('so \\boxed{1}')).toBe(1);
    expect(parseBoxedScore('\\boxed{-1}')).toBe(-1);
    expect(parseBoxedScore('\\boxed{0}')).toBe(0);
    expect(parseBoxedScore('\\boxed{+1}')).toBe(1);
    expect(parseBoxedScore('\\boxed{ - 1 }')).toBe(-1);
    expect(parseBoxedScore('\\boxed {\n1\n}')).toBe(1);
  });
  it('the last box wins', () => {
    expect(parseBoxedScore('first \\boxed{1} then on reflection \\boxed{-1}')).toBe(-1);
    expect(parseBoxedScore('\\boxed{-1} \\boxed{0} \\boxed{1}')).toBe(1);
  });
  it('an invalid last box makes the vote invalid', () => {
    expect(parseBoxedScore('\\boxed{1} ... \\boxed{2}')).toBeNull();
    expect(parseBoxedScore('\\boxed{yes}')).toBeNull();
    expect(parseBoxedScore('\\boxed{}')).toBeNull();
    expect(parseBoxedScore('\\boxed{1.0}')).toBeNull();
  });
  it('handles nested braces', () => {
    expect(parseBoxedScore('\\boxed{{-1}}')).toBe(-1);
    expect(parseBoxedScore('\\boxed{ { 1 } }')).toBe(1);
    expect(parseBoxedScore('\\boxed{\\frac{1}{2}}')).toBeNull();
    expect(parseBoxedScore('\\boxed{\\frac{1}{2}} then \\boxed{0}')).toBe(0);
  });
  it('ignores an unterminated trailing box and garbage', () => {
    expect(parseBoxedScore('\\boxed{1} and \\boxed{-1')).toBe(1);
    expect(parseBoxedScore('no verdict here')).toBeNull();
    expect(parseBoxedScore('')).toBeNull();
    expect(parseBoxedScore('boxed{1} \\boxed 1 {1}')).toBeNull();
    expect(parseBoxedScore('}}}{{{\\boxed{')).toBeNull();
    expect(parseBoxedScore('\\boxed{1 oops, let me restate: \\boxed{-1}')).toBe(-1);
  });
  it('boxedContents returns all complete boxes in order', () => {
    expect(boxedContents('\\boxed{a} x \\boxed{b{c}} \\boxed{d')).toEqual(['a', 'b{c}']);
  });
});

describe('majority', () => {
  it('takes the majority and its agreement', () => {
    expect(majority([1, 1, -1])).toEqual({ score: 1, valid: 3, agreement: 2 / 3 });
    expect(majority([-1, -1, -1])).toEqual({ score: -1, valid: 3, agreement: 1 });
    expect(majority([0, 0, 1])).toEqual({ score: 0, valid: 3, agreement: 2 / 3 });
  });
  it('drops invalid votes', () => {
    expect(majority([1, null, null])).toEqual({ score: 1, valid: 1, agreement: 1 });
    expect(majority([-1, 2, Number.NaN, undefined, -1, 1])).toEqual({
      score: -1,
      valid: 3,
      agreement: 2 / 3,
    });
  });
  it('a tie or no valid vote gives 0', () => {
    expect(majority([1, -1])).toEqual({ score: 0, valid: 2, agreement: 0 });
    expect(majority([1, -1, 0])).toEqual({ score: 0, valid: 3, agreement: 1 / 3 });
    expect(majority([1, 1, -1, -1, 0])).toEqual({ score: 0, valid: 5, agreement: 1 / 5 });
    expect(majority([null, null])).toEqual({ score: 0, valid: 0, agreement: 0 });
    expect(majority([])).toEqual({ score: 0, valid: 0, agreement: 0 });
  });
});

describe('hints', () => {
  it('extracts and trims the last hint', () => {
    expect(extractHint('x [HINT_START]  use metric units  [HINT_END] \\boxed{1}')).toBe('use metric units');
    expect(extractHint('[HINT_START]a[HINT_END][HINT_START]\nsecond\n[HINT_END]')).toBe('second');
    expect(extractHint('[HINT_START]   [HINT_END]')).toBeNull();
    expect(extractHint('[HINT_START]unterminated')).toBeNull();
    expect(extractHint('nothing')).toBeNull();
  });
  it('selects the longest hint over 10 characters among +1 votes', () => {
    expect(
      selectHint([
        { score: 1, hint: 'Short one.' }, // exactly 10 chars: too short
        { score: -1, hint: 'A much longer hint that came with a negative vote.' },
        { score: 1, hint: 'Answer in French.' },
        { score: 1, hint: '  Answer in French, briefly.  ' },
        { score: null, hint: 'An invalid vote hint that is very long indeed.' },
      ]),
    ).toBe('Answer in French, briefly.');
    expect(selectHint([{ score: 1, hint: '0123456789' }])).toBeNull();
    expect(selectHint([{ score: 1, hint: '01234567890' }])).toBe('01234567890');
    expect(
      selectHint([
        { score: 1, hint: null },
        { score: -1, hint: 'never used as a hint' },
      ]),
    ).toBeNull();
    expect(selectHint([])).toBeNull();
  });
  it('lists every usable hint once, longest first, vote order on equal length', () => {
    expect(
      hintCandidates([
        { score: 1, hint: 'Answer in French.' },
        { score: 1, hint: 'Short one.' },
        { score: -1, hint: 'A much longer hint that came with a negative vote.' },
        { score: 1, hint: ' Answer in German. ' },
        { score: 1, hint: 'Answer in French, briefly.' },
        { score: 1, hint: 'Answer in French.' },
      ]),
    ).toEqual(['Answer in French, briefly.', 'Answer in French.', 'Answer in German.']);
    expect(hintCandidates([{ score: 0, hint: 'a zero vote carries no hint' }])).toEqual([]);
  });
});

describe('tallyVotes with a vote threshold', () => {
  const votes = (...scores: (number | null)[]): JudgeVote[] =>
    scores.map((score) => ({ score, backend: 'llm', latencyMs: 0 }) as JudgeVote);

  it('needs that share of all votes cast to agree on +1 or -1, invalid votes counting against it', () => {
    expect(tallyVotes(votes(1, 1, -1), false, 0).score).toBe(1);
    expect(tallyVotes(votes(1, 1, -1), false, 0, 0.6).score).toBe(1); // 2/3 ≥ 0.6
    expect(tallyVotes(votes(1, 1, -1), false, 0, 0.7).score).toBe(0);
    expect(tallyVotes(votes(-1, -1, null), false, 0, 0.7).score).toBe(0); // 2 of 3 cast
    expect(tallyVotes(votes(-1, -1, -1), false, 0, 1).score).toBe(-1);
    expect(tallyVotes(votes(0, 0, 1), false, 0, 0.5).score).toBe(0);
  });
});
