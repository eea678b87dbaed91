import { describe, expect, it } from 'vitest';
import { encodeWithin } from './prompt-budget.js';
import { ContextLengthError } from './rollout-engine.js';

/** One id per character: counts are exact, and calls are recorded. */
function charTokenizer() {
  const calls: number[] = [];
  const encode = (text: string) => {
    calls.push(text.length);
    return Array.from(text, (c) => c.charCodeAt(0));
  };
  return { encode, calls };
}

describe('encodeWithin', () => {
  it('encodes a prompt that fits in one piece exactly', async () => {
    const t = charTokenizer();
    expect(await encodeWithin('hello', t.encode, 5)).toEqual([104, 101, 108, 108, 111]);
    expect(t.calls).toEqual([5]);
    await expect(encodeWithin('hello!', t.encode, 5)).rejects.toThrow(ContextLengthError);
  });

  it('refuses a prompt far past the context after the first pieces, never tokenizing it whole', async () => {
    const t = charTokenizer();
    const text = 'x'.repeat(99).concat('\n').repeat(100_000); // 10 MB
    const err = await encodeWithin(text, t.encode, 32_768, { pieceChars: 16_384 }).catch((e) => e);
    expect(err).toBeInstanceOf(ContextLengthError);
    expect(err.message).toMatch(/at least \d+ tokens long; the model's context holds 32768/);
    expect(err.fields).toMatchObject({ param: 'messages', maxTokens: 32_768 });
    expect(Math.max(...t.calls)).toBeLessThanOrEqual(16_384);
    expect(t.calls.reduce((a, b) => a + b, 0)).toBeLessThan(64_000);
  });

  it('yields to the event loop between pieces', async () => {
    const t = charTokenizer();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 0);
    try {
      await encodeWithin('y'.repeat(1_000_000), t.encode, 2_000_000, { pieceChars: 10_000 });
    } finally {
      clearInterval(timer);
    }
    expect(ticks).toBeGreaterThan(0);
    // It fit: counted in pieces, then encoded whole for exact ids.
    expect(t.calls.at(-1)).toBe(1_000_000);
  });
});
