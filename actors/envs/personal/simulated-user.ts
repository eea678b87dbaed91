/**
 * The personal track's simulated user, after OpenClaw-RL's student/teacher role-plays: a scripted
 * person with one stable preference who asks everyday things and reacts to every reply in the
 * next message. That next message is what OpenClaw-RL's judge reads as the "next state":
 *
 * - the reply met the preference → thanks, and the next request ("Thanks! Next: …"), which an
 *   LLM judge scores +1;
 * - it did not → a correction and a redo request ("Please remember to end with '-- ok'. Try
 *   again."), which the judge prompt explicitly counts against the reply (−1), and from which an
 *   OPD hint judge can extract the preference. After `maxAttempts` misses on one request the
 *   user corrects and moves on, so a session still covers several requests.
 *
 * A session is `turnsPerSession` replies long; the request that carries the last reply is the one
 * a gateway marks with `X-Session-Done`, so the user's reaction to it never reaches the server
 * (its turn is recorded with `next_state` null) but still counts in the score.
 *
 * Sizes: the whole conversation is resent every turn, so messages are kept short. With the
 * default 4 replies per session and replies of up to 48 tokens, prompts of the byte-level tiny
 * preset (1024-token context) measured at most ~500 tokens; every message at its longest would
 * make ~870.
 *
 * Everything a session says is drawn from seeds: the same (seed, split, session index) gives the
 * same requests and the same wording on every run, whichever order sessions are opened in.
 */
import { ConfigError } from '../../../common/errors.js';
import { seededRandom } from '../../../common/random.js';
import type { ChatMessage } from '../environment.js';
import { fnv1a, type Split, splitOf } from '../track.js';
import {
  hasContent,
  makePreference,
  type Preference,
  type PreferenceCheck,
  type PreferenceSpec,
} from './preferences.js';
import { requestPool, requestsOf, type UserRequest } from './requests.js';

export const DEFAULT_TURNS_PER_SESSION = 4;
export const DEFAULT_MAX_ATTEMPTS = 2;
export const DEFAULT_SESSION_PREFIX = 'simuser';

export interface SimulatedUserOptions {
  /** The stable preference: a spec, a kind name, `kind:param`, or a made Preference. */
  preference: Preference | PreferenceSpec | string;
  /** Seeds request order and wording (default 0). */
  seed?: number;
  /** Which requests sessions draw from (default 'train'). */
  split?: Split | 'all';
  /** Agent replies per session (default 4). */
  turnsPerSession?: number;
  /** Replies per request before the user gives up on it and moves on (default 2). */
  maxAttempts?: number;
  /** Requests to ask instead of the built-in pool; strings get an id and split like the pool's. */
  requests?: readonly (string | UserRequest)[];
  /** Session ids are `<prefix>-<seed>-<split>-<index>` (default `simuser`). */
  sessionIdPrefix?: string;
}

export interface Reaction {
  /** What the user says next (sent as the next main request unless `done`). */
  nextMessage: string;
  /** The reply met the preference. */
  satisfied: boolean;
  /** The session is over: this was its last reply. */
  done: boolean;
  /** `follow-up` (thanks, and the next request or a goodbye) or `correction` (redo, or move on). */
  kind: 'follow-up' | 'correction';
  /** The check's reason ("does not end with '-- ok'"). */
  reason: string;
  /** The request the next message asks for; null once done. */
  request: UserRequest | null;
}

/** One agent reply and how the user took it. */
export interface TurnOutcome {
  /** 0-based reply index within the session. */
  turn: number;
  request: UserRequest;
  /** 1 for the first reply to this request, 2 after one correction, … */
  attempt: number;
  reply: string;
  satisfied: boolean;
  reason: string;
  reaction: string;
}

const PRAISE = [
  'Thanks!',
  'Perfect, thank you.',
  "Great, that's how I like it.",
  'Nice, thanks.',
  'Good, thank you.',
  'Lovely, thanks.',
];
const NEXT = ['Next: ', 'Now: ', 'Another one: ', 'Next question: '];
const REDO = ['Please redo it.', 'Try again.', 'Can you redo that?', 'Once more, please.', 'Fix it, please.'];
const SKIP = ['Never mind this one.', "Let's move on.", 'Forget that one.'];
const BYE_HAPPY = ["That's all for now.", "That's everything for today.", 'Bye for now!'];
const BYE_UNHAPPY = [
  'Remember that next time.',
  'Keep it in mind next time.',
  'Please remember for next time.',
];
/** Said before the correction when a reply holds no words at all. */
export const EMPTY_REPLY_REMARK = "That wasn't an answer.";

