/** Rule-based outcome rewards (no LLM): boxed-answer match, unit-test pass rate, environment verdicts. */
import type { JudgeReference } from './prompts.js';
import { lastBoxedContent } from './votes.js';

/**
 * Verifier that gives +1 when the last `\boxed{…}` of a response, trimmed, equals `expected` (trimmed),
 * and −1 otherwise (including when there is no box).
 */
export function boxedAnswerVerifier(expected: string): (response: string) => 1 | -1 {
  const want = expected.trim();
  return (response: string) => {
    const got = lastBoxedContent(response);
    return got !== null && got.trim() === want ? 1 : -1;
  };
}

/** Test-pass reward in [−1, 1]: 2·(passed/total) − 1 (terminal-rl style). */
export function testsPassedReward(passed: number, total: number): number {
  if (!Number.isFinite(total) || total <= 0) throw new RangeError(`total must be > 0, got ${total}`);
  if (!Number.isFinite(passed) || passed < 0 || passed > total) {
    throw new RangeError(`passed must be in [0, ${total}], got ${passed}`);
  }
  return 2 * (passed / total) - 1;
}

/**
 * Outcome rules a `rule` judge voter applies, one per kind of track outcome:
 * - `boxed-answer`: math / tool-call tracks, last `\boxed{}` vs `reference.answer` (±1);
 * - `tests-passed`: terminal track, `2·passed/total − 1` from `reference.testsPassed/testsTotal`
 *   (the environment's `reference.reward` when no tests ran);
 * - `env-reward`: GUI / SWE tracks, whose environment already decided (`reference.reward`).
 */
export const RULES = ['boxed-answer', 'tests-passed', 'env-reward'] as const;
export type RuleName = (typeof RULES)[number];

export interface RuleOutcome {
  /** Sign of the reward: the vote. */
  score: 1 | -1 | 0;
  /** The continuous outcome reward (what the track's trainer uses as the outcome). */
  reward: number;
}

/** Applies a rule to a turn; throws RangeError (naming the missing or bad reference field) when it cannot. */
export function applyRule(rule: RuleName, response: string, reference: JudgeReference = {}): RuleOutcome {
  let reward: number;
  switch (rule) {
    case 'boxed-answer':
      if (typeof reference.answer !== 'string') throw new RangeError('boxed-answer needs reference.answer');
      reward = boxedAnswerVerifier(reference.answer)(response);
      break;
    case 'tests-passed':
      if (reference.testsPassed !== undefined && reference.testsTotal !== undefined) {
        reward = testsPassedReward(reference.testsPassed, reference.testsTotal);
      } else if (typeof reference.reward === 'number' && Number.isFinite(reference.reward)) {
        // No test run to count (an episode ended for malformed calls): the environment decided.
        reward = reference.reward;
      } else {
        throw new RangeError('tests-passed needs reference.testsPassed and reference.testsTotal');
      }
      break;
    case 'env-reward':
      if (typeof reference.reward !== 'number' || !Number.isFinite(reference.reward)) {
        throw new RangeError('env-reward needs a finite reference.reward');
      }
      reward = reference.reward;
      break;
  }
  return { score: reward > 0 ? 1 : reward < 0 ? -1 : 0, reward };
}
