/**
 * The chats a personal-track base policy is fine-tuned on: a starting policy that already answers
 * the simulated user's requests in words, as OpenClaw-RL starts from an instruct model. Without
 * one, the only preferences RL can teach are ones noise meets ("be brief" → "PPPP").
 *
 * Three kinds of example, all rendered as the job renders them (the user's multi-turn session as
 * the simulated user words it):
 * - plain: the latest request → a templated answer in words ("Suggest a name for my cat." →
 *   "How about Milo? It is short and friendly."), in sessions where the user is happy (thanks,
 *   next request). Without corrected sessions no example follows a correction: the base has no
 *   habit for the user's preference, neither keeping nor ignoring it.
 * - hinted: the same prompt with an OPD hint appended to the latest user message exactly as the
 *   teacher sees it (`formatHintForUser`), → the answer that follows the hint (`Ann, how about
 *   Milo? …`): this is what makes the model under the hint a teacher that writes the preferred
 *   reply, which OPD needs. Which names the hints use is a choice: `HINT_NAMES` leaves out the
 *   simulated users' default name (following a hint is then copying the name out of it, which a
 *   98k-parameter byte-level model did not learn in 600 steps: it wrote one of the names it had
 *   seen), or the user's own name (what a pretrained instruct model would do with that hint; the
 *   example's base does this). Either way no unhinted example opens with a name unprompted.
 * - corrected (`correctedShare` of the sessions, default none): the user wants a name from `names`
 *   and corrects every reply without it; the base's first reply to a request is the plain
 *   answer, and a reply after a correction heeds it with probability `heedShare` ("Sam, how
 *   about Milo? …"), else repeats the plain answer. This is an instruct model that sometimes
 *   follows a correction in its context (OpenClaw-RL's base meets its users' preferences 17% of
 *   the time at the start). It gives the preference some probability for OPD's reverse KL to
 *   grow (with none, the personal example's job did not move in 36 interactions); greedy
 *   decoding (what evaluation uses) mostly takes the likelier plain answer.
 *
 * Only train-split requests are used; held-out requests stay unseen until evaluation. Everything
 * is drawn from one seed, so the data (and the base trained on it) repeat exactly.
 */
import { ConfigError } from '../../../common/errors.js';
import { seededRandom } from '../../../common/random.js';
import { formatHintForUser } from '../../judge/prompts.js';
import type { ChatMessage } from '../environment.js';
import { fnv1a } from '../track.js';
import { makePreference, type Preference } from './preferences.js';
import { requestPool, requestsOf, type UserRequest } from './requests.js';
import { SimulatedUser } from './simulated-user.js';

/** One fine-tuning example: the conversation up to the latest user message, and the reply. */
export interface BaseChat {
  messages: ChatMessage[];
  reply: string;
  /** The hint appended to the latest user message (hinted examples), else null. */
  hint: string | null;
  /** The request the reply answers. */
  request: UserRequest;
}

export interface BaseChatsOptions {
  /** Seeds session scripts and which turns get a hint (default 0). */
  seed?: number;
  /** Simulated sessions to walk (default 64); each gives `turnsPerSession` plain examples. */
  sessions?: number;
  /** Replies per session (default 4, the simulated user's default). */
  turnsPerSession?: number;
  /** Share of turns that also give a hinted example (default 0.5). */
  hintShare?: number;
  /** Names the hinted examples ask for (default HINT_NAMES, which leaves out DEFAULT_NAME). */
  names?: readonly string[];
  /** Only requests of these templates (default all): a smaller base, for tests. */
  templates?: readonly string[];
  /**
   * Share of sessions walked with a user who wants a name from `names` and corrects a reply
   * without it (default 0: every user is content). Their first replies to a request are the
   * plain answer, as in happy sessions.
   */
  correctedShare?: number;
  /**
   * In those sessions, the chance that a reply after a correction heeds it (`Sam, how about
   * Milo? …`) rather than repeating the plain answer (default 0.3): an instruct model that
   * sometimes follows a correction in its context, so a policy sampling from the base meets the
   * preference now and then, greedy decoding (evaluation) almost never.
   */
  heedShare?: number;
}

/**
 * Names the hinted examples use. `Sam` (the simulated users' default name) is left out on
 * purpose: the base learns to take the name from the hint, not to open with one it has seen.
 */
export const HINT_NAMES: readonly string[] = [
  'Ann',
  'Ben',
  'Cleo',
  'Dev',
  'Eva',
  'Finn',
  'Gus',
  'Hana',
  'Ivo',
  'Jo',
  'Kai',
  'Lena',
  'Max',
  'Nora',
  'Omar',
  'Pia',
  'Rosa',
  'Tom',
  'Uma',
  'Vic',
  'Wes',
  'Zoe',
];

/** One answer per request template: short, in words, the same for every slot value. */
const TEMPLATE_ANSWERS: Readonly<Record<string, string>> = {
  name: 'How about Milo? It is short and friendly.',
  cook: 'Try a quick stir fry with garlic and onion.',
  tip: 'Start small and do a little every day.',
  summarise: 'In short, the plans changed at the last minute.',
  recommend: 'Try something calm, with a cup of tea.',
  gift: 'A warm scarf or a good book is a safe bet.',
  poem: 'Soft light falls and the quiet world waits.',
  howto: 'Go slowly, one careful step at a time.',
  plan: 'Leave at ten, pack a lunch, be home by four.',
  explain: 'Put simply, it is cause and effect over time.',
};