/** Every follow-up opener the user may use: what a judge reading the next state sees as praise. */
export const PRAISE_PHRASES: readonly string[] = PRAISE;

function positiveInt(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) {
    throw new ConfigError(`simulated user ${name} must be a positive integer, got ${value}`, {
      fields: { param: name },
    });
  }
  return value;
}

function toRequest(r: string | UserRequest): UserRequest {
  if (typeof r !== 'string') return r;
  return { id: `custom-${fnv1a(r)}`, template: 'custom', text: r, split: splitOf(r) };
}

/** A 32-bit seed for one purpose of one session, independent of every other session's. */
function subSeed(seed: number, ...parts: (string | number)[]): number {
  return Number.parseInt(fnv1a(`${seed >>> 0}:${parts.join(':')}`), 16);
}

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)];
}

export class SimulatedUser {
  readonly preference: Preference;
  readonly seed: number;
  readonly split: Split | 'all';
  readonly turnsPerSession: number;
  readonly maxAttempts: number;
  readonly sessionIdPrefix: string;
  /** The requests sessions draw from (this user's split), in the seeded order they are asked. */
  readonly requests: readonly UserRequest[];
  private readonly options: SimulatedUserOptions;
  private nextIndex = 0;
  private currentSession?: UserSession;

  constructor(options: SimulatedUserOptions) {
    this.options = options;
    this.preference =
      typeof options.preference === 'object' && 'check' in options.preference
        ? options.preference
        : makePreference(options.preference);
    this.seed = options.seed ?? 0;
    if (!Number.isInteger(this.seed)) {
      throw new ConfigError(`simulated user seed must be an integer, got ${this.seed}`, {
        fields: { param: 'seed' },
      });
    }
    this.split = options.split ?? 'train';
    if (this.split !== 'train' && this.split !== 'heldout' && this.split !== 'all') {
      throw new ConfigError(`simulated user split must be train, heldout or all, got ${String(this.split)}`, {
        fields: { param: 'split' },
      });
    }
    this.turnsPerSession = positiveInt(options.turnsPerSession, 'turnsPerSession', DEFAULT_TURNS_PER_SESSION);
    this.maxAttempts = positiveInt(options.maxAttempts, 'maxAttempts', DEFAULT_MAX_ATTEMPTS);
    this.sessionIdPrefix = options.sessionIdPrefix ?? DEFAULT_SESSION_PREFIX;
    const pool = options.requests ? options.requests.map(toRequest) : requestPool();
    const chosen = requestsOf(this.split, pool);
    if (chosen.length === 0) {
      throw new ConfigError(`the simulated user has no ${this.split} requests to ask`, {
        fields: { param: 'requests' },
      });
    }
    // Seeded Fisher-Yates: consecutive sessions walk the pool, so n sessions cover it evenly.
    const rand = seededRandom(subSeed(this.seed, 'order', this.split));
    for (let i = chosen.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [chosen[i], chosen[j]] = [chosen[j], chosen[i]];
    }
    this.requests = Object.freeze(chosen);
  }

  /** The same user (preference, seed, settings) asking from another split. */
  withSplit(split: Split | 'all'): SimulatedUser {
    return new SimulatedUser({ ...this.options, preference: this.preference, split });
  }

  /**
   * A new, independent session: number `index`, or the next unused number. Sessions with the
   * same number are identical scripts (same requests, same wording).
   */
  openSession(index?: number): UserSession {
    const n = index ?? this.nextIndex;
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`session index must be >= 0, got ${n}`);
    this.nextIndex = Math.max(this.nextIndex, n + 1);
    const k = this.turnsPerSession;
    // A session asks at most one new request per reply, so K requests are always enough.
    const requests = Array.from({ length: k }, (_, i) => this.requests[(n * k + i) % this.requests.length]);
    return new UserSession({
      id: `${this.sessionIdPrefix}-${this.seed}-${this.split}-${n}`,
      index: n,
      preference: this.preference,
      requests,
      turnsPerSession: k,
      maxAttempts: this.maxAttempts,
      rand: seededRandom(subSeed(this.seed, 'wording', this.split, n)),
    });
  }

  /** Opens the next session as the current one and returns its first message. */
  start(): string {
    this.currentSession = this.openSession();
    return this.currentSession.start();
  }

  /** The current session's reaction to the agent's reply (see `UserSession.react`). */
  react(reply: string): Reaction {
    if (!this.currentSession) throw new Error('SimulatedUser.react() before start()');
    return this.currentSession.react(reply);
  }

  /** The session `start()` opened last. */
  get current(): UserSession | undefined {
    return this.currentSession;
  }
}

