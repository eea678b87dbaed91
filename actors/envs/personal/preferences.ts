/**
 * The stable preferences of the personal track's simulated user: style rules that can be checked
 * on the reply text alone, that a random policy almost never meets by chance, and that a
 * few-million-parameter byte-level model can pick up from judge votes and hints in a few hundred
 * steps (a fixed opener or sign-off, lowercase only, brackets, brevity). `name` is the one that
 * needs words: the reply opens with the user's name and goes on to answer in real words, so
 * short noise cannot meet it (the others accept "PPPP" after the marker, or as the whole reply).
 *
 * Each preference carries three texts, one per party that talks about it:
 * - corrections, what the user says after a reply that missed it (the negative evidence an
 *   OpenClaw-RL judge reads in the next state);
 * - the hint, what an OPD hint judge would distil from such a correction;
 * - the check's reason, for logs and tests.
 */
import { ConfigError } from '../../../common/errors.js';

export const PREFERENCE_KINDS = ['signoff', 'prefix', 'lowercase', 'brackets', 'brief', 'name'] as const;
export type PreferenceKind = (typeof PREFERENCE_KINDS)[number];

export type PreferenceSpec =
  /** Every reply ends with `text` (default `-- ok`). */
  | { kind: 'signoff'; text?: string }
  /** Every reply starts with `text` (default `Sure:`). */
  | { kind: 'prefix'; text?: string }
  /** No uppercase letter anywhere. */
  | { kind: 'lowercase' }
  /** The whole reply inside `[` … `]`. */
  | { kind: 'brackets' }
  /** At most `maxWords` words (default 6) and `maxChars` characters (default 40). */
  | { kind: 'brief'; maxWords?: number; maxChars?: number }
  /**
   * Every reply starts with the user's name and a comma (`Sam, …`, default name `Sam`), then
   * answers in at least `minWords` words (default 3) of two or more letters.
   */
  | { kind: 'name'; name?: string; minWords?: number };

export const DEFAULT_SIGNOFF = '-- ok';
export const DEFAULT_PREFIX = 'Sure:';
export const DEFAULT_MAX_WORDS = 5;
export const DEFAULT_MAX_CHARS = 30;
export const DEFAULT_NAME = 'Sam';
export const DEFAULT_MIN_WORDS = 3;

export interface PreferenceCheck {
  ok: boolean;
  /** Why, in a few words ("does not end with '-- ok'"). */
  reason: string;
}

export interface Preference {
  readonly kind: PreferenceKind;
  /** The spec with every default filled in. */
  readonly spec: PreferenceSpec;
  /** Short stable name, e.g. `signoff:-- ok`, `brief:6`. */
  readonly name: string;
  /** What an OPD teacher would extract from a correction. */
  readonly hint: string;
  /** Every correction the user may send (one is drawn per missed reply). */
  readonly corrections: readonly string[];
  check(reply: string): PreferenceCheck;
}

const CONTENT = /[\p{L}\p{N}]/u;
const UPPER = /\p{Lu}/u;
const LETTER = /\p{L}/u;

/** The text holds a letter or digit: an answer of some sort, whatever its shape. */
export function hasContent(text: string): boolean {
  return CONTENT.test(text);
}

/** A word a reader would call one: two or more letters (inner apostrophes and hyphens allowed). */
const REAL_WORD = /^\p{L}[\p{L}'’-]*\p{L}$/u;
/** A letter three times in a row: what a collapsed byte-level policy writes ("PPPP"), not a word. */
const STUTTER = /(\p{L})\1\1/u;
const EDGE_PUNCTUATION = /^[^\p{L}]+|[^\p{L}]+$/gu;

/**
 * How many words of `text` a reader would call words: two or more letters once surrounding
 * punctuation and quotes are stripped, no letter three times in a row. "How about Milo?" is 3;
 * "PPPP", "a" and "42" are none.
 */
export function realWords(text: string): number {
  return words(text).filter((w) => {
    const core = w.replace(EDGE_PUNCTUATION, '');
    return REAL_WORD.test(core) && !STUTTER.test(core);
  }).length;
}

function words(text: string): string[] {
  return text
    .trim()
    .split(/\s+/)
    .filter((w) => w.length > 0);
}

function quoteShort(text: string, max = 24): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(t.length > max ? `${t.slice(0, max)}…` : t);
}

function positiveInt(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new ConfigError(`preference ${name} must be a positive integer, got ${JSON.stringify(value)}`, {
      fields: { param: name },
    });
  }
  return value;
}

