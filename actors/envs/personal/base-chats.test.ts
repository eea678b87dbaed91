import { describe, expect, it } from 'vitest';
import { formatHintForUser } from '../../judge/prompts.js';
import { baseAnswer, baseChats, HINT_NAMES, preferredAnswer, withHint } from './base-chats.js';
import { DEFAULT_NAME, makePreference, realWords } from './preferences.js';
import { requestPool } from './requests.js';
import { PRAISE_PHRASES } from './simulated-user.js';

describe('base chats', () => {
  it('every request of the pool has an answer in words that no preference of the track accepts as it is', () => {
    const name = makePreference('name');
    for (const r of requestPool()) {
      const a = baseAnswer(r);
      expect(realWords(a), r.text).toBeGreaterThanOrEqual(3);
      expect(name.check(a).ok).toBe(false);
      expect(name.check(preferredAnswer(name, a)).ok, a).toBe(true);
    }
    expect(baseAnswer(requestPool().find((r) => r.text === 'Translate "thank you" into French.')!)).toBe(
      'In French that is "merci".',
    );
    expect(preferredAnswer(makePreference('name:Ann'), 'How about Milo?')).toBe('Ann, how about Milo?');
    expect(preferredAnswer(makePreference('name:Ann'), 'I would say Milo.')).toBe('Ann, I would say Milo.');
  });

  it('uses train requests only, in happy sessions, with hints as the OPD teacher sees them', () => {
    const chats = baseChats({ seed: 3, sessions: 20, turnsPerSession: 3, hintShare: 0.5 });
    const plain = chats.filter((c) => c.hint === null);
    const hinted = chats.filter((c) => c.hint !== null);
    expect(plain).toHaveLength(60);
    expect(hinted.length).toBeGreaterThan(15);
    expect(hinted.length).toBeLessThan(45);
    for (const c of chats) {
      expect(c.request.split).toBe('train');
      const last = c.messages.at(-1)!;
      expect(last.role).toBe('user');
      // Every earlier reply is the base answer, and the user only ever thanked it.
      for (const m of c.messages.slice(1, -1)) {
        if (m.role === 'user')
          expect(
            PRAISE_PHRASES.some((p) => m.content.startsWith(p)),
            m.content,
          ).toBe(true);
        else expect(m.content).not.toMatch(/^\p{L}+, /u);
      }
      if (c.hint === null) {
        expect(c.reply).toBe(baseAnswer(c.request));
        expect(last.content).toContain(c.request.text);
      } else {
        expect((last.content ?? '').endsWith(formatHintForUser(c.hint))).toBe(true);
        const who = /'(\p{L}+),'/u.exec(c.hint)![1];
        expect(HINT_NAMES).toContain(who);
        expect(makePreference({ kind: 'name', name: who }).check(c.reply).ok).toBe(true);
      }
    }
    // The simulated users' own name is never a hint: the base learns to copy the hint's name.
    expect(HINT_NAMES).not.toContain(DEFAULT_NAME);
    expect(chats.some((c) => c.hint?.includes(`'${DEFAULT_NAME},'`))).toBe(false);
  });

  it('corrected sessions: first replies plain, a reply after a correction heeds it at heedShare', () => {
    const chats = baseChats({
      seed: 5,
      sessions: 60,
      turnsPerSession: 4,
      names: ['Sam'],
      hintShare: 0,
      correctedShare: 1,
      heedShare: 0.3,
    });
    const sam = makePreference('name:Sam');
    let afterCorrection = 0;
    let heeded = 0;
    for (const c of chats) {
      expect(c.hint).toBeNull();
      const last = c.messages.at(-1)!.content ?? '';
      const corrected = sam.corrections.some((k) => last.includes(k));
      if (!corrected) {
        // Unprompted, the base never opens with the name: the habit RL has to build.
        expect(c.reply).toBe(baseAnswer(c.request));
        continue;
      }
      afterCorrection++;
      if (c.reply !== baseAnswer(c.request)) {
        expect(c.reply).toBe(preferredAnswer(sam, baseAnswer(c.request)));
        heeded++;
      }
    }
    expect(afterCorrection).toBeGreaterThan(60);
    expect(heeded / afterCorrection).toBeGreaterThan(0.15);
    expect(heeded / afterCorrection).toBeLessThan(0.45);
    // Without corrected sessions the chats are those of a base built before the option existed.
    expect(baseChats({ seed: 5, sessions: 8, correctedShare: 0 })).toEqual(
      baseChats({ seed: 5, sessions: 8 }),
    );
    expect(() => baseChats({ correctedShare: 1.5 })).toThrow(/correctedShare/);
    expect(() => baseChats({ heedShare: -1 })).toThrow(/heedShare/);
  });

  it('is the same for the same seed and differs for another', () => {
    const a = baseChats({ seed: 1, sessions: 8 });
    expect(baseChats({ seed: 1, sessions: 8 })).toEqual(a);
    expect(baseChats({ seed: 2, sessions: 8 })).not.toEqual(a);
  });

  it('rejects bad options, naming them', () => {
    expect(() => baseChats({ sessions: 0 })).toThrow(/sessions/);
    expect(() => baseChats({ hintShare: 2 })).toThrow(/hintShare/);
    expect(() => baseChats({ names: [] })).toThrow(/name/);
  });

  it('withHint appends the hint to the latest user message only', () => {
    const m = withHint(
      [
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'b' },
        { role: 'user', content: 'c' },
      ],
      'h',
    );
    expect(m.map((x) => x.content)).toEqual(['a', 'b', `c${formatHintForUser('h')}`]);
  });
});
