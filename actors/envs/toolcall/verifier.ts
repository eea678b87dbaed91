/**
 * The toolcall track's outcome verifier: the last `\boxed{…}` of the final answer (braces
 * matched, so `\boxed{\frac{1}{2}}` is read whole) must equal the expected answer exactly, after
 * trimming surrounding whitespace: +1, else −1 (also when there is no box).
 */

/** The content of the last complete `\boxed{…}` in `text`, or undefined. */
export function lastBoxed(text: string): string | undefined {
  let found: string | undefined;
  const marker = '\\boxed{';
  for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + 1)) {
    let depth = 1;
    let i = at + marker.length;
    for (; i < text.length && depth > 0; i++) {
      if (text[i] === '{') depth++;
      else if (text[i] === '}') depth--;
    }
    if (depth === 0) found = text.slice(at + marker.length, i - 1);
  }
  return found;
}

export const REWARD_CORRECT = 1;
export const REWARD_WRONG = -1;

export interface Verdict {
  reward: number;
  correct: boolean;
  /** The boxed answer read, or undefined when there was none. */
  answer: string | undefined;
}

export function verifyAnswer(finalAnswer: string | null | undefined, expected: string): Verdict {
  const answer = lastBoxed(finalAnswer ?? '')?.trim();
  const correct = answer !== undefined && answer === expected.trim();
  return { reward: correct ? REWARD_CORRECT : REWARD_WRONG, correct, answer };
}