function marker(value: unknown, name: string, fallback: string): string {
  if (value === undefined) return fallback;
  // Surrounding whitespace would make the rule impossible to see in a trimmed reply.
  if (typeof value !== 'string' || value.trim() === '' || value !== value.trim()) {
    throw new ConfigError(
      `preference ${name} must be a non-empty string without surrounding spaces, got ${JSON.stringify(value)}`,
      { fields: { param: name } },
    );
  }
  return value;
}

function signoff(text: string): Preference {
  return {
    kind: 'signoff',
    spec: { kind: 'signoff', text },
    name: `signoff:${text}`,
    hint: `The user wants every reply to end with the sign-off '${text}'.`,
    corrections: [
      `Please remember to end with '${text}'.`,
      `You forgot to sign off with '${text}' again.`,
      `Again: every reply should end with '${text}'.`,
      `That doesn't end with '${text}', as I asked.`,
      `I told you before: finish your replies with '${text}'.`,
    ],
    check(reply) {
      const t = reply.trimEnd();
      if (!t.endsWith(text)) return { ok: false, reason: `does not end with '${text}'` };
      if (!hasContent(t.slice(0, t.length - text.length))) {
        return { ok: false, reason: `nothing but the sign-off '${text}'` };
      }
      return { ok: true, reason: `ends with '${text}'` };
    },
  };
}

function prefix(text: string): Preference {
  return {
    kind: 'prefix',
    spec: { kind: 'prefix', text },
    name: `prefix:${text}`,
    hint: `The user wants every reply to start with '${text}'.`,
    corrections: [
      `Please start your reply with '${text}'.`,
      `You forgot to begin with '${text}' again.`,
      `Again: every reply should start with '${text}'.`,
      `That doesn't open with '${text}', as I asked.`,
      `I told you before: begin your replies with '${text}'.`,
    ],
    check(reply) {
      const t = reply.trimStart();
      if (!t.startsWith(text)) return { ok: false, reason: `does not start with '${text}'` };
      if (!hasContent(t.slice(text.length))) return { ok: false, reason: `nothing after '${text}'` };
      return { ok: true, reason: `starts with '${text}'` };
    },
  };
}

function lowercase(): Preference {
  return {
    kind: 'lowercase',
    spec: { kind: 'lowercase' },
    name: 'lowercase',
    hint: 'The user wants every reply written in lowercase only, without any capital letters.',
    corrections: [
      'Again, all lowercase please.',
      'Please write in lowercase only, no capital letters.',
      'I asked for lowercase only. No capitals.',
      'There are capital letters again; keep it all lowercase.',
      'Remember: lowercase letters only in your replies.',
    ],
    check(reply) {
      const upper = UPPER.exec(reply);
      if (upper) return { ok: false, reason: `has the capital ${quoteShort(upper[0])}` };
      // An empty or letterless reply is not "written in lowercase": it is not written at all.
      if (!LETTER.test(reply)) return { ok: false, reason: 'has no letters' };
      return { ok: true, reason: 'all lowercase' };
    },
  };
}

function brackets(): Preference {
  return {
    kind: 'brackets',
    spec: { kind: 'brackets' },
    name: 'brackets',
    hint: "The user wants every reply wrapped in square brackets: start with '[' and end with ']'.",
    corrections: [
      'Please wrap your reply in [square brackets].',
      'You forgot the brackets again: put the whole reply inside [ ].',
      "Again: start with '[' and end with ']'.",
      'I like my answers in [brackets], remember?',
      'That is not inside square brackets, as I asked.',
    ],
    check(reply) {
      const t = reply.trim();
      if (!t.startsWith('[')) return { ok: false, reason: "does not start with '['" };
      if (!t.endsWith(']') || t.length < 2) return { ok: false, reason: "does not end with ']'" };
      if (!hasContent(t.slice(1, -1))) return { ok: false, reason: 'nothing inside the brackets' };
      return { ok: true, reason: 'wrapped in brackets' };
    },
  };
}

function brief(maxWords: number, maxChars: number): Preference {
  return {
    kind: 'brief',
    spec: { kind: 'brief', maxWords, maxChars },
    name: `brief:${maxWords}`,
    hint: `The user wants very short replies: at most ${maxWords} words and ${maxChars} characters.`,
    corrections: [
      `Too long. At most ${maxWords} words, please.`,
      `Please keep it under ${maxWords} words.`,
      `Shorter, please: ${maxWords} words at most.`,
      `Again, that's too wordy. No more than ${maxWords} words.`,
      `I prefer short answers, ${maxWords} words or fewer.`,
    ],
    check(reply) {
      const t = reply.trim();
      const n = words(t).length;
      if (!hasContent(t)) return { ok: false, reason: 'empty' };
      if (n > maxWords) return { ok: false, reason: `${n} words (> ${maxWords})` };
      // Words alone would let a long run of unbroken characters (what a random byte-level model
      // emits) count as brief.
      if (t.length > maxChars) return { ok: false, reason: `${t.length} characters (> ${maxChars})` };
      return { ok: true, reason: `${n} words` };
    },
  };
}