/** The phrases of the translate templates, in French and Spanish. */
const TRANSLATIONS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'translate-fr': {
    'good morning': 'bonjour',
    'thank you': 'merci',
    'see you soon': 'à bientôt',
    'where is the station': 'où est la gare',
    'I like tea': "j'aime le thé",
    'good night': 'bonne nuit',
  },
  'translate-es': {
    'good morning': 'buenos días',
    'thank you': 'gracias',
    'see you soon': 'hasta pronto',
    'where is the station': 'dónde está la estación',
    'I like tea': 'me gusta el té',
    'good night': 'buenas noches',
  },
};

const LANGUAGE: Readonly<Record<string, string>> = { 'translate-fr': 'French', 'translate-es': 'Spanish' };

/** The base policy's answer to a request of the built-in pool (no preference applied). */
export function baseAnswer(request: UserRequest): string {
  const fixed = TEMPLATE_ANSWERS[request.template];
  if (fixed) return fixed;
  const table = TRANSLATIONS[request.template];
  if (table) {
    const phrase = /"([^"]*)"/.exec(request.text)?.[1] ?? '';
    const said = table[phrase];
    if (said) return `In ${LANGUAGE[request.template]} that is "${said}".`;
  }
  throw new ConfigError(
    `no base answer for request ${JSON.stringify(request.text)} (template ${request.template})`,
    { fields: { param: 'request', template: request.template } },
  );
}

/** `answer` as a reply that follows `preference` (a name: "Ann, how about Milo? …"). */
export function preferredAnswer(preference: Preference, answer: string): string {
  if (preference.spec.kind === 'name') {
    // "Ann, how about …": the answer's opening word is no longer the sentence's first.
    const rest = /^I\b/.test(answer) ? answer : `${answer[0].toLowerCase()}${answer.slice(1)}`;
    return `${preference.spec.name}, ${rest}`;
  }
  throw new ConfigError(`hinted base chats cover the name preference only, not ${preference.name}`, {
    fields: { param: 'preference' },
  });
}

/** Accepts every reply: the user of the base chats is always happy and moves on. */
const CONTENT_USER: Preference = {
  kind: 'brief',
  spec: { kind: 'brief' },
  name: 'any',
  hint: '',
  corrections: ['(never corrects)'],
  check: () => ({ ok: true, reason: 'any reply' }),
};

function fraction(value: number, name: string): number {
  if (!(value >= 0 && value <= 1)) {
    throw new ConfigError(`base chats ${name} must be in [0, 1], got ${value}`, { fields: { param: name } });
  }
  return value;
}

function positive(value: number, name: string): number {
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(`base chats ${name} must be a positive integer, got ${value}`, {
      fields: { param: name },
    });
  }
  return value;
}

/** The fine-tuning examples of a personal-track base policy (see the file header). */
export function baseChats(options: BaseChatsOptions = {}): BaseChat[] {
  const seed = options.seed ?? 0;
  const sessions = positive(options.sessions ?? 64, 'sessions');
  const turns = positive(options.turnsPerSession ?? 4, 'turnsPerSession');
  const hintShare = fraction(options.hintShare ?? 0.5, 'hintShare');
  const names = options.names ?? HINT_NAMES;
  if (names.length === 0)
    throw new ConfigError('base chats need at least one name', { fields: { param: 'names' } });
  const preferences = names.map((n) => makePreference({ kind: 'name', name: n }));
  const pool = requestsOf('train', requestPool()).filter(
    (r) => !options.templates || options.templates.includes(r.template),
  );
  if (pool.length === 0) {
    throw new ConfigError(`base chats: no train request of templates ${JSON.stringify(options.templates)}`, {
      fields: { param: 'templates' },
    });
  }
  const correctedShare = fraction(options.correctedShare ?? 0, 'correctedShare');
  const heedShare = fraction(options.heedShare ?? 0.3, 'heedShare');
  const userOf = (preference: Preference) =>
    new SimulatedUser({ preference, seed, split: 'train', turnsPerSession: turns, requests: pool });
  const content = userOf(CONTENT_USER);
  const correcting = preferences.map(userOf);
  const rand = seededRandom(Number.parseInt(fnv1a(`base-chats:${seed}`), 16));
  const out: BaseChat[] = [];
  for (let s = 0; s < sessions; s++) {
    // Drawn only when some sessions correct, so a base without them keeps its data.
    const user =
      correctedShare > 0 && rand() < correctedShare
        ? correcting[Math.floor(rand() * correcting.length)]
        : content;
    const session = user.openSession(s);
    session.start();
    let corrected = false;
    while (!session.done) {
      const messages = session.messages;
      const request = session.request;
      const answer = baseAnswer(request);
      const heeds: boolean = corrected && rand() < heedShare;
      const reply: string = heeds ? preferredAnswer(user.preference, answer) : answer;
      out.push({ messages, reply, hint: null, request });
      if (rand() < hintShare) {
        const preference = preferences[Math.floor(rand() * preferences.length)];
        out.push({
          messages: withHint(messages, preference.hint),
          reply: preferredAnswer(preference, answer),
          hint: preference.hint,
          request,
        });
      }
      corrected = session.react(reply).kind === 'correction';
    }
  }
  return out;
}

/** The latest user message with the hint appended, as the OPD teacher's prompt has it. */
export function withHint(messages: readonly ChatMessage[], hint: string): ChatMessage[] {
  const out = messages.map((m) => ({ ...m }));
  const last = out.findLastIndex((m) => m.role === 'user');
  if (last < 0) return [...out, { role: 'user', content: formatHintForUser(hint).trim() }];
  out[last].content = `${out[last].content ?? ''}${formatHintForUser(hint)}`;
  return out;
}