interface SessionInit {
  id: string;
  index: number;
  preference: Preference;
  requests: UserRequest[];
  turnsPerSession: number;
  maxAttempts: number;
  rand: () => number;
}

/** One conversation of the simulated user: `start()`, then `react(reply)` until `done`. */
export class UserSession {
  /** The `X-Session-Id` of this conversation. */
  readonly id: string;
  readonly index: number;
  readonly preference: Preference;
  readonly turnsPerSession: number;
  private readonly maxAttempts: number;
  private readonly requests: UserRequest[];
  private readonly rand: () => number;
  private readonly history: ChatMessage[] = [];
  private readonly outcomes: TurnOutcome[] = [];
  private requestIndex = 0;
  private attempt = 1;
  private started = false;
  private finished = false;

  constructor(init: SessionInit) {
    this.id = init.id;
    this.index = init.index;
    this.preference = init.preference;
    this.turnsPerSession = init.turnsPerSession;
    this.maxAttempts = init.maxAttempts;
    this.requests = init.requests;
    this.rand = init.rand;
  }

  /** The first user message: the first request, as it is. */
  start(): string {
    if (this.started) throw new Error(`session ${this.id} has already started`);
    this.started = true;
    const text = this.requests[0].text;
    this.history.push({ role: 'user', content: text });
    return text;
  }

  /** Reads the agent's reply, scores it against the preference, and says what comes next. */
  react(reply: string): Reaction {
    if (!this.started) throw new Error(`session ${this.id}: react() before start()`);
    if (this.finished) throw new Error(`session ${this.id} is done; open a new session`);
    const check: PreferenceCheck = this.preference.check(reply);
    const request = this.requests[this.requestIndex];
    const turn = this.outcomes.length;
    const attempt = this.attempt;
    const done = turn + 1 >= this.turnsPerSession;
    let next: UserRequest | null = null;
    let message: string;
    if (check.ok) {
      const praise = pick(this.rand, PRAISE);
      if (done) {
        message = `${praise} ${pick(this.rand, BYE_HAPPY)}`;
      } else {
        next = this.advance();
        message = `${praise} ${pick(this.rand, NEXT)}${next.text}`;
      }
    } else {
      let correction = pick(this.rand, this.preference.corrections);
      if (!hasContent(reply)) correction = `${EMPTY_REPLY_REMARK} ${correction}`;
      if (done) {
        message = `${correction} ${pick(this.rand, BYE_UNHAPPY)}`;
      } else if (this.attempt < this.maxAttempts) {
        this.attempt++;
        next = request;
        message = `${correction} ${pick(this.rand, REDO)}`;
      } else {
        next = this.advance();
        message = `${correction} ${pick(this.rand, SKIP)} ${pick(this.rand, NEXT)}${next.text}`;
      }
    }
    this.outcomes.push({
      turn,
      request,
      attempt,
      reply,
      satisfied: check.ok,
      reason: check.reason,
      reaction: message,
    });
    this.history.push({ role: 'assistant', content: reply }, { role: 'user', content: message });
    this.finished = done;
    return {
      nextMessage: message,
      satisfied: check.ok,
      done,
      kind: check.ok ? 'follow-up' : 'correction',
      reason: check.reason,
      request: next,
    };
  }

  /** The conversation so far: user and assistant messages, the latest user message last. */
  get messages(): ChatMessage[] {
    return this.history.map((m) => ({ ...m }));
  }

  get turns(): readonly TurnOutcome[] {
    return this.outcomes;
  }

  get done(): boolean {
    return this.finished;
  }

  get replies(): number {
    return this.outcomes.length;
  }

  get satisfied(): number {
    return this.outcomes.filter((t) => t.satisfied).length;
  }

  /** Share of replies that met the preference (0 before the first reply). */
  get score(): number {
    return this.outcomes.length === 0 ? 0 : this.satisfied / this.outcomes.length;
  }

  /** The request the latest user message asks for. */
  get request(): UserRequest {
    return this.requests[this.requestIndex];
  }

  private advance(): UserRequest {
    this.requestIndex++;
    this.attempt = 1;
    return this.requests[this.requestIndex];
  }
}