function name(person: string, minWords: number): Preference {
  const opener = `${person},`;
  return {
    kind: 'name',
    spec: { kind: 'name', name: person, minWords },
    name: `name:${person}`,
    hint: `The user wants every reply to start with '${opener}'.`,
    corrections: [
      `Please start by calling me ${person}.`,
      `My name is ${person}; begin your reply with '${opener}'.`,
      `You forgot my name again. Start with '${opener}'.`,
      `Again: every reply should start with '${opener}'.`,
      `I told you before: open with my name, ${person}.`,
    ],
    check(reply) {
      const t = reply.trim();
      if (!t.startsWith(opener)) return { ok: false, reason: `does not start with '${opener}'` };
      const n = realWords(t.slice(opener.length));
      // The name alone, or the name before noise, is no answer.
      if (n < minWords) return { ok: false, reason: `${n} real word(s) after '${opener}' (< ${minWords})` };
      return { ok: true, reason: `starts with '${opener}' and answers in ${n} words` };
    },
  };
}

function personName(value: unknown): string {
  if (value === undefined) return DEFAULT_NAME;
  // A name is letters (and inner spaces, hyphens, apostrophes): a comma follows it in the reply.
  if (typeof value !== 'string' || !/^\p{L}[\p{L} '’-]*$/u.test(value) || value !== value.trim()) {
    throw new ConfigError(
      `preference name must be letters (a person's name, e.g. Sam), got ${JSON.stringify(value)}`,
      { fields: { param: 'name' } },
    );
  }
  return value;
}

/**
 * A preference from its spec, its kind name, or `kind:param` (`signoff:-- ok`, `prefix:Sure:`,
 * `brief:5`, `name:Sam`). Throws ConfigError on an unknown kind or a bad parameter.
 */
export function makePreference(spec: PreferenceSpec | PreferenceKind | string): Preference {
  const s = typeof spec === 'string' ? parsePreferenceString(spec) : spec;
  switch (s.kind) {
    case 'signoff':
      return signoff(marker(s.text, 'text', DEFAULT_SIGNOFF));
    case 'prefix':
      return prefix(marker(s.text, 'text', DEFAULT_PREFIX));
    case 'lowercase':
      return lowercase();
    case 'brackets':
      return brackets();
    case 'brief':
      return brief(
        positiveInt(s.maxWords, 'maxWords', DEFAULT_MAX_WORDS),
        positiveInt(s.maxChars, 'maxChars', DEFAULT_MAX_CHARS),
      );
    case 'name':
      return name(personName(s.name), positiveInt(s.minWords, 'minWords', DEFAULT_MIN_WORDS));
    default:
      throw unknownKind((s as { kind: unknown }).kind);
  }
}

function unknownKind(kind: unknown): ConfigError {
  return new ConfigError(
    `unknown preference kind ${JSON.stringify(kind)}; expected one of ${PREFERENCE_KINDS.join(', ')}`,
    { fields: { param: 'kind' } },
  );
}

function parsePreferenceString(text: string): PreferenceSpec {
  const at = text.indexOf(':');
  const kind = (at < 0 ? text : text.slice(0, at)).trim();
  const param = at < 0 ? undefined : text.slice(at + 1).trim();
  switch (kind) {
    case 'signoff':
    case 'prefix':
      return param ? { kind, text: param } : { kind };
    case 'lowercase':
    case 'brackets':
      return { kind };
    case 'brief': {
      if (!param) return { kind };
      const n = Number(param);
      return { kind, maxWords: n };
    }
    case 'name':
      return param ? { kind, name: param } : { kind };
    default:
      throw unknownKind(kind);
  }
}

/** One preference of each kind, with default parameters. */
export function allPreferences(): Preference[] {
  return PREFERENCE_KINDS.map((kind) => makePreference(kind));
}

/** A reply that meets `preference` (scripted agents, and the texts tests check with). */
export function satisfyingReply(preference: Preference, answer = 'here is my answer'): string {
  const s = preference.spec;
  switch (s.kind) {
    case 'signoff':
      return `${answer} ${s.text}`;
    case 'prefix':
      return `${s.text} ${answer}`;
    case 'lowercase':
      return answer.toLowerCase();
    case 'brackets':
      return `[${answer}]`;
    case 'brief': {
      const short = words(answer).slice(0, s.maxWords!).join(' ').slice(0, s.maxChars!).trim();
      return short || 'ok';
    }
    case 'name':
      return `${s.name}, ${answer}`;
  }
}
