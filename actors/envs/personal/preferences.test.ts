import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../common/errors.js';
import {
  allPreferences,
  makePreference,
  PREFERENCE_KINDS,
  realWords,
  satisfyingReply,
} from './preferences.js';

const ok = (spec: Parameters<typeof makePreference>[0], reply: string) =>
  makePreference(spec).check(reply).ok;

describe('preference checkers', () => {
  it('signoff: the reply ends with the sign-off, after some answer', () => {
    expect(ok('signoff', 'Call him Felix. -- ok')).toBe(true);
    expect(ok('signoff', 'Call him Felix.\n-- ok \n')).toBe(true);
    expect(ok('signoff', 'Call him Felix.')).toBe(false);
    expect(ok('signoff', 'Call him Felix. -- OK')).toBe(false);
    expect(ok('signoff', '-- ok Call him Felix.')).toBe(false);
    expect(ok('signoff', '  -- ok')).toBe(false);
    expect(ok({ kind: 'signoff', text: 'Cheers!' }, 'Rice and beans. Cheers!')).toBe(true);
    expect(makePreference('signoff').check('Felix.').reason).toBe("does not end with '-- ok'");
  });

  it('prefix: the reply opens with the prefix and goes on', () => {
    expect(ok('prefix', 'Sure: try lentil soup.')).toBe(true);
    expect(ok('prefix', '\n Sure: lentil soup')).toBe(true);
    expect(ok('prefix', 'sure: lentil soup')).toBe(false);
    expect(ok('prefix', 'Lentil soup. Sure:')).toBe(false);
    expect(ok('prefix', 'Sure:   ')).toBe(false);
    expect(ok('prefix:Hello!', 'Hello! Here you go.')).toBe(true);
  });

  it('lowercase: no capital anywhere, and some letters', () => {
    expect(ok('lowercase', 'try lentil soup, it is cheap.')).toBe(true);
    expect(ok('lowercase', 'ça va très bien')).toBe(true);
    expect(ok('lowercase', 'Try lentil soup.')).toBe(false);
    expect(ok('lowercase', 'try lentil soup in Ça')).toBe(false);
    expect(ok('lowercase', '')).toBe(false);
    expect(ok('lowercase', '42 !!')).toBe(false);
    expect(makePreference('lowercase').check('try X').reason).toBe('has the capital "X"');
  });

  it('brackets: the whole reply inside [ ]', () => {
    expect(ok('brackets', '[Felix]')).toBe(true);
    expect(ok('brackets', '  [Call him Felix, or Tom.]\n')).toBe(true);
    expect(ok('brackets', 'Felix')).toBe(false);
    expect(ok('brackets', '[Felix] is nice')).toBe(false);
    expect(ok('brackets', 'I say [Felix]')).toBe(false);
    expect(ok('brackets', '[ ]')).toBe(false);
    expect(ok('brackets', '[')).toBe(false);
  });

  it('brief: a few words and characters, but not nothing', () => {
    expect(ok('brief', 'Call him Felix.')).toBe(true);
    expect(ok('brief', 'Felix')).toBe(true);
    expect(ok('brief', 'You could call your cat Felix or maybe Tom.')).toBe(false);
    expect(ok('brief', 'Supercalifragilisticexpialidociouslylonged')).toBe(false);
    expect(ok('brief', '   ')).toBe(false);
    expect(ok('brief:2', 'Call him Felix.')).toBe(false);
    expect(ok({ kind: 'brief', maxWords: 3, maxChars: 10 }, 'Felix, Tom')).toBe(true);
    expect(makePreference('brief').check('a b c d e f g').reason).toBe('7 words (> 5)');
  });

  it("name: the user's name and a comma, then an answer in real words", () => {
    expect(ok('name', 'Sam, how about Milo? It is short.')).toBe(true);
    expect(ok('name:Ann', '  Ann, try a quick stir fry.\n')).toBe(true);
    expect(ok('name', 'How about Milo? It is short and friendly.')).toBe(false);
    expect(ok('name', 'sam, how about Milo?')).toBe(false);
    expect(ok('name', 'Sam how about Milo today?')).toBe(false);
    // The name before noise or before too few words is no answer.
    expect(ok('name', 'Sam, PPPP PPPP PPPP PPPP')).toBe(false);
    expect(ok('name', 'Sam, Milo.')).toBe(false);
    expect(ok('name', 'Sam, 42 7 a b')).toBe(false);
    expect(ok({ kind: 'name', name: 'Sam', minWords: 1 }, 'Sam, Milo.')).toBe(true);
    expect(makePreference('name').check('Sam, Milo.').reason).toBe("1 real word(s) after 'Sam,' (< 3)");
    expect(makePreference('name:Ann').hint).toBe("The user wants every reply to start with 'Ann,'.");
    for (const c of makePreference('name').corrections) expect(c).toContain('Sam');
    expect(() => makePreference('name:Sam,')).toThrow(/letters/);
    expect(() => makePreference({ kind: 'name', name: ' Sam' })).toThrow(ConfigError);
  });

  it('realWords counts words of two or more letters, not stutters, numbers or single letters', () => {
    expect(realWords('How about Milo? It is short.')).toBe(6);
    expect(realWords('In French that is "merci".')).toBe(5);
    expect(realWords("j'aime le thé, à bientôt")).toBe(4);
    expect(realWords('PPPP aaa a 42 --')).toBe(0);
    expect(realWords('')).toBe(0);
  });

  it('every kind: a satisfying reply passes, the plain answer does not, and the texts name the rule', () => {
    expect(allPreferences().map((p) => p.kind)).toEqual([...PREFERENCE_KINDS]);
    for (const p of allPreferences()) {
      expect(p.check(satisfyingReply(p)).ok, p.name).toBe(true);
      expect(p.check('Here Is A Plain Answer That Goes On For Quite A Few Words.').ok, p.name).toBe(false);
      expect(p.hint).toMatch(/^The user wants /);
      expect(p.hint.length).toBeGreaterThan(10);
      expect(new Set(p.corrections).size).toBe(p.corrections.length);
      expect(p.corrections.length).toBeGreaterThanOrEqual(4);
    }
    const signoff = makePreference('signoff');
    for (const c of signoff.corrections) expect(c).toContain("'-- ok'");
    expect(signoff.hint).toBe("The user wants every reply to end with the sign-off '-- ok'.");
  });

  it('parses names and rejects bad specs', () => {
    expect(makePreference('signoff:Bye.').name).toBe('signoff:Bye.');
    expect(makePreference('prefix:Sure:').spec).toEqual({ kind: 'prefix', text: 'Sure:' });
    expect(makePreference('brief:4').spec).toEqual({ kind: 'brief', maxWords: 4, maxChars: 30 });
    expect(() => makePreference('shouting')).toThrow(ConfigError);
    expect(() => makePreference('brief:0')).toThrow(/positive integer/);
    expect(() => makePreference({ kind: 'signoff', text: ' ok ' })).toThrow(ConfigError);
  });
});
