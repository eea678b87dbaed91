/**
 * Tokenizing a prompt that may not fit. A 10 MB request tokenized in one go blocks the event
 * loop for seconds (every other session and the job's loops with it) only to be refused; so a
 * long prompt is counted piece by piece, yielding between pieces, and refused as soon as the
 * count is clearly past the model's context. Only a prompt that may fit is tokenized whole,
 * which is what makes its ids exact (a BPE merge may span a piece boundary).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { ContextLengthError } from './rollout-engine.js';

export interface PromptBudgetOptions {
  /** Texts up to this many characters are tokenized whole at once. Default 65 536. */
  pieceChars?: number;
  /** Where the refusal's `fields.param` points. Default `messages`. */
  param?: string;
}

/** Cuts `text` into pieces of about `size` characters, each ending after a newline where one is near. */
function* pieces(text: string, size: number): Generator<string> {
  let at = 0;
  while (at < text.length) {
    let end = Math.min(text.length, at + size);
    if (end < text.length) {
      const newline = text.lastIndexOf('\n', end);
      if (newline > at + size / 2) end = newline + 1;
    }
    yield text.slice(at, end);
    at = end;
  }
}

function tooLong(count: number, maxTokens: number, param: string, atLeast: boolean): ContextLengthError {
  return new ContextLengthError(
    `this prompt is ${atLeast ? 'at least ' : ''}${count} tokens long; the model's context holds ${maxTokens} (shorten the conversation or the tool list)`,
    { fields: { param, promptTokens: count, maxTokens } },
  );
}

/**
 * The ids of `text`, or a `ContextLengthError` when it has more than `maxTokens` tokens. Never
 * holds the event loop for longer than one piece takes to tokenize.
 */
export async function encodeWithin(
  text: string,
  encode: (text: string) => number[],
  maxTokens: number,
  options: PromptBudgetOptions = {},
): Promise<number[]> {
  const pieceChars = options.pieceChars ?? 65_536;
  const param = options.param ?? 'messages';
  if (text.length > pieceChars) {
    let count = 0;
    let n = 0;
    for (const piece of pieces(text, pieceChars)) {
      count += encode(piece).length;
      n++;
      // Each boundary can split at most a few merges: past this slack the prompt cannot fit.
      if (count > maxTokens + 8 * n) throw tooLong(count, maxTokens, param, true);
      await yieldToLoop();
    }
  }
  const ids = encode(text);
  if (ids.length > maxTokens) throw tooLong(ids.length, maxTokens, param, false);
  return ids;
}
