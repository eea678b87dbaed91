/** Rule-based outcome rewards (no LLM): boxed-answer match and unit-test pass rate. */
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
