import { describe, expect, it } from 'vitest';
import { ConfigError, NotFoundError } from '../../common/errors.js';
import { SessionKeys } from './session-keys.js';
import { TurnAlreadyJudgedError, TurnFeedback } from './turn-feedback.js';

describe('TurnFeedback', () => {
  it("attaches a reward or correction to a named turn or the session's latest, until it is judged", () => {
    const book = new TurnFeedback();
    book.noteTurn('s', 'chatcmpl-1');
    book.noteTurn('s', 'chatcmpl-2');
    expect(book.give({ sessionId: 's', reward: 1 })).toEqual({ sessionId: 's', interactionId: 'chatcmpl-2' });
    book.give({ sessionId: 's', interactionId: 'chatcmpl-1', correction: 'use metric units' });
    book.give({ sessionId: 's', interactionId: 'chatcmpl-1', reward: -1 });
    expect(book.take('chatcmpl-1')).toMatchObject({ reward: -1, correction: 'use metric units' });
    expect(book.take('chatcmpl-2')).toMatchObject({ reward: 1 });
    expect(book.take('chatcmpl-3')).toBeUndefined();
    // Judged: later feedback is refused, not dropped without a word.
    expect(() => book.give({ sessionId: 's', interactionId: 'chatcmpl-1', reward: 1 })).toThrow(
      TurnAlreadyJudgedError,
    );
    expect(book.stats()).toEqual({ turns: 2, given: 3 });
  });

  it('refuses feedback on turns it does not know, on another session, or with nothing in it', () => {
    const book = new TurnFeedback({ maxTurns: 2 });
    book.noteTurn('a', 'x1');
    expect(() => book.give({ sessionId: 'b', interactionId: 'x1', reward: 1 })).toThrow(NotFoundError);
    expect(() => book.give({ sessionId: 'b', reward: 1 })).toThrow(/has no recorded turn yet/);
    expect(() => book.give({ sessionId: 'a' })).toThrow(/a reward, a correction, or both/);
    expect(() => book.give({ sessionId: 'a', reward: Number.NaN })).toThrow(/in \[-1, 1\]/);
    // Bounded: the oldest turns are forgotten.
    book.noteTurn('a', 'x2');
    book.noteTurn('a', 'x3');
    expect(() => book.give({ sessionId: 'a', interactionId: 'x1', reward: 1 })).toThrow(NotFoundError);
    expect(book.give({ sessionId: 'a', reward: 1 }).interactionId).toBe('x3');
  });

  it("holds rewards to the judge's range: out-of-range and non-finite rewards are refused, naming it", () => {
    const book = new TurnFeedback();
    book.noteTurn('a', 'x1');
    for (const reward of [1e308, -1e308, 50, 1.0001, Number.POSITIVE_INFINITY, Number.NaN]) {
      const thrown = (() => {
        try {
          book.give({ sessionId: 'a', reward });
        } catch (err) {
          return err as ConfigError;
        }
      })();
      expect(thrown).toBeInstanceOf(ConfigError);
      expect(thrown?.message).toContain("in [-1, 1] (the job's judge.rewardRange)");
    }
    expect(book.stats().given).toBe(0);
    expect(book.give({ sessionId: 'a', reward: -1 }).interactionId).toBe('x1');
    // A custom judge's scale, declared by the job.
    const scaled = new TurnFeedback({ rewardRange: [0, 10] });
    scaled.noteTurn('a', 'x1');
    expect(() => scaled.give({ sessionId: 'a', reward: -1 })).toThrow(/in \[0, 10\]/);
    expect(scaled.give({ sessionId: 'a', reward: 7.5 }).interactionId).toBe('x1');
    expect(scaled.take('x1')).toMatchObject({ reward: 7.5 });
    expect(() => new TurnFeedback({ rewardRange: [1, 1] })).toThrow(/lowest < highest/);
  });
});

describe('SessionKeys', () => {
  it('issues one key per session, finds the session of a Bearer header, and revokes', () => {
    const keys = new SessionKeys(2);
    const a = keys.issue('a');
    const b = keys.issue();
    expect(a.apiKey).toMatch(/^sk-clawray-/);
    expect(b.sessionId).toMatch(/^sess-/);
    expect(keys.sessionOf(`Bearer ${a.apiKey}`)).toBe('a');
    expect(keys.sessionOf(a.apiKey)).toBeUndefined();
    expect(keys.sessionOf('Bearer sk-clawray-forged')).toBeUndefined();
    const again = keys.issue('a');
    expect(keys.sessionOf(`Bearer ${a.apiKey}`)).toBeUndefined();
    expect(keys.sessionOf(`Bearer ${again.apiKey}`)).toBe('a');
    keys.issue('c'); // past maxKeys: the oldest (b) goes
    expect(keys.sessionOf(`Bearer ${b.apiKey}`)).toBeUndefined();
    keys.revoke('a');
    expect(keys.size).toBe(1);
  });
});
